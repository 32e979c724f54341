"""stdin need not be a pipe: a regular file, /dev/null or a socket are served too.

On asyncio a pipe or a socket is read through the loop's transport and anything
else through plain reads; these check that each kind of stdin reaches the same
message loop and that the server exits at its end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0
"""Upper bound for a server run; a bound on waiting, never a timing assertion."""
BACKENDS = ["asyncio", "trio"]
PINGS = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":"b","method":"ping"}'


def serve(stdin: Any, backend: str) -> list[dict[str, Any]]:
    """Run the demo server on ``stdin`` until it exits by itself; its replies."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.transports.demo_server", "--backend", backend],
        cwd=ROOT,
        stdin=stdin,
        capture_output=True,
        timeout=WAIT,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def pong(id: str | int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": {}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_regular_file(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_bytes(PINGS)
    with path.open("rb") as stdin:
        assert serve(stdin, backend) == [pong(1), pong("b")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_dev_null_is_an_empty_input(backend: str) -> None:
    with open(os.devnull, "rb") as stdin:
        assert serve(stdin, backend) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_socket(backend: str) -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(PINGS)
        ours.shutdown(socket.SHUT_WR)
        assert serve(theirs, backend) == [pong(1), pong("b")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["file", "pipe"])
def test_an_unterminated_line_over_the_limit_at_eof_is_answered(
    tmp_path: Path, backend: str, kind: str
) -> None:
    """A last line with no newline that is over the limit still gets its -32600."""
    data = PINGS + b"\n" + b'{"jsonrpc":"2.0","id":2,"method":"ping","pad":"' + b"x" * 5_000_000
    if kind == "file":
        path = tmp_path / "requests.jsonl"
        path.write_bytes(data)
        with path.open("rb") as stdin:
            replies = serve(stdin, backend)
    else:
        done = subprocess.run(
            [sys.executable, "-m", "tests.transports.demo_server", "--backend", backend],
            cwd=ROOT,
            input=data,
            capture_output=True,
            timeout=WAIT,
            check=True,
        )
        replies = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [reply for reply in replies if "error" in reply]  # answered by the reader,
    assert [reply for reply in replies if "error" not in reply] == [pong(1), pong("b")]
    assert len(errors) == 1  # so it may come before the pongs
    assert errors[0]["id"] is None
    assert errors[0]["error"]["code"] == -32600
    assert "byte limit" in errors[0]["error"]["message"]
