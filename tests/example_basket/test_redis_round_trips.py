"""Round trips to Redis per basket tool call, counted on a real redis-server.

Issue 17's budget: 1 per ``add_item`` when this replica holds the basket's latest
version (a compare-and-set, no read first), 2 when it does not (read, then
compare-and-set, or a refused compare-and-set that answers with the latest, then
another); 1 per ``get_basket`` (read with renewal). Counted twice, independently:
requests written by the client's connections, and ``EVALSHA`` calls in the
server's commandstats; on both of a ``RedisStore``'s paths (redis-py's client, and
its own connection, which the demo uses). Two servers on one store stand for two
replicas: each has its own manager, so its own memory of versions.

With a rate limiter counting in the same store, the count rides in the tool's own
script: still 1 for a warm ``add_item`` and for ``get_basket`` (it was 2 when the
limiter counted first, as it still does for a limiter on another store).
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from example_basket.app import build_server
from handles import Principal, RateLimit, RateLimiter, Server
from handles.server.dispatch import Connection
from stores.redis import RedisStore
from tests.redis_fixtures import STORE_PATHS, CountingConnection, RedisServer, counting_store

pytestmark = pytest.mark.anyio

SECRET = "round-trip-test-secret-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


class Clock:
    """The store's clock: real time, moved forward on demand (Redis's expiry follows it)."""

    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.time() + self.shift


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=STORE_PATHS)
async def store(
    request: pytest.FixtureRequest,
    redis_server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
    clock: Clock,
) -> AsyncIterator[RedisStore]:
    namespace = f"trips-{uuid.uuid4().hex[:8]}"
    async with counting_store(
        redis_server.url, request.param, monkeypatch, namespace=namespace, clock=clock
    ) as store:
        yield store


class Caller:
    """Calls one replica's tools and counts the round trips of each call."""

    def __init__(
        self, store: RedisStore, redis_server: RedisServer, limiter: RateLimiter | None = None
    ) -> None:
        self.server: Server = build_server(store, secret_keys=[SECRET])
        self.server.rate_limit = limiter
        self.redis = redis_server.client()
        self.connection = Connection(Principal("trips"))
        self.ids = 0

    async def call(self, tool: str, **arguments: Any) -> tuple[dict[str, Any], tuple[int, int]]:
        """The tool's structured result, and (requests sent, EVALSHA calls) for it."""
        result, trips = await self.answer(tool, **arguments)
        assert not result["isError"], result["content"]
        return result["structuredContent"], trips

    async def fails(self, tool: str, **arguments: Any) -> tuple[str, tuple[int, int]]:
        """The tool's error text, and the round trips for it."""
        result, trips = await self.answer(tool, **arguments)
        assert result["isError"], result
        return result["content"][0]["text"], trips

    async def answer(self, tool: str, **arguments: Any) -> tuple[dict[str, Any], tuple[int, int]]:
        self.ids += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        sent, evalsha = CountingConnection.sent, self._evalsha()
        response = await self.server.handle(message, self.connection)
        trips = CountingConnection.sent - sent, self._evalsha() - evalsha
        assert response is not None
        return response["result"], trips

    async def warm_up(self) -> None:
        """Load every script the tests use (a first call is EVALSHA, NOSCRIPT, EVAL)."""
        basket_id = (await self.call("create_basket"))[0]["basket_id"]
        await self.call("add_item", basket_id=basket_id, sku="MUG-24")
        await self.call("get_basket", basket_id=basket_id)
        await self.call("close_basket", basket_id=basket_id)

    def _evalsha(self) -> int:
        stats = self.redis.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {"calls": 0})["calls"])


def items(view: dict[str, Any]) -> dict[str, int]:
    return {line["sku"]: line["quantity"] for line in view["items"]}


@pytest.fixture
async def replicas(store: RedisStore, redis_server: RedisServer) -> tuple[Caller, Caller]:
    a, b = Caller(store, redis_server), Caller(store, redis_server)
    await a.warm_up()
    return a, b


