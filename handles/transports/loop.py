"""The message loop shared by stream transports (stdio, in-memory).

It parses each incoming message, runs requests concurrently up to a bound,
honours ``notifications/cancelled`` (the cancelled request gets no response) and
answers malformed input with a JSON-RPC error, then keeps serving.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..jsonrpc import INVALID_REQUEST, Message, ProtocolError, dumps, error_response, parse
from ..server import Connection, Server

__all__ = ["DEFAULT_MAX_CONCURRENCY", "TooLong", "serve_messages"]

logger = logging.getLogger("handles.transports")
DEFAULT_MAX_CONCURRENCY = 64
EOF_GRACE_SECONDS = 5.0
Send = Callable[[bytes], Awaitable[None]]


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
    loop = _Loop(server, connection, send, max_concurrency)
    async with anyio.create_task_group() as tg:
        async for data in incoming:
            await loop.receive(data, tg)
        tg.cancel_scope.deadline = anyio.current_time() + EOF_GRACE_SECONDS


class _Loop:
    def __init__(self, server: Server, connection: Connection, send: Send, limit: int) -> None:
        self.server, self.connection, self.send = server, connection, send
        self.in_flight: dict[Any, anyio.CancelScope] = {}
        self.slots = anyio.Semaphore(limit)

    async def receive(self, data: bytes | TooLong, tg: TaskGroup) -> None:
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
            await self.slots.acquire()
            tg.start_soon(self._request, message)
        elif message["method"] == "notifications/cancelled":
            self._cancel(message["params"].get("requestId"))

    async def _request(self, message: Message) -> None:
        id = message["id"]
        try:
            with anyio.CancelScope() as scope:
                self.in_flight[id] = scope
                response = await self.server.handle(message, self.connection, self._send)
                if response is not None:
                    await self._send(response)
        finally:
            if self.in_flight.get(id) is scope:
                del self.in_flight[id]
            self.slots.release()

    def _cancel(self, id: Any) -> None:
        scope = self.in_flight.get(id) if isinstance(id, str | int) else None
        if scope is not None:
            logger.debug("request %r cancelled by the client", id)
            scope.cancel()

    async def _send(self, message: Message) -> None:
        await self.send(dumps(message))
