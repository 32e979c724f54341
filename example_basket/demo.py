"""``python -m example_basket demo``: a scripted walk-through for a newcomer.

It starts the basket server as a subprocess, drives it with the official MCP
client over stdio, and prints each call and what the model would see, refusals
included.
"""

from __future__ import annotations

import json
import os
import sys
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
        "HANDLES_SECRET": "demo-only-secret-" + "x" * 32,
    }
    server = StdioServerParameters(command=sys.executable, args=["-m", "example_basket"], env=env)
    async with Client(server) as client:
        await _walk(client)
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
