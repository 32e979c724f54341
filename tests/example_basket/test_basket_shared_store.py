"""Three basket servers on one real Redis (``--store redis://…``) and one secret.

Two serve ``alice`` (replicas: each sees the other's baskets, and concurrent adds
through both lose nothing), one serves ``bob``: to him, alice's basket reads
exactly like an invented id.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult

from example_basket.app import LEDGER_OWNER, order_ledger
from stores.redis import RedisStore
from tests.redis_fixtures import RedisServer

from .support import HANDLE_CALLS, call, closed, connect, ok, refused, server_params, unknown

pytestmark = [pytest.mark.anyio, pytest.mark.redis]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def clients(redis_server: RedisServer) -> AsyncIterator[tuple[Client, Client, Client]]:
    url = f"{redis_server.url}/9"
    async with (
        connect(server_params("alice", store=url)) as alice,
        connect(server_params("alice", store=url)) as replica,
        connect(server_params("bob", store=url)) as bob,
    ):
        yield alice, replica, bob


async def basket_ids(client: Client) -> set[str]:
    return {basket["basket_id"] for basket in (await ok(client, "list_baskets"))["baskets"]}


async def test_a_replica_sees_and_changes_the_same_basket(
    clients: tuple[Client, Client, Client],
) -> None:
    alice, replica, _ = clients
    basket_id = (await ok(alice, "create_basket"))["basket_id"]
    mugs = await ok(alice, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    assert await ok(replica, "get_basket", basket_id=basket_id) == mugs
    both = await ok(replica, "add_item", basket_id=basket_id, sku="CUP-01")
    assert await ok(alice, "get_basket", basket_id=basket_id) == both
    assert both["total"] == 46.3
    assert basket_id in await basket_ids(replica)

    before = time.time()
    await ok(alice, "close_basket", basket_id=basket_id)
    text = await refused(replica, "get_basket", basket_id=basket_id)
    closed(basket_id, "closed", text, before, time.time())


async def test_a_foreign_basket_reads_exactly_like_an_invented_one(
    clients: tuple[Client, Client, Client],
) -> None:
    alice, _, bob = clients
    basket_id = (await ok(alice, "create_basket"))["basket_id"]
    shown = await ok(alice, "add_item", basket_id=basket_id, sku="MUG-24")
    invented = "bsk_" + "A" * 43
    assert len(invented) == len(basket_id)
    for tool, arguments in HANDLE_CALLS:
        foreign = await refused(bob, tool, basket_id=basket_id, **arguments)
        made_up = await refused(bob, tool, basket_id=invented, **arguments)
        assert foreign == unknown(basket_id)
        assert made_up == unknown(invented)
        assert foreign.replace(basket_id, "<id>") == made_up.replace(invented, "<id>")
    assert basket_id not in await basket_ids(bob)
    assert await ok(alice, "get_basket", basket_id=basket_id) == shown

    bobs = (await ok(bob, "create_basket"))["basket_id"]
    assert await refused(alice, "get_basket", basket_id=bobs) == unknown(bobs)
    assert await ok(bob, "close_basket", basket_id=bobs) == {"basket_id": bobs, "closed": True}
    await ok(alice, "close_basket", basket_id=basket_id)


async def test_concurrent_adds_through_two_processes_lose_nothing(
    clients: tuple[Client, Client, Client],
) -> None:
    alice, replica, _ = clients
    basket_id = (await ok(alice, "create_basket"))["basket_id"]
    failed: list[str] = []

    async def add(client: Client, sku: str) -> None:
        result = await client.call_tool("add_item", {"basket_id": basket_id, "sku": sku})
        if result.is_error:
            failed.append(str(result.content))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for _ in range(25):
                tg.start_soon(add, alice, "MUG-24")
                tg.start_soon(add, replica, "CUP-01")
    assert failed == []
    shown = await ok(replica, "get_basket", basket_id=basket_id)
    assert {item["sku"]: item["quantity"] for item in shown["items"]} == {
        "MUG-24": 25,
        "CUP-01": 25,
    }
    assert shown["total"] == 660.0
    await ok(replica, "close_basket", basket_id=basket_id)


CHECKOUTS = 50


async def test_fifty_concurrent_checkouts_on_two_replicas_place_one_order(
    clients: tuple[Client, Client, Client], redis_server: RedisServer
) -> None:
    """Both replicas check one basket out 25 times at once: one close commits, its
    ``on_commit`` places the one order in the ledger, and every call answers that order
    (the same order id) or says the basket was checked out."""
    alice, replica, _ = clients
    basket_id = (await ok(alice, "create_basket"))["basket_id"]
    await ok(alice, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    results: list[CallToolResult] = []

    async def checkout(client: Client) -> None:
        results.append(await call(client, "checkout", basket_id=basket_id, confirm=True))

    before = time.time()
    async with anyio.create_task_group() as tg:
        for n in range(CHECKOUTS):
            tg.start_soon(checkout, (alice, replica)[n % 2])
    after = time.time()
    orders = [r.structured_content for r in results if not r.is_error]
    texts = [r.content[0].text for r in results if r.is_error]  # type: ignore[union-attr]
    assert len(results) == CHECKOUTS and orders
    order_ids = {order["order_id"] for order in orders if order is not None}
    assert len(order_ids) == 1, order_ids
    assert all(order == orders[0] for order in orders)
    for text in texts:
        closed(basket_id, "checked out", text, before, after)
    text = await refused(replica, "checkout", basket_id=basket_id, confirm=True)
    closed(basket_id, "checked out", text, before, time.time())
    async with RedisStore.from_url(f"{redis_server.url}/9") as store:
        placed = await store.list(LEDGER_OWNER, order_ledger(basket_id))
    assert set(placed) == order_ids
    print(f"\n{CHECKOUTS} checkouts on 2 replicas: {len(placed)} order placed, {len(orders)} calls")
