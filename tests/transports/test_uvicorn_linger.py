"""The transport wrapper of the guarded protocols: coalesced writes, a lingering close.

The writes of one loop turn (uvicorn's response head, then its body) leave as one.
And the lingering close survives a peer that reset the connection first: a client
that gives up (or is killed) resets its connection; if the server's header deadline
fires in the same loop turn, before the loop has read the reset, ``write_eof`` finds
the socket no longer connected. CI once saw that surface as
an ``OSError`` out of the timer callback.
"""

from __future__ import annotations

import asyncio
import select
import socket
import struct

import pytest

from handles.transports._uvicorn import _LingeringTransport

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the transport is asyncio's


class _Keep(asyncio.Protocol):
    def __init__(self) -> None:
        self.made: asyncio.Future[asyncio.Transport] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.made.set_result(transport)


async def _reset_peer() -> tuple[asyncio.Transport, asyncio.AbstractServer]:
    protocol = _Keep()
    server = await asyncio.get_running_loop().create_server(lambda: protocol, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    transport = await protocol.made
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()  # with SO_LINGER 0: a reset, not a FIN
    return transport, server


async def test_a_close_after_the_peer_reset_closes_without_raising() -> None:
    transport, server = await _reset_peer()
    async with server:
        # Block the loop until the reset has arrived, so the loop has not read it yet.
        readable, _, _ = select.select([transport.get_extra_info("socket")], [], [], 5)
        assert readable, "the reset never arrived"
        lingering = _LingeringTransport(transport, linger=2.0)
        lingering.close()
        assert transport.is_closing()
        assert lingering.is_closing()
        lingering.close()  # a second close is a no-op


class _Recording:
    """The transport methods the coalescing writer uses, recording each ``write``."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


async def test_the_writes_of_one_turn_go_out_as_one() -> None:
    raw = _Recording()
    transport = _LingeringTransport(raw, linger=2.0)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"{}")
    assert raw.writes == []
    assert transport.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\n{}")
    await asyncio.sleep(0)  # the end of this turn
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    transport.write(b"late")
    transport.close()  # a close sends what is pending first
    assert raw.writes[-1] == b"late"
    assert raw.closed


async def test_a_connection_lost_drops_what_was_pending() -> None:
    raw = _Recording()
    transport = _LingeringTransport(raw, linger=2.0)  # type: ignore[arg-type]
    transport.write(b"never sent")
    transport.close_now()
    await asyncio.sleep(0)
    assert raw.writes == []
