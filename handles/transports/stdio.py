"""stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr.

Reads and writes the file descriptors directly, waiting for readiness through
anyio (no worker thread per line), so it runs on asyncio and trio alike. On
asyncio, a pipe on stdin is read through the loop's pipe transport instead, which
keeps the descriptor registered rather than adding and removing a reader for every
line.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections import deque
from collections.abc import AsyncIterator

import anyio

from ..principal import Principal
from ..server.dispatch import Connection, Server
from ._loop import DEFAULT_MAX_CONCURRENCY, Deliver, TooLong, asyncio_loop, serve_messages

__all__ = ["DEFAULT_MAX_LINE_BYTES", "serve_stdio"]

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
_CHUNK = 64 * 1024


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
        direct = _Direct()
        lines = read_lines(stdin, max_line_bytes, direct)
        await serve_messages(
            server,
            connection,
            lines,
            writer.send,
            max_concurrency=max_concurrency,
            direct=direct,
        )
        await writer.drain()
    finally:
        os.set_blocking(stdin, was_blocking[0])
        os.set_blocking(stdout, was_blocking[1])


class _Direct:
    """Holds what ``serve_messages`` passes to ``direct``, for the pipe reader to call."""

    deliver: Deliver | None = None

    def __call__(self, deliver: Deliver) -> None:
        self.deliver = deliver


async def read_lines(
    fd: int, limit: int, direct: _Direct | None = None
) -> AsyncIterator[bytes | TooLong]:
    """Yield each non-blank line of ``fd``; a line over ``limit`` bytes yields ``TooLong``.

    On an asyncio pipe, lines that ``direct.deliver`` takes as they are read are not
    yielded (see ``serve_messages``).
    """
    loop = asyncio_loop()
    pipe = None if loop is None else await _open_pipe(loop, fd, limit, direct or _Direct())
    if pipe is None:
        lines = _Lines(limit)
        while chunk := await _read(fd):
            for line in lines.feed(chunk):
                yield line
        for line in lines.end():
            yield line
        return
    transport, reader = pipe
    try:
        while True:
            while reader.ready:
                reader.holding = True  # until the loop is done with this line
                yield reader.ready.popleft()
                reader.holding = False
                if reader.paused and len(reader.ready) <= _RESUME_AT:
                    reader.paused = False
                    transport.resume_reading()
            if reader.error is not None:
                raise reader.error
            if reader.done:
                return
            reader.waiter = loop.create_future()  # type: ignore[union-attr]
            await reader.waiter
    finally:
        transport.close()


class _Lines:
    """Splits a byte stream into its non-blank lines, keeping at most ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.skipping = False  # inside a line that was too long: drop up to its end

    def feed(self, chunk: bytes) -> list[bytes | TooLong]:
        *complete, rest = chunk.split(b"\n")
        found: list[bytes | TooLong] = []
        if complete:
            if self.skipping:
                self.skipping = False
                complete[0] = b""
                found.append(TooLong(self.limit))
            elif self.buffer:
                complete[0] = bytes(self.buffer) + complete[0]
                self.buffer.clear()
            for line in complete:
                if len(line) > self.limit:
                    found.append(TooLong(self.limit))
                elif line.strip():
                    found.append(line)
        if not self.skipping:
            self.buffer += rest
            if len(self.buffer) > self.limit:
                self.buffer.clear()
                self.skipping = True
        return found

    def end(self) -> list[bytes | TooLong]:
        """The unterminated last line, if any."""
        return [bytes(self.buffer)] if self.buffer.strip() and not self.skipping else []


_PAUSE_AT, _RESUME_AT = 256, 64  # lines read ahead of the message loop


class _PipeReader(asyncio.Protocol):
    """Lines from an asyncio read-pipe transport, for ``read_lines`` to hand out."""

    def __init__(self, limit: int, direct: _Direct) -> None:
        self.lines = _Lines(limit)
        self.direct = direct
        self.ready: deque[bytes | TooLong] = deque()
        self.holding = False
        self.done = False
        self.paused = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        deliver, ready = self.direct.deliver, self.ready
        for line in self.lines.feed(data):
            # Once a line waits in ``ready`` (or is being handled from there), the
            # ones after it wait too: order holds.
            if (
                ready
                or self.holding
                or deliver is None
                or type(line) is not bytes
                or not deliver(line)
            ):
                ready.append(line)
        if not ready:
            return
        if len(self.ready) >= _PAUSE_AT and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ready.extend(self.lines.end())
        self.done, self.error = True, exc
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def _open_pipe(
    loop: asyncio.AbstractEventLoop, fd: int, limit: int, direct: _Direct
) -> tuple[asyncio.ReadTransport, _PipeReader] | None:
    """A pipe transport on a duplicate of ``fd`` (closing it leaves ``fd`` open), or
    ``None`` unless ``fd`` is a pipe or a socket.

    Terminals and devices such as ``/dev/null`` keep the generic path: epoll
    refuses some of them, and asyncio would then never finish connecting.
    """
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
    transport, reader = await loop.connect_read_pipe(lambda: _PipeReader(limit, direct), pipe)
    # asyncio reads up to 256 KiB at a time; a buffer that large comes from mmap and is
    # then shrunk and unmapped: three system calls and a page fault per read. Reads
    # below malloc's mmap threshold (128 KiB) come from the heap.
    transport.max_size = _CHUNK  # type: ignore[attr-defined]
    return transport, reader


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
