"""Start ``python -m example_basket`` as a real stdio subprocess, for the official client or raw.

``server_params`` is what the official ``mcp`` client needs to spawn the server;
``raw_server`` spawns it directly and exchanges hand-written JSON-RPC lines, for
assertions on the exact bytes. Both run the server with a fixed principal and secret.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult, TextContent

from handles import Principal, Server
from handles.server import Connection

ROOT = Path(__file__).resolve().parents[2]
SECRET = "e2e-test-secret-" + "s" * 32
WAIT = 15.0
"""Upper bound for one exchange with a server (a bound, not a timing assertion)."""
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
BASKET_ID = re.compile(r"bsk_[A-Za-z0-9_-]{43}")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
START_NEW = "Call create_basket to start a new basket."
HANDLE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_basket", {}),
    ("add_item", {"sku": "MUG-24"}),
    ("remove_item", {"sku": "MUG-24"}),
    ("checkout", {"confirm": True}),
    ("close_basket", {}),
]
"""Every tool that takes a basket_id, with arguments that would otherwise be valid."""


def server_env(principal: str = "alice", *, idle_ttl: float | None = None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HANDLES_PRINCIPAL": principal,
        "HANDLES_SECRET": SECRET,
        "BASKET_STORE": "memory",
    }
    if idle_ttl is not None:
        env["BASKET_IDLE_TTL"] = str(idle_ttl)
    return env


def server_params(
    principal: str = "alice", *, idle_ttl: float | None = None, store: str | None = None
) -> StdioServerParameters:
    """``python -m example_basket`` as ``principal``; ``store`` is passed as ``--store``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "example_basket", *(["--store", store] if store else [])],
        cwd=ROOT,
        env=server_env(principal, idle_ttl=idle_ttl),
    )


@asynccontextmanager
async def connect(
    params: StdioServerParameters, mode: str = "auto", **options: Any
) -> AsyncIterator[Client]:
    """The official client connected to a fresh server; starting and stopping are bounded."""
    with anyio.fail_after(WAIT) as bound:
        async with Client(params, mode=mode, **options) as client:
            bound.deadline = math.inf
            yield client
            bound.deadline = anyio.current_time() + WAIT


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    with anyio.fail_after(WAIT):
        return await client.call_tool(tool, arguments)


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured content of a successful call."""
    result = await call(client, tool, **arguments)
    assert result.is_error is False, result
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None
    text = json.dumps(structured, separators=(",", ":"))
    assert result.content == [TextContent(type="text", text=text)]
    return structured


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The text of a call that must fail with ``isError``."""
    result = await call(client, tool, **arguments)
    assert result.is_error is True, result
    assert result.structured_content is None
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def call_in_process(
    server: Server, principal: Principal, tool: str, **arguments: Any
) -> dict[str, Any]:
    """A ``tools/call`` handed straight to ``server`` (no transport); its ``result``."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    response = await server.handle(message, Connection(principal, "legacy"))
    assert response is not None and "error" not in response, response
    result: dict[str, Any] = response["result"]
    return result


def unknown(basket_id: str) -> str:
    return (
        f"Unknown basket '{basket_id}'. Copy the basket_id exactly as create_basket returned it, "
        "call list_baskets to see your open baskets, or call create_basket to start a new one."
    )


def closed(basket_id: str, reason: str, text: str, before: float, after: float) -> None:
    """Assert ``text`` says the basket was closed (as ``reason``) between two moments."""
    match = re.fullmatch(
        rf"Basket '{re.escape(basket_id)}' was {reason} at ({ISO.pattern}) and can no longer "
        rf"be used\. {re.escape(START_NEW)}",
        text,
    )
    assert match is not None, text
    assert int(before) <= parse_iso(match.group(1)) <= after


def parse_iso(text: str) -> float:
    assert ISO.fullmatch(text), text
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


class RawServer:
    """The server as a subprocess, spoken to in hand-written JSON-RPC lines."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)

    async def send(self, message: dict[str, Any]) -> None:
        await self._stdin.send(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def line(self) -> bytes:
        with anyio.fail_after(WAIT):
            return await self._stdout.receive_until(b"\n", 8 * 1024 * 1024)

    async def request(self, id: int | str, method: str, params: dict[str, Any]) -> bytes:
        """Send a request and return its response line, exactly as the server wrote it."""
        await self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return await self.line()

    async def call(
        self, id: int | str, tool: str, arguments: dict[str, Any], **params: Any
    ) -> dict[str, Any]:
        """A modern ``tools/call``'s parsed response (``params`` may override ``_meta``)."""
        body = {"name": tool, "arguments": arguments, "_meta": MODERN_META, **params}
        response: dict[str, Any] = json.loads(await self.request(id, "tools/call", body))
        assert response["id"] == id, response
        return response


@asynccontextmanager
async def raw_server(env: dict[str, str]) -> AsyncIterator[RawServer]:
    command = [sys.executable, "-m", "example_basket"]
    process = await anyio.open_process(command, cwd=ROOT, env=env, stderr=None)
    async with process:
        try:
            yield RawServer(process)
        finally:
            await process.stdin.aclose()  # type: ignore[union-attr]
            with anyio.fail_after(WAIT):
                assert await process.wait() == 0
