"""Shared by the adapter tests: clients for both frameworks, servers in subprocesses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx2
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport
from mcp import Client as SDKClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
SECRET = "adapter-tests-secret-" + "k" * 32
WAIT = 20.0
"""Upper bound for one exchange with a server (a bound, not a timing assertion)."""
ENV = {
    "PATH": os.environ.get("PATH", ""),
    "HANDLES_SECRET": SECRET,
    "HANDLES_PRINCIPAL": "stdio-tester",
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "PYTHONPATH": str(ROOT),
}


@dataclass(frozen=True)
class Reply:
    """One tools/call answer, whichever client got it."""

    is_error: bool
    text: str
    structured: Any


class Caller(Protocol):
    async def __call__(self, name: str, arguments: dict[str, Any]) -> Reply: ...


def _reply(result: Any) -> Reply:
    texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
    return Reply(bool(result.is_error), "\n".join(texts), result.structured_content)


@asynccontextmanager
async def fastmcp_caller(target: Any, token: str | None = None) -> AsyncIterator[Caller]:
    """FastMCP's own ``Client`` on ``target`` (a server, transport or URL)."""
    async with FastMCPClient(target, auth=token, timeout=WAIT) as client:

        async def call(name: str, arguments: dict[str, Any]) -> Reply:
            return _reply(await client.call_tool(name, arguments, raise_on_error=False))

        yield call


@asynccontextmanager
async def sdk_caller(target: Any, token: str | None = None) -> AsyncIterator[Caller]:
    """The official ``mcp`` client on ``target``: a server, stdio parameters or a URL."""
    if isinstance(target, str):
        headers = {"authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=WAIT) as http,
            SDKClient(streamable_http_client(target, http_client=http)) as client,
        ):
            yield _sdk_call(client)
    else:
        async with SDKClient(target, read_timeout_seconds=WAIT) as client:
            yield _sdk_call(client)


def _sdk_call(client: SDKClient) -> Caller:
    async def call(name: str, arguments: dict[str, Any]) -> Reply:
        return _reply(await client.call_tool(name, arguments))

    return call


def stdio_command(framework: str) -> list[str]:
    return [sys.executable, "-m", "tests.integrations.serve", framework]


def fastmcp_stdio(framework: str, log: Path) -> StdioTransport:
    command = stdio_command(framework)
    return StdioTransport(command[0], command[1:], env=ENV, cwd=str(ROOT), log_file=log)


def sdk_stdio(framework: str) -> StdioServerParameters:
    command = stdio_command(framework)
    return StdioServerParameters(command=command[0], args=command[1:], cwd=ROOT, env=ENV)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HttpServer:
    url: str
    log: Path

    def errors(self) -> list[str]:
        """The log's ERROR and CRITICAL lines, and any traceback."""
        lines = self.log.read_text().splitlines()
        assert any(line.startswith("INFO ") for line in lines), "the log is not being captured"
        return [
            line
            for line in lines
            if line.startswith(("ERROR", "CRITICAL")) or line.startswith("Traceback")
        ]


@contextmanager
def http_server(framework: str, log: Path, *extra: str) -> Iterator[HttpServer]:
    """The framework's basket under uvicorn on a free loopback port, until exit."""
    port = free_port()
    command = [*stdio_command(framework), "--http", str(port), *extra]
    with log.open("w") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=sink, stderr=sink)
    try:
        _wait_for(port, process, log)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited early:\n{log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the server did not listen within {WAIT}s:\n{log.read_text()}")
