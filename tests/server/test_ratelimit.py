"""Rate limits per caller and per tool, counted in the store, checked before a tool runs."""

from __future__ import annotations

import re
import uuid
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handles.principal import Principal
from handles.server.dispatch import Connection, Server
from handles.server.jsonrpc import INVALID_PARAMS, ProtocolError
from handles.server.ratelimit import RateLimit, RateLimited, RateLimiter
from handles.server.tools import ToolError
from stores.memory import MemoryStore
from stores.redis import RedisStore
from stores.testing import ManualClock
from tests.handles.support import ALICE, BOB, T0, CountingStore, FailingStore
from tests.redis_fixtures import RedisServer

pytestmark = pytest.mark.anyio

THREE_PER_MINUTE = RateLimit(3, 60)
TOO_MANY = re.compile(
    r"Too many calls: at most 3 calls per minute per caller; try again in (\d+) s\."
)


def limiter(
    limit: RateLimit | None = THREE_PER_MINUTE,
    clock: ManualClock | None = None,
    **per_tool: RateLimit,
) -> tuple[RateLimiter, ManualClock]:
    clock = clock or ManualClock(T0)
    return RateLimiter(MemoryStore(clock=clock), limit, per_tool=per_tool, clock=clock), clock


async def admitted(limiter: RateLimiter, principal: Principal, tool: str, calls: int) -> int:
    count = 0
    for _ in range(calls):
        try:
            await limiter.check(principal, tool)
        except RateLimited:
            continue
        count += 1
    return count


@pytest.mark.parametrize(
    ("limit", "text"),
    [
        (RateLimit(60), "60 calls per minute"),
        (RateLimit(1, 1), "1 call per second"),
        (RateLimit(5, 3600), "5 calls per hour"),
        (RateLimit(100, 86400), "100 calls per day"),
        (RateLimit(5, 10), "5 calls per 10 seconds"),
        (RateLimit(5, 0.5), "5 calls per 0.5 seconds"),
    ],
)
def test_limits_describe_themselves(limit: RateLimit, text: str) -> None:
    assert limit.describe() == text


@pytest.mark.parametrize(("calls", "per"), [(0, 60), (-1, 60), (1, 0), (1, -5), (1, float("nan"))])
def test_nonsense_limits_are_refused(calls: int, per: float) -> None:
    with pytest.raises(ValueError, match="calls >= 1 and per_seconds > 0"):
        RateLimit(calls, per)


async def test_the_call_over_the_limit_is_told_how_long_to_wait() -> None:
    limit, clock = limiter()
    assert await admitted(limit, ALICE, "add_item", 3) == 3
    with pytest.raises(RateLimited) as caught:
        await limit.check(ALICE, "add_item")
    match = TOO_MANY.fullmatch(str(caught.value))
    assert match is not None, str(caught.value)
    assert 1 <= int(match[1]) == caught.value.retry_after <= 60
    clock.advance(caught.value.retry_after)
    assert await admitted(limit, ALICE, "add_item", 4) == 3


async def test_the_wait_counts_down_within_a_window() -> None:
    limit, clock = limiter(RateLimit(1, 60))
    await limit.check(ALICE, "t")
    waits = []
    for _ in range(3):
        with pytest.raises(RateLimited) as caught:
            await limit.check(ALICE, "t")
        waits.append(caught.value.retry_after)
        clock.advance(1)
    assert waits == [waits[0], waits[0] - 1, waits[0] - 2]  # (ALICE's window has time left)


async def test_callers_are_counted_apart() -> None:
    limit, _ = limiter()
    assert await admitted(limit, ALICE, "t", 5) == 3
    assert await admitted(limit, BOB, "t", 5) == 3


async def test_the_limit_spans_all_tools() -> None:
    limit, _ = limiter()
    assert await admitted(limit, ALICE, "a", 2) == 2
    assert await admitted(limit, ALICE, "b", 2) == 1


async def test_a_tool_limit_applies_on_top_of_the_caller_limit() -> None:
    limit, _ = limiter(RateLimit(10, 60), checkout=RateLimit(2, 60))
    with pytest.raises(RateLimited, match="Too many calls to checkout: at most 2 calls per"):
        for _ in range(3):
            await limit.check(ALICE, "checkout")
    assert await admitted(limit, ALICE, "add_item", 10) == 7
    assert limit.limits("checkout") == [RateLimit(10, 60), RateLimit(2, 60)]
    assert limit.limits("add_item") == [RateLimit(10, 60)]


