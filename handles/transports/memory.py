"""An in-memory transport: a server and a client in one process, for tests.

It runs the same message loop as stdio, over anyio memory streams of encoded
lines, so every message goes through real JSON framing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..principal import Principal
from ..server.dispatch import Connection, Server
from ..server.jsonrpc import Message, dumps
from ._loop import serve_messages

__all__ = ["MemoryClient", "connect_memory"]


class MemoryClient:
    """Send raw messages to the server and read what it writes back, in order."""

    def __init__(
        self, send: MemoryObjectSendStream[bytes], receive: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self._send, self._receive = send, receive

    async def send(self, message: Message | bytes) -> None:
        await self._send.send(message if isinstance(message, bytes) else dumps(message))

    async def receive(self) -> Message:
        reply: Message = json.loads(await self._receive.receive())
        return reply

    async def request(
        self, id: str | int, method: str, params: dict[str, Any] | None = None
    ) -> Message:
        """Send a request and return the next message (the caller keeps ids unique)."""
        await self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}})
        return await self.receive()


@asynccontextmanager
async def connect_memory(
    server: Server, principal: Principal, **options: Any
) -> AsyncIterator[MemoryClient]:
    """Run ``server`` in a task for as long as the block; options as ``serve_messages``."""
    to_server, server_in = anyio.create_memory_object_stream[bytes](16)
    server_out, from_server = anyio.create_memory_object_stream[bytes](16)

    async def incoming() -> AsyncIterator[bytes]:
        async with server_in:
            async for data in server_in:
                yield data

    async with anyio.create_task_group() as tg, server_out, from_server:
        connection = Connection(principal)
        tg.start_soon(
            lambda: serve_messages(server, connection, incoming(), server_out.send, **options)
        )
        async with to_server:
            yield MemoryClient(to_server, from_server)
        tg.cancel_scope.cancel()
