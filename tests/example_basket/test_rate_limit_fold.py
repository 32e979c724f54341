"""The rate limit folded into a handle tool's first store operation, on a ``MemoryStore``.

With the limiter and the handles in one store, ``get_basket`` and ``add_item`` count
their call in their own read or compare-and-set (``Store.count_and_get``,
``Store.count_and_replace_or_read``); everything else counts before it runs. Either
way the same calls are refused, with the same text, and a refused edit changes
nothing. (Round trips on Redis: ``test_redis_round_trips.py``.)
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from example_basket.app import basket_kind, build_server
from handles import HandleManager, RateLimit, RateLimiter, Server
from handles.principal import Principal
from stores.base import Store
from stores.memory import MemoryStore
from tests.handles.support import CountingStore, FailingStore

from .support import SECRET, call_in_process

pytestmark = pytest.mark.anyio
ALICE, BOB = Principal("alice"), Principal("bob")
NOW = time.time()
TOO_MANY = re.compile(
    r"Too many calls: at most 3 calls per minute per caller; try again in \d+ s\."
)


def limited(store: Store, limit: RateLimit | None, **per_tool: RateLimit) -> Server:
    """The basket server over ``store``, its limiter counting there too, on one instant."""
    server = build_server(store, secret_keys=SECRET)
    server.rate_limit = RateLimiter(store, limit, per_tool=per_tool, clock=lambda: NOW)
    return server


async def ok(server: Server, tool: str, principal: Principal = ALICE, **arguments: Any) -> Any:
    result = await call_in_process(server, principal, tool, **arguments)
    assert not result["isError"], result["content"]
    return result["structuredContent"]


async def refused(server: Server, tool: str, **arguments: Any) -> str:
    result = await call_in_process(server, ALICE, tool, **arguments)
    assert result["isError"], result
    text: str = result["content"][0]["text"]
    return text


async def items(store: Store, basket_id: str) -> dict[str, int]:
    """The basket as stored, read by a server without a limit."""
    view = await ok(build_server(store, secret_keys=SECRET), "get_basket", basket_id=basket_id)
    return {line["sku"]: line["quantity"] for line in view["items"]}


def counted(store: MemoryStore) -> list[int]:
    """The rate-limit counters' counts, as the store holds them."""
    records = store._records.items()
    return sorted(r.version for (_, group, _), r in records if group == "rate-limit")


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore(clock=lambda: NOW)


async def test_the_call_past_the_limit_is_refused_and_its_edit_not_applied(
    store: MemoryStore,
) -> None:
    server = limited(store, RateLimit(3, 60))
    basket_id = (await ok(server, "create_basket"))["basket_id"]
    await ok(server, "add_item", basket_id=basket_id, sku="MUG-24")
    await ok(server, "get_basket", basket_id=basket_id)
    assert TOO_MANY.fullmatch(await refused(server, "add_item", basket_id=basket_id, sku="CUP-01"))
    assert TOO_MANY.fullmatch(await refused(server, "get_basket", basket_id=basket_id))
    assert await items(store, basket_id) == {"MUG-24": 1}
    assert counted(store) == [5]  # the refused calls count too
    await ok(server, "search_catalog", BOB, query="mug")  # callers are counted apart


async def test_a_tool_limit_refuses_its_own_calls_only(store: MemoryStore) -> None:
    server = limited(store, RateLimit(100, 60), add_item=RateLimit(2, 60))
    basket_id = (await ok(server, "create_basket"))["basket_id"]
    for sku in ("MUG-24", "CUP-01"):
        await ok(server, "add_item", basket_id=basket_id, sku=sku)
    text = await refused(server, "add_item", basket_id=basket_id, sku="CUP-02")
    assert re.fullmatch(
        r"Too many calls to add_item: at most 2 calls per minute per caller; try again in \d+ s\.",
        text,
    )
    await ok(server, "get_basket", basket_id=basket_id)
    assert await items(store, basket_id) == {"MUG-24": 1, "CUP-01": 1}
    assert counted(store) == [3, 5]  # add_item's own counter, and every call's


