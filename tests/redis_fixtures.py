"""Real Redis for tests: a server and a cluster, from redis-server processes.

Each runs on free loopback ports in a temporary directory that is removed after.
Without redis-server (or redis-cli, for the cluster) the fixtures skip with an
install hint, or fail when the ``CI`` environment variable is set, so that CI
never passes by skipping.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from stores._redis_wire import _Protocol
from stores.redis import RedisStore
from tests.listening import listens

__all__ = [
    "RedisCluster",
    "RedisServer",
    "redis_cluster",
    "redis_server",
    "running_redis_cluster",
    "running_redis_server",
]

_INSTALL_HINT = "install Redis 7+ (e.g. `apt-get install redis-server`, which includes redis-cli)"


@dataclass
class RedisServer:
    """One redis-server process on 127.0.0.1."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        """A synchronous client, for setting up and inspecting."""
        return redis.Redis(port=self.port, socket_timeout=5, retry=Retry(NoBackoff(), 0))

    def kill(self) -> None:
        """Stop the process at once (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@dataclass
class RedisCluster:
    """Three primaries with one replica each."""

    nodes: list[RedisServer]

    @property
    def url(self) -> str:
        """A ``redis+cluster://`` URL (see ``RedisStore.from_url``)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def primary_for(self, key: str) -> RedisServer:
        """The node that serves ``key``'s slot, as the first living node sees it.

        Right after a failover the nodes learn of the promotion one by one: use
        ``wait_for_new_primary`` to know that the whole cluster agrees.
        """
        living = next(node for node in self.nodes if node.process.poll() is None)
        port = self._primary_port_seen_by(living, key)
        if port is None:
            raise LookupError(f"{key!r} is not served (as node {living.port} sees it)")
        return next(node for node in self.nodes if node.port == port)

    def wait_for_new_primary(self, key: str, old: RedisServer) -> RedisServer:
        """Block until every living node names one primary for ``key``, and not ``old``."""
        living = [node for node in self.nodes if node is not old and node.process.poll() is None]

        def agreed() -> bool:
            seen = {self._primary_port_seen_by(node, key) for node in living}
            return len(seen) == 1 and seen != {None} and seen != {old.port}

        _wait_until(agreed, f"every node to agree on a new primary for {key!r}", *living)
        return self.primary_for(key)

    def _primary_port_seen_by(self, node: RedisServer, key: str) -> int | None:
        slot = redis.crc.key_slot(key.encode())
        for start, end, primary, *_ in node.client().cluster("SLOTS"):
            if start <= slot <= end:
                return int(primary[1])
        return None

    def wait_for_replicas(self, primary: RedisServer) -> None:
        """Block until ``primary``'s replicas have every write it has acknowledged."""
        replication = primary.client().info("replication")
        offset = int(replication["master_repl_offset"])
        replicas = [replication[f"slave{n}"] for n in range(replication["connected_slaves"])]
        servers = [next(n for n in self.nodes if n.port == int(r["port"])) for r in replicas]

        def caught_up() -> bool:
            infos = [server.client().info("replication") for server in servers]
            return all(int(info["slave_repl_offset"]) >= offset for info in infos)

        _wait_until(caught_up, "the replicas to catch up", primary, *servers)


class ServerExited(RuntimeError):
    """A redis-server process ended while a fixture waited for it."""


def require(binary: str) -> str:
    """The path of ``binary``; skip (fail under CI) when it is not installed."""
    path = shutil.which(binary)
    if path is None:
        message = f"{binary} not found: {_INSTALL_HINT}"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set: these tests must run)", pytrace=False)
        pytest.skip(message)
    return path


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback TCP ports that nobody listens on right now."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


@contextmanager
def running_redis_server(
    *args: str, port: int | None = None, directory: Path | None = None
) -> Iterator[RedisServer]:
    """Start redis-server with ``args`` and stop it on exit."""
    binary = require("redis-server")
    with ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="redis-")))
        for attempt in range(3):
            try:
                server = _start(binary, directory, port or free_ports(1)[0], args)
                break
            except ServerExited:
                if port is not None or attempt == 2:
                    raise  # a port given is not ours to change
                # Another process took the free port first: try another.
        stack.callback(server.kill)
        yield server