async def test_only_a_tool_limit() -> None:
    limit, _ = limiter(None, checkout=RateLimit(1, 60))
    assert await admitted(limit, ALICE, "add_item", 100) == 100
    assert await admitted(limit, ALICE, "checkout", 3) == 1


async def test_callers_windows_do_not_all_reset_at_once() -> None:
    waits = set()
    for number in range(20):
        limit, _ = limiter(RateLimit(1, 60))
        caller = Principal(f"user-{number}")
        await limit.check(caller, "t")
        with pytest.raises(RateLimited) as caught:
            await limit.check(caller, "t")
        waits.add(caught.value.retry_after)
    assert len(waits) > 5


async def test_an_unreachable_store_refuses_the_call() -> None:
    clock = ManualClock(T0)
    limit = RateLimiter(FailingStore(MemoryStore(clock=clock)), RateLimit(3), clock=clock)
    with pytest.raises(ToolError, match=r"could not check its rate limit .* Retry it in a few"):
        await limit.check(ALICE, "t")


async def test_a_full_store_refuses_the_call_with_its_own_text() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock=clock, max_records=2)
    limit = RateLimiter(store, RateLimit(3), clock=clock)
    await limit.check(ALICE, "t")
    await limit.check(BOB, "t")  # two counters: the store is full
    await limit.check(ALICE, "t")  # a live counter still counts
    with pytest.raises(ToolError) as caught:
        await limit.check(Principal("carol"), "t")
    assert type(caught.value) is ToolError
    assert str(caught.value) == (
        "This call was not run: the server's store is full, so it could not count the call "
        "against its rate limit. This clears when the server frees space."
    )


class BrokenStore(CountingStore):
    """A store whose ``incr`` fails with an exception that is no ``StoreError``."""

    async def incr(self, owner: str, group: str, key: str, *, expires_at: float) -> int:
        raise RuntimeError("a bug in a custom store")


async def test_any_store_failure_is_a_refusal_not_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock(T0)
    store = BrokenStore(MemoryStore(clock=clock))
    server = Server("t", "1", rate_limit=RateLimiter(store, RateLimit(3), clock=clock))

    @server.tool()
    async def echo(text: str) -> str:
        return text

    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}},
    }
    response = await server.handle(message, Connection(ALICE, "legacy"))
    assert response is not None and "error" not in response
    assert response["result"]["isError"] is True
    assert "could not check its rate limit" in response["result"]["content"][0]["text"]
    assert "a bug in a custom store" in caplog.text  # logged for the operator, not sent


async def test_replicas_sharing_a_store_share_the_count() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock=clock)
    replicas = [RateLimiter(store, RateLimit(10), clock=clock) for _ in range(3)]
    admitted_calls = 0

    async def call(replica: RateLimiter) -> None:
        nonlocal admitted_calls
        try:
            await replica.check(ALICE, "t")
        except RateLimited:
            return
        admitted_calls += 1

    async with anyio.create_task_group() as tg:
        for number in range(30):
            tg.start_soon(call, replicas[number % 3])
    assert admitted_calls == 10


@pytest.mark.redis
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # redis.asyncio runs on asyncio only
async def test_replicas_on_one_redis_share_the_count(redis_server: RedisServer) -> None:
    namespace, clock = f"limit-{uuid.uuid4().hex}", ManualClock(T0)
    url = redis_server.url
    stores = [RedisStore.from_url(url, namespace=namespace, clock=clock) for _ in range(2)]
    replicas = [RateLimiter(store, RateLimit(25), clock=clock) for store in stores]
    outcomes: list[bool] = []

    async def call(replica: RateLimiter) -> None:
        try:
            await replica.check(ALICE, "t")
        except RateLimited:
            outcomes.append(False)
        else:
            outcomes.append(True)

    try:
        async with anyio.create_task_group() as tg:
            for number in range(100):
                tg.start_soon(call, replicas[number % 2])
    finally:
        for store in stores:
            await store.aclose()
    assert outcomes.count(True) == 25