async def test_add_item_takes_one_round_trip_warm_two_cold_and_get_basket_one(
    replicas: tuple[Caller, Caller],
) -> None:
    a, b = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    for sku in ("MUG-24", "CUP-01", "MUG-24"):
        _, trips = await a.call("add_item", basket_id=basket_id, sku=sku)
        assert trips == (1, 1), sku  # a created it and wrote it last: no read first
    view, trips = await a.call("get_basket", basket_id=basket_id)
    assert trips == (1, 1)
    assert items(view) == {"MUG-24": 2, "CUP-01": 1}
    view, trips = await b.call("add_item", basket_id=basket_id, sku="CUP-02")
    assert trips == (2, 2)  # b never saw this basket: read, then compare-and-set
    assert items(view) == {"MUG-24": 2, "CUP-01": 1, "CUP-02": 1}
    _, trips = await b.call("add_item", basket_id=basket_id, sku="CUP-02")
    assert trips == (1, 1)  # now b holds the latest


async def test_a_get_basket_makes_the_next_edit_warm(replicas: tuple[Caller, Caller]) -> None:
    a, b = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    _, trips = await b.call("get_basket", basket_id=basket_id)
    assert trips == (1, 1)
    _, trips = await b.call("add_item", basket_id=basket_id, sku="MUG-24")
    assert trips == (1, 1)


async def test_a_stale_memory_costs_one_more_round_trip_and_loses_nothing(
    replicas: tuple[Caller, Caller],
) -> None:
    a, b = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    await b.call("add_item", basket_id=basket_id, sku="CUP-01")  # a's version is now old
    view, trips = await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    # A refused compare-and-set that answered with b's version, then one on it.
    assert trips == (2, 2)
    assert items(view) == {"MUG-24": 2, "CUP-01": 1}  # b's edit is in what the model sees
    _, trips = await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    assert trips == (1, 1)
    view, _ = await b.call("get_basket", basket_id=basket_id)
    assert items(view) == {"MUG-24": 3, "CUP-01": 1}


async def test_an_edit_refused_on_a_stale_memory_asks_the_store(
    replicas: tuple[Caller, Caller],
) -> None:
    a, b = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    await b.call("add_item", basket_id=basket_id, sku="CUP-01")
    # On a's remembered state there is no CUP-01 to remove; on the store's there is.
    view, trips = await a.call("remove_item", basket_id=basket_id, sku="CUP-01")
    assert trips == (2, 2)
    assert items(view) == {"MUG-24": 1}
    text, _ = await a.fails("remove_item", basket_id=basket_id, sku="CUP-01")
    assert "has no 'CUP-01'" in text


async def test_a_close_elsewhere_is_reported_from_a_warm_memory(
    replicas: tuple[Caller, Caller],
) -> None:
    a, b = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    await b.call("close_basket", basket_id=basket_id)
    text, trips = await a.fails("add_item", basket_id=basket_id, sku="MUG-24")
    assert "was closed" in text
    assert trips == (2, 2)  # the refused compare-and-set, then the tombstone
    text, _ = await a.fails("get_basket", basket_id=basket_id)
    assert "was closed" in text


async def test_an_expiry_is_reported_from_a_warm_memory(
    replicas: tuple[Caller, Caller], clock: Clock
) -> None:
    a, _ = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    clock.shift = 1801.0  # past the idle timeout, for Redis
    text, trips = await a.fails("add_item", basket_id=basket_id, sku="MUG-24")
    assert "expired" in text
    assert trips == (2, 2)
    clock.shift = 0.0  # the record stays gone: the refused edit renewed nothing
    text, _ = await a.fails("get_basket", basket_id=basket_id)
    assert "expired" in text


async def test_concurrent_edits_from_two_replicas_lose_nothing(
    replicas: tuple[Caller, Caller],
) -> None:
    a, b = replicas
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    await b.call("get_basket", basket_id=basket_id)  # both start warm

    async def add(caller: Caller) -> None:
        await caller.call("add_item", basket_id=basket_id, sku="MUG-24")

    sent = CountingConnection.sent
    async with anyio.create_task_group() as tasks:
        for number in range(50):
            tasks.start_soon(add, a if number % 2 else b)
    view, _ = await a.call("get_basket", basket_id=basket_id)
    assert items(view) == {"MUG-24": 50}
    assert CountingConnection.sent - sent > 51  # the replicas did race: some were refused


# With a rate limiter. Its clock stands at the start of a fresh day-long window, so
# no window ends during a test (the store's expiries follow the real clock).

