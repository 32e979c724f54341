"""Fuzzing the stream transport (the loop behind stdio): every frame gets a valid answer.

In process, over the same message loop and JSON framing as stdio, against the basket
demo; then a smaller run over a real ``python -m example_basket`` pipe. For each
frame the test sends a sentinel ``ping`` and reads until it has the sentinel's
reply and, unless the frame is a notification, the frame's own: a missing reply
hangs (bounded by ``fail_after``), a spurious one shows up as an extra message.
``FUZZ_EXAMPLES=10000`` is the dedicated run.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from hypothesis import given

from example_basket.app import build_server
from handles.principal import Principal
from handles.server.dispatch import Connection
from handles.transports._loop import serve_messages
from stores.memory import MemoryStore
from tests.fuzzing import (
    FUZZ_EXAMPLES,
    NO_RESPONSE,
    SECRET,
    bind,
    check_response,
    expected_id,
    frames,
    fuzz_settings,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
WAIT = 10.0
"""Upper bound for the replies to one frame (a bound, not a timing assertion)."""
FUZZER = Principal("fuzzer")


@dataclass
class Stream:
    """Raw encoded frames to and from a server running ``serve_messages``."""

    send: MemoryObjectSendStream[bytes]
    receive: MemoryObjectReceiveStream[bytes]
    basket_ids: list[str]
    sentinels: Iterator[int] = field(default_factory=lambda: itertools.count(10**15))
    crash: BaseException | None = None
    """What ended the server's message loop, if anything did."""

    async def exchange(self, frame: bytes) -> list[bytes]:
        """Send ``frame`` and a sentinel; return the raw replies, the sentinel's last."""
        expected = 1 + (expected_id(frame) is not NO_RESPONSE)
        sentinel = next(self.sentinels)
        replies: list[bytes] = []
        try:
            with anyio.fail_after(WAIT):
                await self.send.send(frame)
                await self.send.send(_ping(sentinel))
                while len(replies) < expected:
                    replies.append(await self.receive.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError, TimeoutError) as exc:
            raise AssertionError(f"no reply; the server loop ended: {self.crash!r:.300}") from exc
        replies.sort(key=lambda reply: json.loads(reply).get("id") == sentinel)
        assert json.loads(replies[-1]) == {"jsonrpc": "2.0", "id": sentinel, "result": {}}
        return replies[:-1]


def _ping(id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "ping"}).encode()


@pytest.fixture
async def stream() -> AsyncIterator[Stream]:
    server = build_server(MemoryStore(), secret_keys=SECRET)
    to_server, server_in = anyio.create_memory_object_stream[bytes](16)
    server_out, from_server = anyio.create_memory_object_stream[bytes](16)

    async def incoming() -> AsyncIterator[bytes]:
        async with server_in:
            async for data in server_in:
                yield data

    async with anyio.create_task_group() as tg, from_server, to_server:
        stream = Stream(to_server, from_server, [])

        async def serve() -> None:
            async with server_out:
                try:
                    await serve_messages(server, Connection(FUZZER), incoming(), server_out.send)
                except Exception as exc:  # reported by the next exchange, not by the runner
                    stream.crash = exc

        tg.start_soon(serve)
        for _ in range(2):
            created = _create_basket(next(stream.sentinels))
            (reply,) = await stream.exchange(created)
            stream.basket_ids.append(_basket_id(reply))
        yield stream
        assert await stream.exchange(_ping(1)) == [b'{"jsonrpc":"2.0","id":1,"result":{}}']
        tg.cancel_scope.cancel()


def _create_basket(id: int) -> bytes:
    params = {"name": "create_basket", "arguments": {}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    ).encode()


def _basket_id(reply: bytes) -> str:
    basket_id: str = json.loads(reply)["result"]["structuredContent"]["basket_id"]
    return basket_id


@fuzz_settings()
@given(frame=frames())
async def test_every_frame_gets_one_valid_answer(stream: Stream, frame: bytes) -> None:
    frame = bind(frame, stream.basket_ids)
    replies = await stream.exchange(frame)
    for reply in replies:
        check_response(reply, expected_id(frame))


# The same over a real pipe: python -m example_basket, stdio, as a subprocess.


class Pipe:
    """``python -m example_basket`` on stdio, with line-level access."""

    def __init__(self) -> None:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HANDLES_SECRET": SECRET,
            "HANDLES_PRINCIPAL": "fuzzer",
            "BASKET_LOG_LEVEL": "WARNING",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "example_basket"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.fd = self.process.stdin, self.process.stdout.fileno()
        self.buffer = b""
        self.sentinels = itertools.count(10**15)
        self.basket_ids = [_basket_id(self.exchange(_create_basket(-1 - n))[0]) for n in range(2)]

    def exchange(self, frame: bytes) -> list[bytes]:
        expected = 1 + (expected_id(frame, line=True) is not NO_RESPONSE)
        sentinel = next(self.sentinels)
        self.stdin.write(frame + b"\n" + _ping(sentinel) + b"\n")
        self.stdin.flush()
        replies = [self._line() for _ in range(expected)]
        replies.sort(key=lambda reply: json.loads(reply).get("id") == sentinel)
        assert json.loads(replies[-1]) == {"jsonrpc": "2.0", "id": sentinel, "result": {}}
        return replies[:-1]

    def _line(self) -> bytes:
        deadline = time.monotonic() + WAIT
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, "no reply in time"
            if select.select([self.fd], [], [], left)[0]:
                chunk = os.read(self.fd, 1 << 16)
                assert chunk, "the server closed stdout"
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def close(self) -> int:
        self.stdin.close()
        try:
            return self.process.wait(timeout=WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            assert self.process.stdout is not None
            self.process.stdout.close()


@pytest.fixture(scope="module")
def pipe() -> Iterator[Pipe]:
    pipe = Pipe()
    yield pipe
    assert pipe.exchange(_ping(1)) == [b'{"jsonrpc":"2.0","id":1,"result":{}}']
    assert pipe.close() == 0 and pipe.buffer == b""


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # a sync test: one run is enough
@fuzz_settings(FUZZ_EXAMPLES // 10)
@given(frame=frames(line=True))
def test_every_line_gets_one_valid_answer_over_a_real_pipe(
    pipe: Pipe, frame: bytes, anyio_backend: str
) -> None:
    frame = bind(frame, pipe.basket_ids)
    for reply in pipe.exchange(frame):
        check_response(reply, expected_id(frame, line=True))
