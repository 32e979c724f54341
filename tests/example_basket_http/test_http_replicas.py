"""Replicas: ``python -m example_basket --http`` twice, on one real Redis and one secret.

What a load balancer in front of several replicas needs: a basket made through
one replica works through the other, concurrent changes through both lose
nothing, and a basket outlives the replica that made it. The official ``mcp``
client talks to both over real sockets, with the bearer token of its principal
(``BASKET_TOKENS``); asyncio only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from mcp import Client

from tests.redis_fixtures import RedisServer

from .support import TOKENS, DemoServer, connect, demo_server, ok, refused, unknown

pytestmark = [pytest.mark.anyio, pytest.mark.redis]
ADDS = 32
"""Concurrent add_item calls per replica."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def store_url(redis_server: RedisServer) -> str:
    """A database of the session's redis-server that no other test module uses."""
    return f"{redis_server.url}/12"


@pytest.fixture(scope="module")
def replicas(store_url: str) -> Iterator[tuple[DemoServer, DemoServer]]:
    env = {"BASKET_TOKENS": TOKENS, "BASKET_STORE": store_url}
    with demo_server(env=env) as a, demo_server(env=env) as b:
        yield a, b


@pytest.fixture
async def clients(
    replicas: tuple[DemoServer, DemoServer],
) -> AsyncIterator[tuple[Client, Client, Client]]:
    """alice on A (legacy era), alice on B (2026-07-28), bob on B."""
    a, b = replicas
    async with (
        connect(a.url, "tok-a", "legacy") as alice_a,
        connect(b.url, "tok-a", "2026-07-28") as alice_b,
        connect(b.url, "tok-b") as bob_b,
    ):
        yield alice_a, alice_b, bob_b


async def test_a_basket_made_through_one_replica_is_used_through_the_other(
    clients: tuple[Client, Client, Client],
) -> None:
    alice_a, alice_b, bob_b = clients
    basket_id = (await ok(alice_a, "create_basket"))["basket_id"]
    mugs = await ok(alice_b, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    assert await ok(alice_a, "get_basket", basket_id=basket_id) == mugs
    listed = (await ok(alice_b, "list_baskets"))["baskets"]
    assert [(b["basket_id"], b["item_count"]) for b in listed] == [(basket_id, 2)]
    assert await refused(bob_b, "get_basket", basket_id=basket_id) == unknown(basket_id)

    await ok(alice_b, "close_basket", basket_id=basket_id)
    text = await refused(alice_a, "add_item", basket_id=basket_id, sku="MUG-24")
    assert text.startswith(f"Basket '{basket_id}' was closed at "), text


async def test_concurrent_adds_through_both_replicas_lose_nothing(
    clients: tuple[Client, Client, Client],
) -> None:
    alice_a, alice_b, _ = clients
    basket_id = (await ok(alice_a, "create_basket"))["basket_id"]
    failed: list[str] = []

    async def add(client: Client) -> None:
        result = await client.call_tool("add_item", {"basket_id": basket_id, "sku": "MUG-24"})
        if result.is_error:
            failed.append(str(result.content))

    with anyio.fail_after(45):
        async with anyio.create_task_group() as tg:
            for _ in range(ADDS):
                tg.start_soon(add, alice_a)
                tg.start_soon(add, alice_b)
    assert failed == []
    shown = await ok(alice_a, "get_basket", basket_id=basket_id)
    assert [(line["sku"], line["quantity"]) for line in shown["items"]] == [("MUG-24", 2 * ADDS)]
    assert shown == await ok(alice_b, "get_basket", basket_id=basket_id)
    await ok(alice_b, "close_basket", basket_id=basket_id)


async def test_a_basket_outlives_the_replica_that_made_it(
    store_url: str, replicas: tuple[DemoServer, DemoServer]
) -> None:
    _, b = replicas
    env = {"BASKET_TOKENS": TOKENS, "BASKET_STORE": store_url}
    with demo_server(env=env) as doomed:
        async with connect(doomed.url, "tok-a") as alice_doomed:
            basket_id = (await ok(alice_doomed, "create_basket"))["basket_id"]
            made = await ok(alice_doomed, "add_item", basket_id=basket_id, sku="CUP-01")
        doomed.stop()  # SIGTERM: uvicorn shuts down, then exits by the signal
        assert doomed.process.returncode is not None

    async with connect(b.url, "tok-a") as alice_b:
        assert await ok(alice_b, "get_basket", basket_id=basket_id) == made
        both = await ok(alice_b, "add_item", basket_id=basket_id, sku="MUG-24")
        assert [line["sku"] for line in both["items"]] == ["CUP-01", "MUG-24"]
        order = await ok(alice_b, "checkout", basket_id=basket_id, confirm=True)
    assert (order["items"], order["total"]) == (both["items"], both["total"])
