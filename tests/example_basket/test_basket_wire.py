"""The basket server's exact bytes on stdio, from hand-written JSON-RPC lines.

Two server processes, principals ``alice`` and ``bob``: ``tools/list`` must be the
same bytes for both and in every state, and checkout's ``input_required`` round
trip must be exactly what 2026-07-28 says.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

import handles

from .support import MODERN_META, RawServer, raw_server, server_env

pytestmark = pytest.mark.anyio

SERVER_INFO = {
    "io.modelcontextprotocol/serverInfo": {"name": "example-basket", "version": handles.__version__}
}
ELICITING_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "hand-written", "version": "1.0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
TOOLS = [
    "search_catalog",
    "create_basket",
    "add_item",
    "remove_item",
    "get_basket",
    "list_baskets",
    "checkout",
    "close_basket",
]


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def alice() -> AsyncIterator[RawServer]:
    async with raw_server(server_env("alice")) as server:
        yield server


@pytest.fixture(scope="module")
async def bob() -> AsyncIterator[RawServer]:
    async with raw_server(server_env("bob")) as server:
        yield server


async def ok(server: RawServer, id: int, tool: str, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = (await server.call(id, tool, arguments))["result"]
    assert result["isError"] is False, result
    structured: dict[str, Any] = result["structuredContent"]
    return structured


async def tool_lists(server: RawServer) -> list[bytes]:
    """``tools/list`` as each kind of caller asks for it, as the exact response lines."""
    return [
        await server.request("list", "tools/list", {"_meta": MODERN_META}),
        await server.request("list", "tools/list", {"_meta": ELICITING_META}),
        await server.request("list", "tools/list", {}),
    ]


async def test_tools_list_is_the_same_bytes_for_every_caller_in_every_state(
    alice: RawServer, bob: RawServer
) -> None:
    reference = await tool_lists(alice)
    modern, eliciting, legacy = (json.loads(line) for line in reference)
    assert modern == eliciting
    assert [tool["name"] for tool in modern["result"]["tools"]] == TOOLS
    assert {k: v for k, v in modern["result"].items() if k != "tools"} == {
        "ttlMs": 60000,
        "cacheScope": "public",
        "resultType": "complete",
        "_meta": SERVER_INFO,
    }
    assert legacy == {
        "jsonrpc": "2.0",
        "id": "list",
        "result": {"tools": modern["result"]["tools"]},
    }
    assert reference[0].startswith(b'{"jsonrpc":"2.0","id":"list","result":{"tools":[{"name"')

    assert await tool_lists(bob) == reference
    basket_id = (await ok(alice, 1, "create_basket"))["basket_id"]
    assert await tool_lists(alice) == reference
    assert await tool_lists(bob) == reference
    await ok(alice, 2, "add_item", basket_id=basket_id, sku="MUG-24")
    await ok(bob, 3, "create_basket")
    assert await tool_lists(alice) == reference
    assert await tool_lists(bob) == reference
    await ok(alice, 4, "close_basket", basket_id=basket_id)
    assert await tool_lists(alice) == reference
    assert await tool_lists(bob) == reference


async def test_input_required_then_accept_on_the_wire(alice: RawServer) -> None:
    basket_id = (await ok(alice, 10, "create_basket"))["basket_id"]
    await ok(alice, 11, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    arguments = {"basket_id": basket_id}

    await alice.send(
        {
            "jsonrpc": "2.0",
            "id": 12,
            "method": "tools/call",
            "params": {"name": "checkout", "arguments": arguments, "_meta": ELICITING_META},
        }
    )
    assert await alice.line() == dumps(
        {
            "jsonrpc": "2.0",
            "id": 12,
            "result": {
                "resultType": "input_required",
                "inputRequests": {
                    "confirm": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": f"Place the order for basket {basket_id}, total 39.80 EUR?",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "confirm": {"type": "boolean", "title": "Place the order"}
                                },
                                "required": ["confirm"],
                            },
                        },
                    }
                },
                "requestState": "version 2",
                "_meta": SERVER_INFO,
            },
        }
    )

    accept = {"confirm": {"action": "accept", "content": {"confirm": True}}}
    await alice.send(
        {
            "jsonrpc": "2.0",
            "id": 13,
            "method": "tools/call",
            "params": {
                "name": "checkout",
                "arguments": arguments,
                "inputResponses": accept,
                "requestState": "version 2",
                "_meta": ELICITING_META,
            },
        }
    )
    line = await alice.line()
    match = re.search(rb'"order_id":"(ord_[0-9a-f]{12})"', line)
    assert match is not None, line
    order = {
        "order_id": match.group(1).decode(),
        "basket_id": basket_id,
        "items": [{"sku": "MUG-24", "name": "Travel mug", "quantity": 2, "unit_price": 19.9}],
        "total": 39.8,
    }
    assert line == dumps(
        {
            "jsonrpc": "2.0",
            "id": 13,
            "result": {
                "content": [{"type": "text", "text": dumps(order).decode()}],
                "structuredContent": order,
                "isError": False,
                "resultType": "complete",
                "_meta": SERVER_INFO,
            },
        }
    )
    again = await alice.call(14, "get_basket", arguments, _meta=ELICITING_META)
    assert again["result"]["content"][0]["text"].startswith(
        f"Basket '{basket_id}' was checked out at "
    )


def refusal(id: int, text: str, *, modern: bool = True) -> bytes:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if modern:
        result |= {"resultType": "complete", "_meta": SERVER_INFO}
    return dumps({"jsonrpc": "2.0", "id": id, "result": result})


async def test_declined_and_unasked_checkouts_on_the_wire(alice: RawServer) -> None:
    basket_id = (await ok(alice, 20, "create_basket"))["basket_id"]
    shown = await ok(alice, 21, "add_item", basket_id=basket_id, sku="CUP-01", quantity=3)
    arguments = {"basket_id": basket_id}
    not_confirmed = (
        f"The user did not confirm the order, so nothing was ordered; basket {basket_id} "
        "is still open."
    )
    ask_first = (
        "Checkout is irreversible: the order total is 19.50 EUR. Ask the user, "
        "then call checkout again with confirm: true."
    )
    answers: list[dict[str, Any]] = [
        {"action": "decline"},
        {"action": "cancel"},
        {"action": "accept", "content": {"confirm": False}},
        {"action": "accept"},
    ]
    for id, answer in enumerate(answers, start=22):
        params = {
            "name": "checkout",
            "arguments": arguments,
            "inputResponses": {"confirm": answer},
            "_meta": ELICITING_META,
        }
        assert await alice.request(id, "tools/call", params) == refusal(id, not_confirmed)

    no_elicitation = {"name": "checkout", "arguments": arguments, "_meta": MODERN_META}
    assert await alice.request(30, "tools/call", no_elicitation) == refusal(30, ask_first)
    legacy = {"name": "checkout", "arguments": arguments}
    assert await alice.request(31, "tools/call", legacy) == refusal(31, ask_first, modern=False)
    assert await ok(alice, 32, "get_basket", basket_id=basket_id) == shown
