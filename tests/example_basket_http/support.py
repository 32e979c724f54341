"""The basket demo as a real HTTP server process, and the official client with a bearer token.

``demo_server`` runs ``python -m example_basket --http`` on a free loopback port
and waits until it accepts connections; ``connect`` opens the official ``mcp``
client on it, sending ``Authorization: Bearer <token>`` on every request.
"""

from __future__ import annotations

import math
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.listening import listens

from ..example_basket.support import WAIT as WAIT
from ..example_basket.support import call as call
from ..example_basket.support import ok as ok
from ..example_basket.support import refused as refused
from ..example_basket.support import unknown as unknown

__all__ = [
    "HANDLE_CALLS",
    "SECRET",
    "TOKENS",
    "WAIT",
    "DemoServer",
    "connect",
    "demo_server",
    "invented_id",
    "ok",
    "refused",
    "unknown",
]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "http-e2e-secret-" + "h" * 32
TOKENS = "tok-a:alice,tok-b:bob"
"""``--tokens``: ``tok-a`` is alice, ``tok-b`` is bob."""
HANDLE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_basket", {}),
    ("add_item", {"sku": "MUG-24"}),
    ("remove_item", {"sku": "MUG-24"}),
    ("close_basket", {}),
    ("checkout", {"confirm": True}),
]
"""Every tool that takes a basket_id, with arguments that would otherwise be valid."""


@dataclass
class DemoServer:
    """One ``python -m example_basket --http`` process."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> int:
        """SIGTERM, as a deployment stops a replica; the exit code (bounded wait)."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            return self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@contextmanager
def demo_server(*args: str, env: dict[str, str] | None = None) -> Iterator[DemoServer]:
    """``python -m example_basket --http --port N *args``, stopped on exit.

    The environment holds only ``PATH``, ``HANDLES_SECRET`` (``SECRET``), a
    WARNING log level and ``env``. Should another process take the free port
    first, the server exits at once and is started again on another.
    """
    with tempfile.TemporaryDirectory(prefix="basket-http-") as tmp:
        for attempt in range(3):
            server = _start(Path(tmp, f"server-{attempt}.log"), args, env or {})
            try:
                if _wait_until_listening(server):
                    break
            except BaseException:
                server.stop()
                raise
        else:
            raise RuntimeError(f"the demo server did not start:\n{server.log_tail()}")
        try:
            yield server
        finally:
            server.stop()


def _start(log: Path, args: tuple[str, ...], extra: dict[str, str]) -> DemoServer:
    port = _free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HANDLES_SECRET": SECRET,
        "BASKET_LOG_LEVEL": "WARNING",
        **extra,
    }
    command = [sys.executable, "-m", "example_basket", "--http", "--port", str(port), *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    return DemoServer(port, process, log)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_listening(server: DemoServer) -> bool:
    """True once the process listens on its port; False if it exited first.

    Listening is asked of the kernel (``tests.listening``): a connect alone succeeds
    also when another process took the port, and then the test would talk to it.
    """
    deadline = time.monotonic() + WAIT
    while server.process.poll() is None:
        if listens(server.process.pid, server.port):
            return True  # connections queue in its backlog from now on
        if time.monotonic() > deadline:
            raise TimeoutError(f"the demo server did not listen:\n{server.log_tail()}")
        time.sleep(0.05)
    return False


@asynccontextmanager
async def connect(
    url: str, token: str, mode: str = "auto", **options: Any
) -> AsyncIterator[Client]:
    """The official client on ``url`` with a bearer token (``options`` as ``Client``'s)."""
    headers = {"authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=WAIT) as http:
        with anyio.fail_after(WAIT) as bound:
            transport = streamable_http_client(url, http_client=http)
            client = Client(transport, mode=mode, read_timeout_seconds=WAIT, **options)
            async with client:
                bound.deadline = math.inf
                yield client
                bound.deadline = anyio.current_time() + WAIT


def invented_id() -> str:
    """A well-formed basket id that no server ever issued."""
    return "bsk_" + secrets.token_urlsafe(32)
