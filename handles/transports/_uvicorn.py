"""uvicorn's HTTP/1.1 protocols with the bounds they lack: a connection cap and a header deadline.

uvicorn bounds the idle time between requests (``timeout_keep_alive``), and its
h11 protocol the size of a request head (``h11_max_incomplete_event_size``), but
neither protocol bounds the time a client may take to send a request head, nor
the number of connections it holds open (``limit_concurrency`` answers 503 only
once a whole head has arrived), and the httptools protocol bounds no head size.
A client that trickles headers keeps a connection, and its buffers, for as long
as it likes.

``guarded_protocol`` returns a subclass of uvicorn's ``HttpToolsProtocol`` (when
``httptools`` is installed: its C parser takes about half the CPU of a request
that h11 takes, see docs/performance.md) or ``H11Protocol`` that closes a
connection whose request head is not complete ``header_timeout`` seconds after
the connection opened (or after the previous response), with a ``408``; that
answers ``400`` and closes a connection whose request head passes
``max_header_bytes``; and that answers ``503`` and closes at once any connection
beyond ``max_connections``. Given ``body_timeout``, it also closes, with a ``408``,
a connection whose request body is not all there ``body_timeout`` seconds after
its head: one timer per connection, armed only while a body is still arriving,
instead of a cancel scope per request in the app (``HttpApp`` then skips its own;
its byte budgets still apply).

It also closes lingering, as nginx does: when the app refuses a request without
reading its body, closing the socket with the client's bytes unread would make the
kernel send a reset, and the client would often lose the refusal before reading it.
So a close first sends the reply and a FIN, then reads and drops whatever still
arrives, for at most ``linger`` seconds, and only then closes. Nothing is kept.

Each socket read takes at most ``READ_BYTES`` (64 KiB), so what one connection
holds is bounded: its request head (``h11_max_incomplete_event_size``), uvicorn's
read-ahead of a body (paused past 64 KiB) plus one read, and its fixed state.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["READ_BYTES", "Parser", "guarded_protocol", "httptools_installed"]

Parser = Literal["auto", "httptools", "h11"]
"""Which HTTP/1.1 parser serves: ``auto`` is httptools when installed, else h11."""

READ_BYTES = 64 * 1024
"""The most one socket read takes in (asyncio's default is 256 KiB)."""

logger = logging.getLogger("handles.transports.http")

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\nretry-after: 1\r\ncontent-length: %d\r\n\r\n%s"
)
_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)
_LARGE = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


def _raw(template: bytes, text: str) -> bytes:
    body = text.encode()
    return template % (len(body), body)


