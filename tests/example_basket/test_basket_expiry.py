"""Baskets expire: servers with a one-second idle lifetime, one per client mode.

The waits are bounded polls of ``list_baskets`` (which never renews a basket), not
fixed sleeps, and nothing asserts how long anything took, nor that a basket is still
alive a moment after it was made.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest
from mcp import Client

from .support import HANDLE_CALLS, START_NEW, connect, ok, refused, server_params

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy", "2026-07-28"]
POLICY = "baskets expire after 1 second without use and 24 hours after creation"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def listed(client: Client) -> set[str]:
    return {basket["basket_id"] for basket in (await ok(client, "list_baskets"))["baskets"]}


async def gone(client: Client) -> None:
    """Return once the client has no open basket; ``list_baskets`` renews none."""
    while True:
        if not await listed(client):
            return
        await anyio.sleep(0.1)


async def test_an_idle_basket_expires_and_every_tool_says_so() -> None:
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(connect(server_params("alice", idle_ttl=1), mode))
            for mode in MODES
        ]
        baskets = []
        for client in clients:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tools["create_basket"].description == (
                f"Start a new, empty basket and return its basket_id.\n\n{POLICY.capitalize()}."
            )
            baskets.append((await ok(client, "create_basket"))["basket_id"])

        with anyio.fail_after(10):
            for client in clients:
                await gone(client)

        for client, basket_id in zip(clients, baskets, strict=True):
            expired = (
                f"Basket '{basket_id}' has expired; the exact time is not known ({POLICY}). "
                f"{START_NEW}"
            )
            for tool, arguments in HANDLE_CALLS:
                assert await refused(client, tool, basket_id=basket_id, **arguments) == expired
            assert (await ok(client, "create_basket"))["basket_id"] != basket_id
