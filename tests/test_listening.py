"""Server fixtures talk to their own process, even when another one took the free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests import redis_fixtures
from tests.example_basket_http import support
from tests.listening import listens

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port that this process listens on, as a thief would."""
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", 0))
        thief.listen(8)
        yield int(thief.getsockname()[1])


def test_listens_tells_which_process_holds_the_port(taken: int) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert listens(os.getpid(), taken)
        assert not listens(other.pid, taken)
    finally:
        other.kill()
        other.wait()
    with socket.socket() as idle:
        idle.bind(("127.0.0.1", 0))  # bound, not listening
        assert not listens(os.getpid(), int(idle.getsockname()[1]))


def test_a_redis_server_whose_port_was_taken_starts_on_another(
    taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    picks = iter([[taken]])
    monkeypatch.setattr(redis_fixtures, "free_ports", lambda count: next(picks, None) or _free())
    with redis_fixtures.running_redis_server() as server:
        assert server.port != taken and server.client().ping()


def test_a_demo_server_whose_port_was_taken_starts_on_another(
    taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    picks = iter([taken])
    monkeypatch.setattr(support, "_free_port", lambda: next(picks, None) or _free()[0])
    with support.demo_server() as server:
        assert server.port != taken and listens(server.process.pid, server.port)


def _free() -> list[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1])]
