"""The message loop shared by stream transports (stdio, in-memory).

It parses each incoming message, runs requests concurrently up to a bound,
honours ``notifications/cancelled`` (the cancelled request gets no response) and
answers malformed input with a JSON-RPC error, then keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..server.dispatch import Connection, Server
from ..server.jsonrpc import INVALID_REQUEST, Message, ProtocolError, as_id, error_response, parse

__all__ = ["DEFAULT_MAX_CONCURRENCY", "TooLong", "asyncio_loop", "serve_messages"]

logger = logging.getLogger("handles.transports")
DEFAULT_MAX_CONCURRENCY = 64
EOF_GRACE_SECONDS = 5.0
QUEUE_FACTOR = 16
Send = Callable[[bytes], Awaitable[None]]


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or ``None`` on another backend (trio)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    try:
        from sniffio import current_async_library
    except ImportError:  # anyio works without sniffio, and then assumes asyncio too
        return loop
    return loop if current_async_library() == "asyncio" else None


class TooLong:
    """Marks an incoming message that was dropped for exceeding the size limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit


async def serve_messages(
    server: Server,
    connection: Connection,
    incoming: AsyncIterable[bytes | TooLong],
    send: Send,
    *,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
) -> None:
    """Serve until ``incoming`` ends; then let in-flight requests finish (bounded)."""
    async with anyio.create_task_group() as tg:
        loop = _Loop(server, connection, send, max_concurrency, tg)
        async for data in incoming:
            await loop.receive(data)
        loop.close()
        tg.cancel_scope.deadline = anyio.current_time() + EOF_GRACE_SECONDS


class _Loop:
    """Runs requests on worker tasks that are started as needed and then reused.

    A task per request costs more than a typical request; a worker that finds more requests
    queued goes straight on to the next one. Only one worker at a time is on its way (woken or
    started, not yet running): each worker, as it takes a request, makes sure another is coming
    for the rest. Requests that never wait (an in-memory store) then run back to back on one
    worker, without a wake-up each; requests that wait (Redis) still each get a worker as soon
    as the one before them waits. At most ``limit`` requests run at once and up to ``limit *
    QUEUE_FACTOR`` more wait in order; only when that queue is full does the reader wait. Until
    then it keeps reading, so a ``notifications/cancelled`` behind busy requests still arrives.
    """

    def __init__(
        self, server: Server, connection: Connection, send: Send, limit: int, tg: TaskGroup
    ) -> None:
        if limit < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {limit}")
        self.server, self.connection, self.send, self.tg = server, connection, send, tg
        self.limit = limit
        self.queue: deque[Message] = deque()
        self.max_queued = limit * QUEUE_FACTOR
        self.in_flight: dict[Any, anyio.CancelScope] = {}
        self.workers = 0
        self.coming = False  # a worker is woken or started and has not yet looked
        self.idle: list[anyio.Event] = []  # one per worker waiting for a request
        self.space: anyio.Event | None = None  # set when the reader may go on
        self.closing = False

    async def receive(self, data: bytes | TooLong) -> None:
        if isinstance(data, TooLong):
            text = f"Invalid Request: the message exceeds the {data.limit}-byte limit"
            await self._send(error_response(None, ProtocolError(INVALID_REQUEST, text)))
            return
        try:
            message = parse(data)
        except ProtocolError as exc:
            await self._send(error_response(exc.id, exc))
            return
        if "id" in message:
            while len(self.queue) >= self.max_queued:
                self.space = anyio.Event()
                await self.space.wait()
            self.queue.append(message)
            self._call_worker()
        elif message["method"] == "notifications/cancelled":
            self._cancel(message["params"].get("requestId"))

    def _call_worker(self) -> None:
        """Make sure a worker is on its way to the queue (wake one, or start one)."""
        if self.coming or not self.queue:
            return
        if self.idle:
            self.idle.pop().set()
        elif self.workers < self.limit:
            self.workers += 1
            self.tg.start_soon(self._work)
        else:
            return  # all busy: each takes the next request when it is done
        self.coming = True

    def close(self) -> None:
        """No more requests will come: idle workers end, busy ones finish the queue."""
        self.closing = True
        for event in self.idle:
            event.set()
        self.idle.clear()

    async def _work(self) -> None:
        try:
            while not await self._serve_queue():
                pass  # a request was cancelled: go on in a fresh cancel scope
        finally:
            self.workers -= 1

    async def _serve_queue(self) -> bool:
        """Run queued requests in one cancel scope; ``True`` once the loop closes.

        Cancelling a request cancels the scope of the worker running it (an anyio
        ``CancelScope`` per request costs as much as a small request), so the worker
        returns ``False`` after a cancelled request and starts a fresh scope: the
        next request never runs in a cancelled one. A request is in ``in_flight``
        only while its worker is inside it, so the cancel cannot hit another.
        """
        with anyio.CancelScope() as scope:
            while True:
                self.coming = False  # this worker is here: the next caller wakes another
                while self.queue:
                    message = self.queue.popleft()
                    self._dequeued()
                    self._call_worker()  # for the rest, should this request wait
                    await self._request(message, scope)
                    if scope.cancel_called:
                        return False
                if self.closing:
                    return True
                await self._idle()
        return False  # the scope caught its own cancellation

    async def _idle(self) -> None:
        event = anyio.Event()
        self.idle.append(event)
        try:
            await event.wait()
        except BaseException:
            if event in self.idle:
                self.idle.remove(event)
            raise

    async def _request(self, message: Message, scope: anyio.CancelScope) -> None:
        id = message["id"]
        self.in_flight[id] = scope
        try:
            response = await self.server.handle(message, self.connection, self._send)
            if response is not None:
                await self._send(response)
        finally:
            if self.in_flight.get(id) is scope:
                del self.in_flight[id]

    def _dequeued(self) -> None:
        if self.space is not None:
            self.space.set()
            self.space = None

    def _cancel(self, requested: Any) -> None:
        id = as_id(requested)
        if id is None:
            return
        scope = self.in_flight.get(id)
        if scope is not None:
            logger.debug("request %r cancelled by the client", id)
            scope.cancel()
            return
        for message in self.queue:  # not started yet: drop it, it gets no response
            if message["id"] == id and type(message["id"]) is type(id):
                logger.debug("request %r cancelled by the client before it started", id)
                self.queue.remove(message)
                self._dequeued()
                return

    async def _send(self, message: Message) -> None:
        await self.send(self.server.encode(message))