class _LingeringTransport:
    """A transport that coalesces a turn's writes, and whose ``close`` lingers.

    uvicorn writes a response's head and its body separately: two ``send`` calls,
    and often two wake-ups of the client, for every small JSON reply. Writes made
    in one turn of the event loop are joined and sent at the end of that turn
    (``call_soon``), before any close. ``close`` shuts down writing, drops what
    still comes, then closes.
    """

    def __init__(self, transport: asyncio.Transport, linger: float) -> None:
        self._transport, self._linger = transport, linger
        self.lingering = False
        self._timer: asyncio.TimerHandle | None = None
        self._corked: list[bytes] | None = None
        self._loop = asyncio.get_running_loop()
        # Called for every request (uvicorn's flow control): no __getattr__ detour.
        self.pause_reading, self.resume_reading = transport.pause_reading, transport.resume_reading

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def write(self, data: bytes) -> None:
        corked = self._corked
        if corked is None:
            self._corked = [data]
            self._loop.call_soon(self._uncork)
        else:
            corked.append(data)

    def get_write_buffer_size(self) -> int:
        corked = sum(map(len, self._corked)) if self._corked else 0
        return corked + self._transport.get_write_buffer_size()

    def _uncork(self) -> None:
        corked, self._corked = self._corked, None
        if corked and not self._transport.is_closing():
            self._transport.write(corked[0] if len(corked) == 1 else b"".join(corked))

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def close(self) -> None:
        if self.lingering or self._transport.is_closing():
            return
        self._uncork()
        self.lingering = True
        if not self._transport.can_write_eof():
            self._transport.close()
            return
        try:
            self._transport.write_eof()
        except OSError:
            # The peer reset the connection and the loop has not yet seen it: the
            # socket is gone (ENOTCONN), so there is nothing to linger for.
            self._transport.close()
            return
        self._transport.resume_reading()
        self._timer = self._loop.call_later(self._linger, self.close_now)

    def close_now(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._corked = None  # the connection is gone: nothing more can be sent
        self._transport.close()


class _Refusals:
    """Logs refused connections at most once per ``every`` seconds, with their count.

    A flood of connections must not become a flood of log lines.
    """

    def __init__(self, max_connections: int, every: float = 10.0) -> None:
        self._max, self._every = max_connections, every
        self._count = 0
        self._logged_at = float("-inf")

    def note(self) -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._logged_at >= self._every:
            logger.warning(
                "refused %d connection(s) since the last such message: %d are open "
                "(max_connections); the next message comes in %g s at the earliest",
                self._count,
                self._max,
                self._every,
            )
            self._count, self._logged_at = 0, now


def httptools_installed() -> bool:
    """Whether uvicorn's httptools protocol can be used (``pip install httptools``)."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return False
    return True


def guarded_protocol(
    *,
    max_connections: int,
    header_timeout: float,
    max_header_bytes: int = 16 * 1024,
    body_timeout: float | None = None,
    linger: float = 2.0,
    parser: Parser = "auto",
) -> type[asyncio.Protocol]:
    """A uvicorn protocol class enforcing ``max_connections`` and ``header_timeout``.

    With h11, the head size is bounded by uvicorn's ``h11_max_incomplete_event_size``
    (set it to ``max_header_bytes``); with httptools, by the class itself.
    """
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, got {max_connections}")
    if header_timeout <= 0:
        raise ValueError(f"header_timeout must be positive, got {header_timeout}")
    if parser not in ("auto", "httptools", "h11"):
        raise ValueError(f"parser must be 'auto', 'httptools' or 'h11', got {parser!r:.40}")
    if parser == "httptools" and not httptools_installed():
        raise ImportError("parser='httptools' needs httptools: pip install httptools")
    guards = _Guards(
        max_connections=max_connections,
        header_timeout=header_timeout,
        max_header_bytes=max_header_bytes,
        body_timeout=body_timeout,
        linger=linger,
    )
    if parser == "h11" or (parser == "auto" and not httptools_installed()):
        return _guarded_h11(guards)
    return _guarded_httptools(guards)


class _Guards:
    """What both guarded protocols share: the bounds, their canned replies, the refusal log."""

    def __init__(
        self,
        *,
        max_connections: int,
        header_timeout: float,
        max_header_bytes: int,
        body_timeout: float | None,
        linger: float,
    ) -> None:
        self.max_connections, self.header_timeout = max_connections, header_timeout
        self.max_header_bytes, self.body_timeout = max_header_bytes, body_timeout
        self.linger = linger
        self.refusals = _Refusals(max_connections)
        self.busy = _raw(
            _BUSY,
            f"Service Unavailable: the server holds its maximum of {max_connections} "
            "connections; retry shortly.\n",
        )
        self.slow = _raw(
            _SLOW,
            f"Request Timeout: the request head did not arrive within {header_timeout:g} s; "
            "send the whole head at once.\n",
        )
        self.large = _raw(
            _LARGE,
            f"Bad Request: the request head is larger than {max_header_bytes} bytes; "
            "send fewer or shorter headers.\n",
        )
        # The app's own text (HttpApp._read_body), now that the protocol times bodies.
        self.late_body = _raw(
            _SLOW, f"Request Timeout: the body did not arrive within {body_timeout or 0:g} s"
        )

    def body_deadline(
        self, loop: asyncio.AbstractEventLoop, late: Callable[[], None]
    ) -> asyncio.TimerHandle | None:
        """A timer calling ``late`` once the body's time is up, if bodies are timed here."""
        if self.body_timeout is None:
            return None
        return loop.call_later(self.body_timeout, late)

    def admit(self, connections: set[Any], transport: asyncio.Transport) -> bool:
        """Refuse ``transport`` with a 503 past the cap; else bound its reads."""
        if len(connections) >= self.max_connections:
            self.refusals.note()
            transport.write(self.busy)
            transport.close()
            return False
        if hasattr(transport, "max_size"):
            # asyncio reads up to 256 KiB at a time: cap what one read can add.
            transport.max_size = READ_BYTES
        return True


class _Guarded(asyncio.Protocol):
    """The bounds, on top of either of uvicorn's protocols (the next class in the MRO).

    The lifecycle is the same for both: admit or refuse the connection, wrap its
    transport, arm the head's deadline, time a body that is still arriving, close
    lingering. Where the parser stands is the subclass's to say: ``_awaiting_head``
    and ``_awaiting_body``.
    """

    guards: ClassVar[_Guards]
    # What this class uses of uvicorn's protocols.
    connections: set[Any]
    loop: asyncio.AbstractEventLoop
    transport: Any
    cycle: Any
    _lingering: _LingeringTransport
    _deadline: asyncio.TimerHandle | None = None
    _body_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self.guards.admit(self.connections, transport):
            return
        self._lingering = _LingeringTransport(transport, self.guards.linger)
        super().connection_made(self._lingering)  # type: ignore[arg-type]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._body_done()
        if self.transport is not None:  # None when connection_made refused it
            self._lingering.close_now()
            super().connection_lost(exc)

    def eof_received(self) -> None:
        if self.transport is not None and self._lingering.lingering:
            self._lingering.close_now()

    def _awaiting_head(self) -> bool:
        """Whether no request head has begun to complete since the deadline was armed."""
        raise NotImplementedError

    def _awaiting_body(self) -> bool:
        """Whether the current request's body is still arriving."""
        raise NotImplementedError

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.guards.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _time_body(self) -> None:
        if self._body_deadline is None:
            self._body_deadline = self.guards.body_deadline(self.loop, self._body_late)

    def _body_done(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or not self._awaiting_head():
            return
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(self.guards.slow)
        self.transport.close()

    def _body_late(self) -> None:
        self._body_deadline = None
        if self.transport.is_closing() or not self._awaiting_body():
            return
        if self.cycle is not None and not self.cycle.response_started:
            self.transport.write(self.guards.late_body)
        self.transport.close()


class _GuardedH11(_Guarded, H11Protocol):
    """h11 knows where the request stands: its ``their_state``."""

    def data_received(self, data: bytes) -> None:
        if self._lingering.lingering:
            return  # closing: what still comes is dropped
        super().data_received(data)
        state = self.conn.their_state
        if state is not h11.IDLE:
            self._disarm()  # the head is complete: now the body's deadline
            if state is h11.SEND_BODY:
                self._time_body()
            else:
                self._body_done()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()  # the next request's head gets the same deadline

    def _awaiting_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _awaiting_body(self) -> bool:
        return self.conn.their_state is h11.SEND_BODY


def _guarded_h11(guards: _Guards) -> type[asyncio.Protocol]:
    return type("GuardedH11Protocol", (_GuardedH11,), {"guards": guards})


@functools.cache
def _guarded_httptools_class() -> type[_Guarded]:
    """Defined on first use: httptools is optional."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class _GuardedHttpTools(_Guarded, HttpToolsProtocol):
        """httptools calls back as it parses; this counts the head's bytes (it bounds none)."""

        _head_done = False
        _head_bytes = 0
        _body_pending = False

        def data_received(self, data: bytes) -> None:
            if self._lingering.lingering:
                return  # closing: what still comes is dropped
            counted = not self._head_done
            super().data_received(data)
            if self.transport.is_closing():
                return
            if counted and not self._head_done:
                self._head_bytes += len(data)
                if self._head_bytes > self.guards.max_header_bytes:
                    self._disarm()
                    self.transport.write(self.guards.large)
                    self.transport.close()
            elif self._body_pending:
                self._time_body()  # most bodies arrive with their head: no timer for those

        def on_headers_complete(self) -> None:
            self._head_done = self._body_pending = True
            self._disarm()  # the head is complete: now the body's deadline
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._body_pending = False
            self._body_done()
            super().on_message_complete()

        def on_response_complete(self) -> None:
            pipelined = bool(self.pipeline)  # its head is already complete
            super().on_response_complete()
            if not self.transport.is_closing() and not pipelined:
                self._arm()  # the next request's head gets the same deadline

        def _arm(self) -> None:
            self._head_done, self._head_bytes = False, 0
            super()._arm()

        def _awaiting_head(self) -> bool:
            return not self._head_done

        def _awaiting_body(self) -> bool:
            return self._body_pending

    return _GuardedHttpTools


def _guarded_httptools(guards: _Guards) -> type[asyncio.Protocol]:
    base = _guarded_httptools_class()
    return type("GuardedHttpToolsProtocol", (base,), {"guards": guards})
