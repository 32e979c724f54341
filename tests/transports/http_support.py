"""A small tool server and an in-process uvicorn for the HTTP transport tests."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from anyio.abc import SocketStream

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


def raw_post(host: str, body: bytes) -> bytes:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Reader:
    """Responses off one connection, in order: pipelined ones may share a read."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream, self.buffer = stream, b""

    async def _more(self) -> bool:
        try:
            self.buffer += await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return False
        return True

    async def response(self) -> tuple[int, bytes]:
        """The next response's status and body (``Content-Length``, else up to the close)."""
        while b"\r\n\r\n" not in self.buffer:
            assert await self._more(), f"closed mid-head: {self.buffer[:200]!r}"
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        if "content-length" in headers:
            length = int(headers["content-length"])
            while len(self.buffer) < length:
                assert await self._more(), "closed mid-body"
        else:
            while await self._more():
                pass
            length = len(self.buffer)
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(lines[0].split()[1]), body
