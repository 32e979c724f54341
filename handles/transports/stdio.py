"""stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr.

Reads and writes the file descriptors directly, waiting for readiness through
anyio (no worker thread per line), so it runs on asyncio and trio alike.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import anyio

from ..principal import Principal
from ..server import Connection, Server
from .loop import DEFAULT_MAX_CONCURRENCY, TooLong, serve_messages

__all__ = ["DEFAULT_MAX_LINE_BYTES", "serve_stdio"]

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
_CHUNK = 256 * 1024


async def serve_stdio(
    server: Server,
    *,
    principal: Principal | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    stdin: int = 0,
    stdout: int = 1,
) -> None:
    """Serve ``server`` until stdin closes. The caller is ``principal``.

    Without one, it is read from the environment (``Principal.from_environment``).
    """
    connection = Connection(principal or Principal.from_environment())
    writer = _Writer(stdout)
    was_blocking = os.get_blocking(stdin), os.get_blocking(stdout)
    os.set_blocking(stdin, False)
    os.set_blocking(stdout, False)
    try:
        lines = read_lines(stdin, max_line_bytes)
        await serve_messages(
            server, connection, lines, writer.send, max_concurrency=max_concurrency
        )
        await writer.drain()
    finally:
        os.set_blocking(stdin, was_blocking[0])
        os.set_blocking(stdout, was_blocking[1])


async def read_lines(fd: int, limit: int) -> AsyncIterator[bytes | TooLong]:
    """Yield each non-blank line of ``fd``; a line over ``limit`` bytes yields ``TooLong``."""
    buffer = bytearray()
    skipping = False
    while chunk := await _read(fd):
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            if skipping:
                skipping = False
                yield TooLong(limit)
            elif len(line) > limit:
                yield TooLong(limit)
            elif line.strip():
                yield line
        if len(buffer) > limit:
            buffer.clear()
            skipping = True
    if buffer.strip() and not skipping:
        yield bytes(buffer)


async def _read(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, _CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)


class _Writer:
    """Writes whole lines; when the pipe is full, one task flushes the backlog."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._backlog = bytearray()
        self._flushing = False

    async def send(self, data: bytes) -> None:
        line = data + b"\n"
        if not self._backlog:
            try:
                written = os.write(self._fd, line)
            except BlockingIOError:
                written = 0
            if written == len(line):
                return
            line = line[written:]
        self._backlog += line
        if not self._flushing:
            # Shielded: the backlog holds other tasks' lines too, and a cancelled
            # drainer would strand them (nothing else flushes until the next send).
            with anyio.CancelScope(shield=True):
                await self.drain()

    async def drain(self) -> None:
        self._flushing = True
        try:
            while self._backlog:
                await anyio.wait_writable(self._fd)
                try:
                    del self._backlog[: os.write(self._fd, self._backlog)]
                except BlockingIOError:
                    continue
        finally:
            self._flushing = False