@settings(deadline=None, max_examples=50)
@given(
    calls=st.integers(1, 5),
    gaps=st.lists(st.floats(0, 30, allow_nan=False), min_size=1, max_size=40),
)
def test_no_window_admits_more_than_the_limit(calls: int, gaps: list[float]) -> None:
    """Fixed windows: at most ``calls`` per window, so at most twice that per minute."""
    times: list[float] = []

    async def run() -> None:
        limit, clock = limiter(RateLimit(calls, 60))
        for gap in gaps:
            clock.advance(gap)
            try:
                await limit.check(ALICE, "t")
            except RateLimited as refused:
                assert 1 <= refused.retry_after <= 60
                continue
            times.append(clock())

    anyio.run(run)
    for start in times:
        assert sum(1 for t in times if start <= t < start + 60) <= 2 * calls


# Through the server: refused before the tool runs, as an isError result.


def counting_server(limit: RateLimiter | None) -> tuple[Server, list[str]]:
    runs: list[str] = []
    server = Server("limited", rate_limit=limit)

    @server.tool
    def ping(word: str = "hi") -> str:
        """Echo a word."""
        runs.append(word)
        return word

    return server, runs


async def call(server: Server, id: int, arguments: dict[str, Any] | None = None) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "ping", "arguments": arguments or {}},
    }
    response = await server.handle(message, Connection(ALICE, "legacy"))
    assert response is not None
    return response["result"]


async def test_the_server_refuses_before_the_tool_runs() -> None:
    server, runs = counting_server(limiter()[0])
    results = [await call(server, id) for id in range(5)]
    assert runs == ["hi"] * 3
    assert [r["isError"] for r in results] == [False] * 3 + [True] * 2
    assert TOO_MANY.fullmatch(results[3]["content"][0]["text"])


async def test_invalid_arguments_count_too() -> None:
    server, runs = counting_server(limiter()[0])
    for id in range(3):
        assert (await call(server, id, {"word": 5}))["isError"]
    refused = await call(server, 9)
    assert TOO_MANY.fullmatch(refused["content"][0]["text"]) and runs == []


async def test_without_a_limiter_the_store_is_never_asked() -> None:
    store = CountingStore(MemoryStore())
    server, runs = counting_server(None)
    for id in range(3):
        await call(server, id)
    assert runs == ["hi"] * 3 and not store.calls


async def test_refusals_are_logged_without_the_whole_principal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, _ = counting_server(limiter(RateLimit(1))[0])
    with caplog.at_level("INFO", logger="handles.server"):
        await call(server, 1)
        await call(server, 2)
    refused = [r.getMessage() for r in caplog.records if "outcome=refused" in r.getMessage()]
    assert refused == [
        f"tools/call ping principal={ALICE.digest[:12]} outcome=refused (RateLimited)"
    ]


# A tool marked store-first (``Tool.store_first``) on the limiter's store: the count is
# left for its first store operation; one that never makes it is counted after.


def store_first_server(error: bool) -> tuple[Server, list[str]]:
    limit, _ = limiter(RateLimit(1))
    server, runs = counting_server(limit)
    tool = server.get_tool("ping")
    assert tool is not None
    tool.store_first = limit.store
    if error:

        def refuse(word: str = "hi") -> str:
            runs.append(word)
            raise ProtocolError(INVALID_PARAMS, "no")

        tool.fn = refuse
    return server, runs


async def test_a_store_first_tool_that_never_reaches_the_store_is_counted_after() -> None:
    server, runs = store_first_server(error=False)
    assert not (await call(server, 1))["isError"]
    refused = await call(server, 2)
    assert runs == ["hi", "hi"]  # ran, then counted: over the limit, its answer replaced
    assert re.fullmatch(
        r"Too many calls: at most 1 call per minute per caller; .*", refused["content"][0]["text"]
    )


async def test_a_store_first_tool_that_raises_a_protocol_error_is_counted_too() -> None:
    server, _ = store_first_server(error=True)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping"}}
    first = await server.handle(message, Connection(ALICE, "legacy"))
    assert first is not None and first["error"]["message"] == "no"
    refused = await call(server, 2)
    assert refused["isError"] and "Too many calls" in refused["content"][0]["text"]
