"""What a real redis-server refuses, as the store reports it: full, busy, read-only.

Each refusal happens before anything runs, so it is ``StoreUnavailable`` with
``applied=False`` (``StoreFull`` for ``OOM``); both ways a store reaches Redis (its
own connection and redis-py's client) report the same.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
from redis._parsers.base import BaseParser
from redis.exceptions import ResponseError

from stores.base import StoreFull, StoreUnavailable
from stores.redis import RedisStore, _unavailable_error
from tests.redis_fixtures import RedisServer, running_redis_server

pytestmark = [pytest.mark.anyio, pytest.mark.redis]

TTL = 600.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def small_redis() -> Iterator[RedisServer]:
    """A redis-server whose memory limit the tests set, with ``noeviction``."""
    options = ("--maxmemory-policy", "noeviction", "--busy-reply-threshold", "100")
    with running_redis_server(*options) as server:
        yield server


@pytest.fixture(params=["wire", "redis-py"])
async def store(
    small_redis: RedisServer, request: pytest.FixtureRequest
) -> AsyncIterator[RedisStore]:
    namespace = f"errors-{uuid.uuid4().hex}"
    options: dict[str, Any] = {} if request.param == "wire" else {"health_check_interval": 0}
    async with RedisStore.from_url(small_redis.url, namespace=namespace, **options) as store:
        assert (store._wire is not None) == (request.param == "wire")
        yield store
    small_redis.client().config_set("maxmemory", 0)


def fill(server: RedisServer) -> None:
    """Set ``maxmemory`` below what Redis uses now: every write that adds data is refused."""
    client = server.client()
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) // 2)


async def test_a_full_redis_refuses_creates_and_replaces_before_they_run(
    store: RedisStore, small_redis: RedisServer
) -> None:
    now = time.time()
    await store.create("o", "g", "kept", b"v", expires_at=now + TTL)
    await store.incr("o", "calls", "n", expires_at=now + TTL)
    keys = small_redis.client().dbsize()
    fill(small_redis)
    for _ in range(20):
        with pytest.raises(StoreFull) as caught:
            await store.create("o", "g", uuid.uuid4().hex, b"x" * 100, expires_at=now + TTL)
        assert caught.value.applied is False
        assert str(caught.value) == "Redis is out of memory (OOM)"
    with pytest.raises(StoreFull):
        await store.replace("o", "g", "kept", b"w", version=1, expires_at=now + TTL)
    assert small_redis.client().dbsize() == keys  # nothing half-written
    # What frees or rewrites data still works: reads, renewals, lists, counters, closes.
    record = await store.get("o", "g", "kept", renew_until=now + 2 * TTL)
    assert record is not None and record.value == b"v" and record.version == 1
    assert set(await store.list("o", "g")) == {"kept"}
    assert await store.incr("o", "calls", "n", expires_at=now + TTL) == 2
    assert await store.retire("o", "g", "kept", into="g:closed", value=b"t", expires_at=now + TTL)
    assert await store.delete("o", "g:closed", "kept")


async def test_a_busy_redis_is_unavailable_and_nothing_ran(
    store: RedisStore, small_redis: RedisServer
) -> None:
    now = time.time()
    await store.create("o", "g", "k", b"v", expires_at=now + TTL)
    blocker = threading.Thread(target=_spin, args=(small_redis,))
    blocker.start()
    try:
        _wait_for_busy(small_redis)
        with pytest.raises(StoreUnavailable) as caught:
            await store.replace("o", "g", "k", b"w", version=1, expires_at=now + TTL)
        assert caught.value.applied is False
        assert str(caught.value) == "Redis refused the command (BUSY)"
    finally:
        _kill_script(small_redis)
        blocker.join()
    record = await store.get("o", "g", "k")
    assert record is not None and (record.value, record.version) == (b"v", 1)


async def test_a_read_only_replica_refuses_writes(
    store: RedisStore, small_redis: RedisServer
) -> None:
    now = time.time()
    await store.create("o", "g", "k", b"v", expires_at=now + TTL)
    client = small_redis.client()
    client.config_set("replica-serve-stale-data", "yes")
    client.replicaof("127.0.0.1", "1")  # a primary that is not there: read-only
    try:
        with pytest.raises(StoreUnavailable) as caught:
            await store.create("o", "g", "j", b"v", expires_at=now + TTL)
        assert caught.value.applied is False
        assert "ReadOnlyError" in str(caught.value) or "READONLY" in str(caught.value)
    finally:
        client.replicaof("NO", "ONE")
    assert await store.get("o", "g", "j") is None


@pytest.mark.parametrize(
    ("reply", "expected", "applied"),
    [
        ("OOM command not allowed when used memory > 'maxmemory'.", StoreFull, False),
        ("MISCONF Redis is configured to save RDB snapshots, but it's not able", None, False),
        ("BUSY Redis is busy running a script.", None, False),
        ("LOADING Redis is loading the dataset in memory", None, False),
        ("READONLY You can't write against a read only replica.", None, False),
        ("ERR user_script:3: Script attempted to access a non local key", None, None),
        ("WRONGTYPE Operation against a key holding the wrong kind of value", None, None),
    ],
)
def test_every_error_reply_is_store_unavailable(
    reply: str, expected: type[StoreUnavailable] | None, applied: bool | None
) -> None:
    parsed = BaseParser.parse_error(reply)  # type: ignore[no-untyped-call]  # as redis-py
    for error in (parsed, ResponseError(reply)):
        mapped = _unavailable_error(error)
        assert type(mapped) is (expected or StoreUnavailable)
        assert mapped.applied is applied
        code = reply.split(" ", 1)[0]
        assert code in str(mapped) or "OOM" in str(mapped) or type(error).__name__ in str(mapped)


def _spin(server: RedisServer) -> None:
    """Run a script that loops until ``SCRIPT KILL``."""
    with contextlib.suppress(redis.ResponseError):  # killed
        server.client().eval("while true do end", 0)


def _wait_for_busy(server: RedisServer) -> None:
    client = redis.Redis(port=server.port, socket_timeout=5)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            client.ping()
        except redis.exceptions.BusyLoadingError:
            return
        except redis.ResponseError as exc:
            if str(exc).startswith("BUSY"):
                return
        time.sleep(0.02)
    raise TimeoutError("Redis never became busy")


def _kill_script(server: RedisServer) -> None:
    client = redis.Redis(port=server.port, socket_timeout=5)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            client.script_kill()
            return
        except redis.ResponseError as exc:
            if "No scripts in execution" in str(exc):
                return
        time.sleep(0.02)
