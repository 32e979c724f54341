"""A stdio client that writes requests and never reads its replies: the server's memory stays
bounded, because it stops reading once its reply backlog is full.

The server is a real subprocess (``tests.transports.demo_server``) on real pipes. The
client asks for 10,000 replies of 100,000 characters (about 2 GB as JSON) and reads none
of them. It writes without blocking and stops when the server has not taken any more
input for a while, or when everything is written. Then the server's peak resident
memory (``VmHWM``) minus its memory before must stay under the bound of
``serve_stdio``: the backlog (1 MiB) plus three copies of one reply per running
request (64 and the reader), plus the queue of requests read ahead, plus 8 MiB.
Run with ``-s`` for the figure.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handles.transports._loop import DEFAULT_MAX_CONCURRENCY, QUEUE_FACTOR
from handles.transports.stdio import DEFAULT_MAX_BACKLOG_BYTES

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
REPLY_CHARS = 100_000
REQUESTS = 10_000
STALLED_AFTER = 3.0
"""Seconds without the server taking input before the client concludes it has stopped."""
WAIT = 60.0


def memory(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def request(id: int) -> bytes:
    params = {"name": "big", "arguments": {"size": REPLY_CHARS}}
    message = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_that_never_reads_cannot_grow_the_server(backend: str) -> None:
    command = [sys.executable, "-m", "tests.transports.demo_server", "--backend", backend]
    process = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(request(0))
        reply_bytes = len(process.stdout.readline())  # up and serving; one reply's size
        before = memory(process.pid, "VmRSS")
        fd = process.stdin.fileno()
        os.set_blocking(fd, False)
        pending = b"".join(request(id) for id in range(1, REQUESTS + 1))
        started = time.monotonic()
        while pending and time.monotonic() - started < WAIT:
            _, writable, _ = select.select([], [fd], [], STALLED_AFTER)
            if not writable:
                break  # the server has stopped reading: backpressure
            try:
                pending = pending[os.write(fd, pending) :]
            except BlockingIOError:
                continue
        unsent = len(pending) // len(request(1))
        peak = memory(process.pid, "VmHWM")
    finally:
        process.kill()
        process.wait(10)
        process.stdin.close()
        process.stdout.close()

    running = DEFAULT_MAX_CONCURRENCY + 1
    queued = DEFAULT_MAX_CONCURRENCY * QUEUE_FACTOR
    # A running request holds its result, the encoded reply and the line being sent.
    bound = DEFAULT_MAX_BACKLOG_BYTES + running * 3 * reply_bytes + queued * 1024 + 8 * MiB
    grew = peak - before
    print(
        f"\nfigure ({backend}): {REQUESTS} requests of {REPLY_CHARS:,}-character replies "
        f"({REQUESTS * reply_bytes / MiB:,.0f} MiB), none read; the server stopped reading "
        f"with {unsent} requests unsent; RSS {before / MiB:.1f} MiB before, peak "
        f"{peak / MiB:.1f} MiB (+{grew / MiB:.1f} MiB, bound {bound / MiB:.1f} MiB)"
    )
    assert unsent > 0, "the server read every request: it never pushed back"
    assert grew <= bound