CALLER = Principal("trips")


def fresh_window(limit: RateLimit) -> float:
    """The first instant of ``CALLER``'s next window of ``limit`` (as ``RateLimiter`` cuts it)."""
    per = limit.per_seconds
    offset = int(CALLER.digest[:8], 16) % 1_000_000 / 1_000_000 * per
    return (math.floor((time.time() + offset) / per) + 1) * per - offset + 1e-3


def limiter(store: RedisStore, limit: RateLimit | None, **per_tool: RateLimit) -> RateLimiter:
    now = fresh_window(limit or next(iter(per_tool.values())))
    return RateLimiter(store, limit, per_tool=per_tool, clock=lambda: now)


DAY = 86400.0


async def test_with_a_rate_limit_add_item_and_get_basket_still_take_one_round_trip(
    store: RedisStore, redis_server: RedisServer
) -> None:
    a = Caller(store, redis_server, limiter(store, RateLimit(1000, DAY)))
    await a.warm_up()
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    for sku in ("MUG-24", "CUP-01", "MUG-24"):
        _, trips = await a.call("add_item", basket_id=basket_id, sku=sku)
        assert trips == (1, 1), sku  # the count and the compare-and-set, one script
    view, trips = await a.call("get_basket", basket_id=basket_id)
    assert trips == (1, 1)
    assert items(view) == {"MUG-24": 2, "CUP-01": 1}
    _, trips = await a.call("create_basket")
    assert trips == (2, 2)  # not a store-first tool (its handler runs first): counted apart


async def test_a_limiter_on_another_store_costs_its_own_round_trip(
    store: RedisStore, redis_server: RedisServer
) -> None:
    other = RedisStore.from_url(redis_server.url, namespace=store.namespace)
    try:
        a = Caller(store, redis_server, limiter(other, RateLimit(1000, DAY)))
        await a.warm_up()
        basket_id = (await a.call("create_basket"))[0]["basket_id"]
        await a.call("add_item", basket_id=basket_id, sku="MUG-24")
        evalsha = a._evalsha()
        await a.call("add_item", basket_id=basket_id, sku="MUG-24")
        assert a._evalsha() - evalsha == 2  # what Redis ran: the count, then the edit
    finally:
        await other.aclose()


TOO_MANY = re.compile(r"Too many calls: at most 3 calls per day per caller; try again in \d+ s\.")


async def test_the_call_past_the_limit_is_refused_in_its_one_round_trip_and_changes_nothing(
    store: RedisStore, redis_server: RedisServer
) -> None:
    reader = Caller(store, redis_server)  # no limit: reads the basket as stored
    await reader.warm_up()
    a = Caller(store, redis_server, limiter(store, RateLimit(3, DAY)))
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    text, trips = await a.fails("add_item", basket_id=basket_id, sku="CUP-01")
    assert TOO_MANY.fullmatch(text)
    assert trips == (1, 1)  # refused inside the compare-and-set's script
    text, trips = await a.fails("get_basket", basket_id=basket_id)
    assert TOO_MANY.fullmatch(text) and trips == (1, 1)
    view, _ = await reader.call("get_basket", basket_id=basket_id)
    assert items(view) == {"MUG-24": 2}  # the refused edit was not applied


async def test_a_tool_limit_is_counted_in_the_same_script(
    store: RedisStore, redis_server: RedisServer
) -> None:
    a = Caller(
        store, redis_server, limiter(store, RateLimit(1000, DAY), add_item=RateLimit(2, DAY))
    )
    await a.warm_up()  # one add_item
    basket_id = (await a.call("create_basket"))[0]["basket_id"]
    _, trips = await a.call("add_item", basket_id=basket_id, sku="MUG-24")
    assert trips == (1, 1)  # two counters and the edit, one script
    text, trips = await a.fails("add_item", basket_id=basket_id, sku="CUP-01")
    assert re.fullmatch(
        r"Too many calls to add_item: at most 2 calls per day per caller; try again in \d+ s\.",
        text,
    )
    assert trips == (1, 1)
    view, trips = await a.call("get_basket", basket_id=basket_id)
    assert items(view) == {"MUG-24": 1} and trips == (1, 1)
