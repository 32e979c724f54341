"""A small tool server and an in-process uvicorn for the HTTP transport tests."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn

from handles.principal import Principal
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.server.tools import ToolError
from handles.transports.http import uvicorn_config

__all__ = ["ALICE", "BOB", "Probe", "build_server", "serving"]

ALICE = Principal("alice", issuer="https://id.example", client_id="app", scopes=frozenset({"mcp"}))
BOB = Principal("bob", issuer="https://id.example", client_id="app")
SECRET = "secret internal detail"


class Probe:
    """Lets a test wait for a tool to start, and see it cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()


def build_server(probe: Probe | None = None) -> Server:
    """Five tools on pages of two; ``wait`` blocks until cancelled (seen by ``probe``)."""
    server = Server("http-test", "1.0.0", page_size=2)
    probe = probe or Probe()

    @server.tool
    def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    @server.tool
    def whoami(principal: Principal) -> str:
        """Name the caller."""
        return principal.subject

    @server.tool
    def crash() -> str:
        """Fail with an unexpected error."""
        raise RuntimeError(SECRET)

    @server.tool
    def refuse(reason: str) -> str:
        """Fail with a domain error."""
        raise ToolError(f"Refused: {reason}.")

    @server.tool
    async def progress(steps: int, ctx: Context) -> str:
        """Report each step, then finish."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"done after {steps} steps"

    @server.tool
    async def wait(ctx: Context) -> str:
        """Report progress once, then wait until cancelled."""
        await ctx.report_progress(0, 1, "waiting")
        probe.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            probe.cancelled.set()
        return "unreachable"  # pragma: no cover

    return server


@asynccontextmanager
async def serving(app: Any, **limits: Any) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port; yield its ``/mcp`` URL.

    uvicorn runs as ``serve_http`` runs it (``uvicorn_config``: the connection cap,
    the header deadline, the lingering close). ``limits`` override those bounds.

    The socket listens before uvicorn starts, so clients may connect at once
    (they queue in the backlog): no need to wait for a readiness flag.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn_config(app, log_config=None, log_level="warning", **limits)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True
    sock.close()
