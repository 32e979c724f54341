"""``Wire``, the store's pipelined connection, against a real redis-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from stores._redis_wire import Wire
from stores.redis import RedisStore
from stores.testing import ManualClock
from tests.redis_fixtures import RedisServer, free_ports, running_redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis-py's asyncio, and the wire, run on asyncio only


def wire(url: str, timeout: float = 2.0) -> Wire:
    return Wire(url, connect_timeout=1.0, timeout=timeout)


async def until(condition: Callable[[], bool], within: float = 10.0) -> None:
    """Return once ``condition()`` holds; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.01)


def blocked_on_server(redis_server: RedisServer, client_id: int) -> bool:
    clients = redis_server.client().client_list()
    return any(int(c["id"]) == client_id and "b" in c["flags"] for c in clients)


async def test_concurrent_calls_share_one_connection_and_get_their_own_replies(
    redis_server: RedisServer,
) -> None:
    connection = wire(redis_server.url + "/0")
    try:
        replies = await asyncio.gather(*(connection.call("ECHO", f"n{n}") for n in range(500)))
        assert replies == [f"n{n}".encode() for n in range(500)]
        assert await connection.call("INCRBY", "wire-test-counter", 7) == 7
        clients = redis_server.client().client_list()
        assert sum(1 for client in clients if client["cmd"] == "incrby") == 1
    finally:
        await connection.aclose()
        redis_server.client().delete("wire-test-counter")


async def test_a_late_reply_is_dropped_and_the_next_ones_still_match(
    redis_server: RedisServer,
) -> None:
    connection = wire(redis_server.url, timeout=0.2)
    try:
        with pytest.raises(RedisTimeoutError):
            await connection.call("BLPOP", "wire-test-empty", "0.5")  # answers nil at 0.5 s
        # (Later commands queue behind it on the one connection: the store's scripts
        # never block, so only this test's BLPOP makes them wait.)
        protocol = connection._protocol
        assert protocol is not None and not protocol.lost  # a timeout keeps the connection
        await until(lambda: not protocol.pending)  # the nil reply has come, for nobody
        connection.timeout = 2.0  # 0.2 s was for the BLPOP; a busy machine needs no race
        assert await connection.call("ECHO", "after") == b"after"
        assert await connection.call("ECHO", "again") == b"again"
    finally:
        await connection.aclose()


async def test_a_dropped_connection_fails_its_calls_and_the_next_call_reconnects(
    redis_server: RedisServer,
) -> None:
    connection = wire(redis_server.url)
    try:
        own_id = await connection.call("CLIENT", "ID")
        blocked = asyncio.ensure_future(connection.call("BLPOP", "wire-test-empty", "5"))
        await until(lambda: blocked_on_server(redis_server, own_id))
        redis_server.client().client_kill_filter(_id=own_id)
        with pytest.raises(RedisConnectionError):
            await blocked
        assert await connection.call("CLIENT", "ID") != own_id
    finally:
        await connection.aclose()


async def test_errors_are_redis_py_exceptions() -> None:
    (port,) = free_ports(1)
    with pytest.raises(RedisConnectionError):
        await wire(f"redis://127.0.0.1:{port}").call("PING")
    with running_redis_server("--requirepass", "s3cret") as server:
        with pytest.raises(AuthenticationError):
            await wire(f"redis://:wrong@127.0.0.1:{server.port}").call("PING")
        right = wire(f"redis://:s3cret@127.0.0.1:{server.port}/2")
        try:
            assert await right.call("SET", "k", "in db 2") == b"OK"
            assert await right.call("CLIENT", "INFO") is not None
            with pytest.raises(ResponseError, match="unknown command"):
                await right.call("NO-SUCH-COMMAND")
            assert await right.call("PING") == b"PONG"  # the connection goes on
        finally:
            await right.aclose()
        import redis

        assert redis.Redis(port=server.port, password="s3cret", db=2).get("k") == b"in db 2"


async def test_the_store_reloads_its_scripts_after_a_flush(redis_server: RedisServer) -> None:
    clock = ManualClock(1000.0)
    async with RedisStore.from_url(redis_server.url, namespace="wire-flush", clock=clock) as store:
        assert store._wire is not None
        assert await store.create("o", "g", "k", b"v", expires_at=2000.0) is not None
        redis_server.client().script_flush()
        record = await store.get("o", "g", "k")
        assert record is not None and record.value == b"v"
