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

from ..server.client_requests import PendingRequests
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


class _Wakeup:
    """An idle worker's ``anyio.Event``, on asyncio as a bare future.

    ``anyio.Event`` wraps ``asyncio.Event``, which makes a future per wait (and on
    Python 3.11 looks the loop up with a ``getpid()`` system call), at every call when
    one call is in flight. Cancelling the waiting task cancels the future, as with
    any asyncio await.
    """

    __slots__ = ("_future",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._future: asyncio.Future[None] = loop.create_future()

    def set(self) -> None:
        if not self._future.done():
            self._future.set_result(None)

    async def wait(self) -> None:
        await self._future


class TooLong:
    """Marks an incoming message that was dropped for exceeding the size limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit


Deliver = Callable[[bytes], bool]
"""Takes one incoming line at once if it can (see ``serve_messages``)."""


async def serve_messages(
    server: Server,
    connection: Connection,
    incoming: AsyncIterable[bytes | TooLong],
    send: Send,
    *,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
    direct: Callable[[Deliver], None] | None = None,
) -> None:
    """Serve until ``incoming`` ends; then let in-flight requests finish (bounded).

    A transport whose reads arrive in callbacks can pass ``direct``: it is called
    once with a function that takes a line there and then (a request while the
    queue has room, a notification) and returns ``True``, or returns ``False`` and
    leaves the line to ``incoming``, which must then yield it, and every line after
    it until it has caught up, so that order is kept. That spares each read a hop
    through the reader task.
    """
    if connection.pending is None:  # where answers to the server's requests go
        connection.pending = PendingRequests()
    async with anyio.create_task_group() as tg:
        loop = _Loop(server, connection, send, max_concurrency, tg)
        if direct is not None:
            direct(loop.receive_nowait)
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
        self.idle: list[anyio.Event | _Wakeup] = []  # one per worker waiting for a request
        self.space: anyio.Event | None = None  # set when the reader may go on
        self.closing = False
        # What an idle worker waits on: a bare future on asyncio (see _Wakeup), else
        # the running backend's Event class (anyio.Event() looks the backend up on
        # every call).
        loop = asyncio_loop()
        self.new_event: Callable[[], anyio.Event | _Wakeup] = (
            type(anyio.Event()) if loop is None else lambda: _Wakeup(loop)
        )

    def receive_nowait(self, data: bytes) -> bool:
        """``receive`` if it needs no waiting and sends nothing, else ``False``."""
        try:
            message = parse(data)
        except ProtocolError:
            return False  # ``receive`` parses it again and sends the error
        if "id" not in message:
            if message["method"] == "notifications/cancelled":
                self._cancel(message["params"].get("requestId"))
            return True
        if len(self.queue) >= self.max_queued:
            return False
        self.queue.append(message)
        self._call_worker()
        return True

    async def receive(self, data: bytes | TooLong) -> None:
        if isinstance(data, TooLong):
            text = f"Invalid Request: the message exceeds the {data.limit}-byte limit"
            await self._send(error_response(None, ProtocolError(INVALID_REQUEST, text)))
            return
        try:
            message = parse(data, responses=True)
        except ProtocolError as exc:
            await self._send(error_response(exc.id, exc))
            return
        if "method" not in message:
            if not self._answered(message):
                try:
                    parse(data)  # not an answer we wait for: refused as any response is
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

    def _answered(self, message: Message) -> bool:
        """Hand a client's response to the request of ours that waits for it."""
        pending = self.connection.pending
        return pending is not None and pending.answer(message, self.connection.principal)

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
        event = self.new_event()
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
        pending = self.connection.pending
        if pending is not None and pending.cancel(id, self.connection.principal):
            return  # one of our requests to the client: its tool call sees ClientCancelled
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
