"""``python -m example_basket demo``: a scripted walk-through for a newcomer.

It starts the basket server as a subprocess, drives it with the official MCP
client over stdio, and prints each call and what the model would see, refusals
included.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

__all__ = ["run_demo"]

IDLE_SECONDS = 2


def _say(text: str) -> None:
    print(f"\n# {text}", flush=True)


async def _call(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    print(f"→ {tool} {json.dumps(arguments)}", flush=True)
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        print(f"← isError: {result.content[0].text}", flush=True)
        return {}
    shown = result.structured_content or {"text": result.content[0].text}
    print(f"← {json.dumps(shown)}", flush=True)
    return dict(shown)


async def run_demo() -> None:
    """Walk through the basket lifecycle, refusals included, on the in-memory store."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {
        **os.environ,
        "BASKET_STORE": "memory",
        "BASKET_IDLE_TTL": str(IDLE_SECONDS),
        "HANDLES_PRINCIPAL": "alice",
        "BASKET_LOG_LEVEL": "WARNING",
        "HANDLES_SECRET": "demo-only-secret-" + "x" * 32,
    }
    server = StdioServerParameters(command=sys.executable, args=["-m", "example_basket"], env=env)
    async with Client(server) as client:
        await _walk(client)
    await _two_principals(env)
    print("\nDone. Every refusal above is what the model sees: what went wrong and what to call.")


async def _walk(client: Any) -> None:
    tools = await client.list_tools()
    _say(f"The server offers {len(tools.tools)} tools: {', '.join(t.name for t in tools.tools)}")
    _say("Find a product, start a basket and fill it")
    await _call(client, "search_catalog", {"query": "mug", "limit": 3})
    basket_id = (await _call(client, "create_basket", {}))["basket_id"]
    await _call(client, "add_item", {"basket_id": basket_id, "sku": "MUG-24", "quantity": 2})
    await _call(client, "add_item", {"basket_id": basket_id, "sku": "CUP-01"})
    await _call(client, "remove_item", {"basket_id": basket_id, "sku": "CUP-01"})
    await _call(client, "list_baskets", {})

    _say("Mistakes get actionable errors: an unknown SKU, a bad quantity, a mistyped basket id")
    await _call(client, "add_item", {"basket_id": basket_id, "sku": "MUG-99"})
    await _call(client, "add_item", {"basket_id": basket_id, "sku": "MUG-24", "quantity": 500})
    mistyped = basket_id[:-2] + ("AA" if not basket_id.endswith("AA") else "BB")
    await _call(client, "get_basket", {"basket_id": mistyped})

    _say("Checkout is irreversible, so it wants confirmation; then the basket is closed")
    await _call(client, "checkout", {"basket_id": basket_id})
    await _call(client, "checkout", {"basket_id": basket_id, "confirm": True})
    await _call(client, "get_basket", {"basket_id": basket_id})

    _say(f"Baskets expire after {IDLE_SECONDS} seconds without use in this demo; waiting")
    idle_id = (await _call(client, "create_basket", {}))["basket_id"]
    await anyio.sleep(IDLE_SECONDS + 1.2)
    await _call(client, "add_item", {"basket_id": idle_id, "sku": "MUG-24"})


async def _two_principals(env: dict[str, str]) -> None:
    """Over HTTP with bearer tokens: bob cannot tell alice's basket from an invented one."""
    port = _free_port()
    _say(f"Over HTTP (port {port}), alice and bob each have a bearer token")
    command = [sys.executable, "-m", "example_basket", "--http", "--port", str(port)]
    tokens = {**env, "BASKET_TOKENS": "demo-alice:alice,demo-bob:bob"}
    async with await anyio.open_process(command, env=tokens, stderr=None, stdout=None) as process:
        try:
            await _wait_for_port(port)
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                _http_client(url, "demo-alice") as alice,
                _http_client(url, "demo-bob") as bob,
            ):
                print("alice:", flush=True)
                basket_id = (await _call(alice, "create_basket", {}))["basket_id"]
                await _call(alice, "add_item", {"basket_id": basket_id, "sku": "MUG-24"})
                print("bob, with alice's basket id and then with an invented one:", flush=True)
                await _call(bob, "get_basket", {"basket_id": basket_id})
                await _call(bob, "get_basket", {"basket_id": "bsk_" + "A" * 43})
                await _call(bob, "list_baskets", {})
        finally:
            process.terminate()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _wait_for_port(port: int) -> None:
    with anyio.fail_after(20):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.05)


@asynccontextmanager
async def _http_client(url: str, token: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client