async def test_calls_that_never_reach_the_store_still_count(store: MemoryStore) -> None:
    server = limited(store, RateLimit(3, 60))
    forged = "bsk_" + "A" * 40
    for _ in range(2):
        assert "Unknown basket" in await refused(server, "get_basket", basket_id=forged)
    assert "Input validation error" in await refused(server, "add_item", basket_id=forged)
    # Over the limit, the refusal replaces the tool's own answer.
    assert TOO_MANY.fullmatch(await refused(server, "get_basket", basket_id=forged))
    assert counted(store) == [4]


async def test_a_limiter_on_another_store_counts_before_the_call() -> None:
    handles = CountingStore(MemoryStore(clock=lambda: NOW))
    counters = MemoryStore(clock=lambda: NOW)  # the limiter's clock: no window ends here
    server = build_server(handles, secret_keys=SECRET)
    server.rate_limit = RateLimiter(counters, RateLimit(2, 60), clock=lambda: NOW)
    basket_id = (await ok(server, "create_basket"))["basket_id"]
    await ok(server, "get_basket", basket_id=basket_id)
    before = dict(handles.calls)
    text = await refused(server, "get_basket", basket_id=basket_id)
    assert text.startswith("Too many calls: at most 2 calls per minute per caller")
    assert handles.calls == before  # refused before the tool ran: the handles untouched


async def test_a_custom_store_counts_in_two_steps(store: MemoryStore) -> None:
    counting = CountingStore(store)  # no count_and_* of its own: the base class's
    server = limited(counting, RateLimit(3, 60))
    basket_id = (await ok(server, "create_basket"))["basket_id"]
    counting.calls.clear()
    await ok(server, "get_basket", basket_id=basket_id)
    # The count (the base class's incr: a get and a replace), then the read.
    assert dict(counting.calls) == {"get": 2, "replace": 1}
    await ok(server, "add_item", basket_id=basket_id, sku="MUG-24")
    assert TOO_MANY.fullmatch(await refused(server, "add_item", basket_id=basket_id, sku="MUG-24"))
    assert await items(store, basket_id) == {"MUG-24": 1}


async def test_an_unreachable_store_refuses_with_the_limiters_text() -> None:
    inner = MemoryStore(clock=lambda: NOW)
    server = limited(FailingStore(inner), RateLimit(3, 60))
    kind = basket_kind()
    handle = await HandleManager(inner, [kind], secret_keys=SECRET).create(ALICE, kind)
    text = await refused(server, "get_basket", basket_id=handle.id)
    assert text == (
        "This call was not run: the server could not check its rate limit just now. "
        "Retry it in a few seconds."
    )


async def test_a_full_store_refuses_with_the_limiters_text() -> None:
    store = MemoryStore(clock=lambda: NOW, max_records=3)
    server = limited(store, RateLimit(3, 60))
    basket_id = (await ok(server, "create_basket"))["basket_id"]  # a counter and a basket
    await store.create("someone", "other", "k", b"v", expires_at=NOW + 60)  # now full
    server.rate_limit = RateLimiter(store, RateLimit(3, 3600), clock=lambda: NOW)  # new counter
    # The edit's first step is its read here (no memory over a MemoryStore): the count
    # is what finds no room, as it was when the limiter counted first. (On Redis, the
    # compare-and-set script is refused whole: the edit's own text, as before too.)
    for tool, arguments in [("get_basket", {}), ("add_item", {"sku": "MUG-24"})]:
        text = await refused(server, tool, basket_id=basket_id, **arguments)
        assert text.startswith("This call was not run: the server's store is full"), tool
    record = await store.get(ALICE.digest, "basket", basket_id)
    assert record is not None and (record.value, record.version) == (b'{"items":{}}', 1)


def test_only_the_reads_edits_and_closes_fold_their_count(store: MemoryStore) -> None:
    server = limited(store, RateLimit(3, 60))
    folding = sorted(tool.name for tool in server.tools if tool.store_first is store)
    assert folding == ["add_item", "checkout", "close_basket", "get_basket", "remove_item"]
