"""Two principals, by bearer token, on ``python -m example_basket --http`` (a real process).

The official ``mcp`` client connects over real sockets in each mode (``auto``,
``legacy``, ``2026-07-28``). bob, holding alice's basket id, can neither read,
change, list, close nor check it out, and every refusal he gets is the text an
invented id gets; alice's basket is unchanged afterwards (its expiry too: bob's
attempts never reach the store). asyncio only (the client's HTTP transport).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from .support import (
    HANDLE_CALLS,
    TOKENS,
    WAIT,
    DemoServer,
    connect,
    demo_server,
    invented_id,
    ok,
    refused,
    unknown,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with demo_server("--tokens", TOKENS, "--store", "memory") as server:
        yield server


@pytest.fixture(params=["auto", "legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def alice(server: DemoServer, mode: str) -> AsyncIterator[Client]:
    async with connect(server.url, "tok-a", mode) as client:
        yield client


@pytest.fixture
async def bob(server: DemoServer, mode: str) -> AsyncIterator[Client]:
    async with connect(server.url, "tok-b", mode) as client:
        yield client


async def listed(client: Client) -> dict[str, dict[str, Any]]:
    """The caller's open baskets, by id."""
    baskets = (await ok(client, "list_baskets"))["baskets"]
    return {basket["basket_id"]: basket for basket in baskets}


async def test_each_mode_negotiates_its_era(alice: Client, bob: Client, mode: str) -> None:
    expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
    assert (alice.protocol_version, bob.protocol_version) == (expected, expected)


async def test_bob_cannot_touch_alices_basket_and_cannot_tell_it_exists(
    alice: Client, bob: Client
) -> None:
    basket_id = (await ok(alice, "create_basket"))["basket_id"]
    await ok(alice, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    shown = await ok(alice, "get_basket", basket_id=basket_id)
    before = await listed(alice)
    bobs = (await ok(bob, "create_basket"))["basket_id"]

    invented = invented_id()
    assert len(invented) == len(basket_id)
    for tool, arguments in HANDLE_CALLS:
        foreign = await refused(bob, tool, basket_id=basket_id, **arguments)
        made_up = await refused(bob, tool, basket_id=invented, **arguments)
        assert foreign.replace(basket_id, "<id>") == made_up.replace(invented, "<id>"), tool
        assert foreign == unknown(basket_id), tool
    assert list(await listed(bob)) == [bobs]

    assert await listed(alice) == before  # same items, same expiry: bob never renewed it
    assert await ok(alice, "get_basket", basket_id=basket_id) == shown
    assert bobs not in await listed(alice)
    assert await refused(alice, "get_basket", basket_id=bobs) == unknown(bobs)

    order = await ok(alice, "checkout", basket_id=basket_id, confirm=True)
    assert (order["basket_id"], order["items"], order["total"]) == (
        basket_id,
        shown["items"],
        shown["total"],
    )
    await ok(bob, "close_basket", basket_id=bobs)


async def test_bob_cannot_close_or_check_out_alices_basket_even_when_she_has_closed_it(
    alice: Client, bob: Client
) -> None:
    """A closed basket of alice's still reads as unknown to bob, never as "closed"."""
    basket_id = (await ok(alice, "create_basket"))["basket_id"]
    await ok(alice, "close_basket", basket_id=basket_id)
    for tool, arguments in HANDLE_CALLS:
        assert await refused(bob, tool, basket_id=basket_id, **arguments) == unknown(basket_id)
    assert (await refused(alice, "get_basket", basket_id=basket_id)).startswith(
        f"Basket '{basket_id}' was closed at "
    )


async def test_a_request_without_a_known_token_is_refused_before_any_tool(
    server: DemoServer,
) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_baskets", "arguments": {}},
    }
    headers = {"accept": "application/json, text/event-stream"}
    metadata = f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        for token in (None, "tok-c", "tok-A"):
            auth = {"authorization": f"Bearer {token}"} if token else {}
            reply = await http.post(server.url, json=call, headers={**headers, **auth})
            assert reply.status_code == 401, token
            assert f'resource_metadata="{metadata}"' in reply.headers["www-authenticate"]
        document = (await http.get(metadata)).json()
    assert document == {"resource": server.url, "bearer_methods_supported": ["header"]}