def _start(binary: str, directory: Path, port: int, args: tuple[str, ...]) -> RedisServer:
    log = directory / f"redis-{port}.log"
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(directory), "--logfile", str(log), *args]
    server = RedisServer(port, subprocess.Popen(command, stdin=subprocess.DEVNULL), log)
    try:
        _wait_until(lambda: _answers(server), f"redis-server on port {port} to answer", server)
    except BaseException:
        server.kill()
        raise
    return server


def _answers(server: RedisServer) -> bool:
    """It listens on its port (not another process that took the port) and answers."""
    return listens(server.process.pid, server.port) and _pings(server)


def _pings(server: RedisServer) -> bool:
    try:
        return bool(server.client().ping())
    except (redis.AuthenticationError, redis.ResponseError):
        return True  # it answers, if only to ask for a password
    except redis.ConnectionError:
        return False


def _wait_until(ready: Callable[[], bool], what: str, *servers: RedisServer) -> None:
    """Poll ``ready`` for up to 20 s; fail early if a server process died."""
    deadline = time.monotonic() + 20
    while not ready():
        for server in servers:
            if server.process.poll() is not None:
                raise ServerExited(f"redis-server exited: {server.log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.05)


@contextmanager
def running_redis_cluster(node_timeout_ms: int = 1000) -> Iterator[RedisCluster]:
    """Start a 3-primary, 3-replica cluster and stop it on exit."""
    cli = require("redis-cli")
    with tempfile.TemporaryDirectory(prefix="redis-cluster-") as tmp, ExitStack() as stack:
        nodes = []
        ports = free_ports(12)
        for number in range(6):
            directory = Path(tmp, str(number))
            directory.mkdir()
            options = ["--cluster-enabled", "yes", "--cluster-port", str(ports[6 + number])]
            options += ["--cluster-node-timeout", str(node_timeout_ms)]
            options += ["--cluster-replica-validity-factor", "0", "--repl-diskless-sync-delay", "0"]
            server = running_redis_server(*options, port=ports[number], directory=directory)
            nodes.append(stack.enter_context(server))
        addresses = [f"127.0.0.1:{node.port}" for node in nodes]
        subprocess.run(
            [cli, "--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        cluster = RedisCluster(nodes)
        _wait_until(lambda: _cluster_ready(cluster), "the cluster to be ready", *nodes)
        yield cluster


def _cluster_ready(cluster: RedisCluster) -> bool:
    """Every node sees all six nodes and a healthy cluster; every replica is in sync."""
    for node in cluster.nodes:
        client = node.client()
        info = client.cluster("INFO")
        if info["cluster_state"] != "ok" or int(info["cluster_known_nodes"]) != 6:
            return False
        replication = client.info("replication")
        if replication["role"] == "slave" and replication["master_link_status"] != "up":
            return False
    return True


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server shared by the session; tests keep apart by namespace."""
    with running_redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """A Redis Cluster shared by the session; tests keep apart by namespace."""
    with running_redis_cluster() as cluster:
        yield cluster


class CountingConnection(redis.asyncio.Connection):
    """redis-py's connection, counting the requests it writes: one per round trip."""

    sent = 0

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        CountingConnection.sent += 1
        await super().send_packed_command(command, check_health)


STORE_PATHS = ["redis-py", "wire"]
"""The two ways a ``RedisStore`` from ``from_url`` reaches Redis (see ``counting_store``)."""


def counting_store(
    url: str, path: str, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> RedisStore:
    """A store from ``from_url`` whose requests add to ``CountingConnection.sent``.

    ``path`` "redis-py": through redis-py's client (any client option selects it);
    "wire": through the store's own pipelined connection, as a plain URL does.
    """
    if path == "redis-py":
        store = RedisStore.from_url(url, connection_class=CountingConnection, **options)
        assert store._wire is None
        return store
    request = _Protocol.request

    async def counted(self: _Protocol, command: bytes, timeout: float) -> Any:  # noqa: ASYNC109
        CountingConnection.sent += 1
        return await request(self, command, timeout)

    monkeypatch.setattr(_Protocol, "request", counted)
    store = RedisStore.from_url(url, **options)
    assert store._wire is not None
    return store
