"""``Wire``: one pipelined connection to a Redis server, for ``RedisStore``'s scripts.

redis-py does much per command (a pool checkout, a retry wrapper, observability
hooks, a timer per read); a store call is one ``EVALSHA``, and that overhead was
most of an ``add_item``'s CPU on Redis (figures in benchmarks/RESULTS.md). Here a
command is packed in a few lines, written to one asyncio connection and answered,
in order, by hiredis's parser: concurrent calls share the connection (Redis answers
in the order it is asked), so nothing waits for a free connection either.

What redis-py's client did for the store, this does too: connect within
``connect_timeout``, ``AUTH`` and ``SELECT`` from the URL, a reply within
``timeout`` or ``TimeoutError`` (the late reply is dropped when it comes, so
later replies still match their calls), reconnect on the next call after the
connection drops, and never resend a command: a script that may have run is
reported, not run twice. Errors are redis-py's exception classes, so callers
handle them the same way.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import hiredis
from redis.asyncio.connection import parse_url
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ClusterDownError,
    MasterDownError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["Wire"]

_ERRORS: dict[str, type[ResponseError] | type[RedisConnectionError]] = {
    "NOSCRIPT": NoScriptError,
    "OOM": OutOfMemoryError,
    "LOADING": BusyLoadingError,
    "READONLY": ReadOnlyError,
    "MASTERDOWN": MasterDownError,
    "TRYAGAIN": TryAgainError,
    "CLUSTERDOWN": ClusterDownError,
    "NOAUTH": AuthenticationError,
    "WRONGPASS": AuthenticationError,
}


class Wire:
    """A Redis connection that pipelines concurrent commands (see the module docstring).

    Args:
        url: ``redis://[[user]:password@]host[:port][/db]`` or ``unix://path[?db=N]``.
        connect_timeout: Seconds to connect (and authenticate).
        timeout: Seconds to wait for a reply.
    """

    def __init__(self, url: str, *, connect_timeout: float, timeout: float) -> None:
        options = parse_url(url)
        self._path: str | None = options.get("path")
        self._host: str = options.get("host", "localhost")
        self._port: int = int(options.get("port", 6379))
        self._hello = _hello(options.get("username"), options.get("password"), options.get("db"))
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self._protocol: _Protocol | None = None
        self._connecting = asyncio.Lock()

    async def call(self, *args: bytes | str | int | float) -> Any:
        """Send one command and return its reply; a Redis error reply is raised."""
        protocol = self._protocol
        if protocol is None or protocol.lost:
            protocol = await self._connect()
        return _reply(await protocol.request(_pack(args), self.timeout))

    async def aclose(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            protocol.close()

    async def _connect(self) -> _Protocol:
        """The connection, opened by the first caller while the others wait for it."""
        async with self._connecting:
            protocol = self._protocol
            if protocol is None or protocol.lost:
                protocol = self._protocol = await self._open()
            return protocol

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self._path is not None:
                    _, protocol = await loop.create_unix_connection(_Protocol, self._path)
                else:
                    _, protocol = await loop.create_connection(_Protocol, self._host, self._port)
                for command in self._hello:
                    _reply(await protocol.request(command, self.connect_timeout))
        except TimeoutError:
            raise RedisTimeoutError("Timeout connecting to Redis") from None
        except OSError as exc:
            raise RedisConnectionError(f"Error connecting to Redis: {exc.strerror}") from None
        return protocol


class _Protocol(asyncio.Protocol):
    """Replies matched to requests in order; a lost connection fails every pending one."""

    def __init__(self) -> None:
        self.parser = hiredis.Reader()
        self.pending: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    # The deadline is a plain timer on the reply: asyncio.timeout() around the await
    # would cost a Timeout object and a reschedule per command.
    async def request(self, command: bytes, timeout: float) -> Any:  # noqa: ASYNC109
        if self.lost or self.transport is None:
            raise RedisConnectionError("Connection to Redis lost")
        loop = asyncio.get_running_loop()
        reply = loop.create_future()
        self.pending.append(reply)
        self.transport.write(command)
        timer = loop.call_later(timeout, _expire, reply)
        try:
            return await reply
        finally:
            timer.cancel()

    def data_received(self, data: bytes) -> None:
        self.parser.feed(data)
        try:
            while (reply := self.parser.gets()) is not False:
                waiter = self.pending.popleft()
                if not waiter.done():  # else it timed out or was cancelled: drop the reply
                    waiter.set_result(reply)
        except (hiredis.ProtocolError, IndexError):  # garbage, or a reply nobody asked for
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        pending, self.pending = self.pending, deque()
        for waiter in pending:
            if not waiter.done():
                waiter.set_exception(RedisConnectionError("Connection to Redis lost"))

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


def _expire(reply: asyncio.Future[Any]) -> None:
    if not reply.done():
        reply.set_exception(RedisTimeoutError("Timeout reading from Redis"))


def _pack(args: tuple[bytes | str | int | float, ...]) -> bytes:
    """A command in RESP: an array of bulk strings."""
    packed = bytearray(b"*%d\r\n" % len(args))
    for arg in args:
        if type(arg) is bytes:
            data = arg
        elif type(arg) is str:
            data = arg.encode()
        elif type(arg) is int:
            data = b"%d" % arg
        else:
            data = repr(arg).encode()
        packed += b"$%d\r\n%b\r\n" % (len(data), data)
    return bytes(packed)


def _reply(reply: Any) -> Any:
    """The reply, or the redis-py exception its error stands for, raised."""
    if type(reply) is hiredis.ReplyError:
        text = str(reply)
        code, _, rest = text.partition(" ")
        error = _ERRORS.get(code)
        raise error(rest) if error is not None else ResponseError(text)
    return reply


def _hello(username: str | None, password: str | None, db: Any) -> list[bytes]:
    """The commands a new connection sends first: ``AUTH``, then ``SELECT``."""
    commands = []
    if password is not None:
        auth = ("AUTH", password) if username is None else ("AUTH", username, password)
        commands.append(_pack(auth))
    if db:
        commands.append(_pack(("SELECT", int(db))))
    return commands
