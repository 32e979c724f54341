"""RedisStore beyond the contract: keys, construction, expiry, round trips, outages."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import fakeredis
import pytest
import redis
import redis.asyncio
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from stores import StoreUnavailable
from stores.redis import RedisStore
from stores.testing import ManualClock
from tests.redis_fixtures import (
    STORE_PATHS,
    CountingConnection,
    RedisServer,
    counting_store,
    free_ports,
    running_redis_server,
)

pytestmark = pytest.mark.anyio

TTL = 100.0
ROOT = Path(__file__).parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


@pytest.fixture
async def fake() -> AsyncIterator[fakeredis.FakeAsyncRedis]:
    client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer())
    yield client
    await client.aclose()


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def slot(key: bytes | str) -> int:
    return key_slot(key.encode() if isinstance(key, str) else key)


def test_importing_stores_does_not_import_redis() -> None:
    result = run_python("import sys, stores; assert 'redis' not in sys.modules, 'imported'")
    assert result.returncode == 0, result.stderr


def test_without_redis_the_error_says_what_to_install() -> None:
    result = run_python("import sys; sys.modules['redis'] = None; import stores.redis")
    assert "pip install 'mcp-handles[redis]'" in result.stderr


async def test_key_layout(fake: fakeredis.FakeAsyncRedis) -> None:
    clock = ManualClock()
    store = RedisStore(fake, clock=clock, script_flags=False)
    await store.create("o", "basket", "k", b"v", expires_at=clock() + TTL)
    assert await fake.hgetall("mcp-handles:{o}:r:basket:k") == {
        b"v": b"1",
        b"d": b"v",
        b"x": repr(clock() + TTL).encode(),
    }
    assert await fake.zrange("mcp-handles:{o}:i:basket", 0, -1) == [b"k"]


@pytest.mark.parametrize("owner", ["", "o", "{o}", "a}b", "a{b", "%", "ö", "x" * 64])
async def test_an_owners_keys_share_one_slot(fake: fakeredis.FakeAsyncRedis, owner: str) -> None:
    clock = ManualClock()
    store = RedisStore(fake, namespace="ns", clock=clock, script_flags=False)
    for group, key in [("basket", "a"), ("basket", "b{c}"), ("g:h", "i")]:
        await store.create(owner, group, key, b"", expires_at=clock() + TTL)
    keys = await fake.keys("*")
    assert len(keys) == 5  # three records, two indexes
    assert len({slot(key) for key in keys}) == 1


async def test_owners_spread_over_slots(fake: fakeredis.FakeAsyncRedis) -> None:
    clock = ManualClock()
    store = RedisStore(fake, clock=clock, script_flags=False)
    for number in range(20):
        await store.create(f"owner-{number}", "g", "k", b"", expires_at=clock() + TTL)
    assert len({slot(key) for key in await fake.keys("*")}) > 10


async def test_expired_index_entries_are_trimmed(fake: fakeredis.FakeAsyncRedis) -> None:
    clock = ManualClock()
    store = RedisStore(fake, clock=clock, script_flags=False)
    for key in "abc":
        await store.create("o", "g", key, b"", expires_at=clock() + TTL)
    clock.advance(TTL)
    assert await store.list("o", "g") == {}
    assert await fake.zcard("mcp-handles:{o}:i:g") == 0  # records go by their own PEXPIRE


async def test_limit_forgets_records_redis_lost(fake: fakeredis.FakeAsyncRedis) -> None:
    clock = ManualClock()
    store = RedisStore(fake, clock=clock, script_flags=False)
    await store.create("o", "g", "a", b"", expires_at=clock() + TTL)
    await fake.delete("mcp-handles:{o}:r:g:a")  # as eviction or FLUSHDB would
    assert await store.create("o", "g", "b", b"", expires_at=clock() + TTL, limit=1)


async def test_bad_arguments_are_refused(fake: fakeredis.FakeAsyncRedis) -> None:
    with pytest.raises(ValueError, match="namespace"):
        RedisStore(fake, namespace="{ns}")
    decoding = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses"):
        RedisStore(decoding)
    await decoding.aclose()


async def test_from_url_builds_and_owns_a_client() -> None:
    store = RedisStore.from_url("redis://127.0.0.1:1/0", max_connections=5, namespace="n")
    assert isinstance(store.client, redis.asyncio.Redis)
    assert store.client.connection_pool.max_connections == 5
    assert store.namespace == "n"
    await store.aclose()
    await store.aclose()


async def test_from_url_builds_a_cluster_client() -> None:
    for url in ["redis+cluster://127.0.0.1:1", "rediss+cluster://127.0.0.1:1"]:
        store = RedisStore.from_url(url)
        assert isinstance(store.client, RedisCluster)
        await store.aclose()


async def test_a_client_passed_in_stays_open(redis_server: RedisServer) -> None:
    client = redis.asyncio.Redis(port=redis_server.port)
    async with RedisStore(client, namespace="borrowed"):
        pass
    assert await client.ping()
    await client.aclose()


async def test_physical_expiry_is_in_milliseconds(redis_server: RedisServer) -> None:
    clock = ManualClock()
    async with RedisStore.from_url(redis_server.url, namespace="px", clock=clock) as store:
        client = store.client
        record, index = "px:{o}:r:g:k", "px:{o}:i:g"

        async def deadline_window(key: str, write: Any) -> tuple[int, int, int]:
            """Redis's time before and after ``write``, and ``key``'s deadline, in ms."""
            before = await client.time()
            await write
            after = await client.time()
            ms = [seconds * 1000 + micros // 1000 for seconds, micros in (before, after)]
            return ms[0], int(await client.pexpiretime(key)), ms[1]

        created = store.create("o", "g", "k", b"", expires_at=clock() + 100.25)
        start, deadline, end = await deadline_window(record, created)
        assert start + 100_250 <= deadline <= end + 100_250
        assert await client.pexpiretime(index) >= deadline

        index_deadline = await client.pexpiretime(index)
        assert index_deadline >= deadline

        renewed = store.get("o", "g", "k", renew_until=clock() + 0.5)
        start, deadline, end = await deadline_window(record, renewed)
        assert start + 500 <= deadline <= end + 500
        assert await client.pexpiretime(index) == index_deadline  # indexes never shrink


@pytest.mark.parametrize("path", STORE_PATHS)
async def test_each_method_is_one_round_trip(
    redis_server: RedisServer, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    url, server = redis_server.url, redis_server.client()
    store = counting_store(url, path, monkeypatch, namespace=f"trips-{path}", clock=clock)
    async with store:

        def calls(key: str) -> dict[str, Awaitable[object]]:
            later = clock() + TTL
            return {
                "create": store.create("o", "g", key, b"v", expires_at=later, limit=10),
                "get": store.get("o", "g", key),
                "get(renew_until)": store.get("o", "g", key, renew_until=later),
                "replace": store.replace("o", "g", key, b"w", version=1, expires_at=later),
                "list": store.list("o", "g"),
                "delete": store.delete("o", "g", key, version=2),
                "incr": store.incr("o", "calls", key, expires_at=later),
            }

        for call in calls("warm-up").values():  # the first call of a script loads it
            await call
        for name, call in calls("k").items():
            sent, evalsha = CountingConnection.sent, _evalsha_calls(server)
            assert await call
            trips = CountingConnection.sent - sent, _evalsha_calls(server) - evalsha
            assert trips == (1, 1), name


def _evalsha_calls(server: redis.Redis) -> int:
    return int(server.info("commandstats")["cmdstat_evalsha"]["calls"])


async def test_unavailable_while_the_server_is_down() -> None:
    with running_redis_server("--requirepass", "s3cret") as server:
        url = f"redis://:s3cret@127.0.0.1:{server.port}"
        async with RedisStore.from_url(url, namespace="down") as store:
            assert await store.create("o", "g", "k", b"", expires_at=time.time() + TTL)
            server.kill()
            calls = [
                store.create("o", "g", "j", b"", expires_at=time.time() + TTL),
                store.get("o", "g", "k", renew_until=time.time() + TTL),
                store.replace("o", "g", "k", b"", version=1, expires_at=time.time() + TTL),
                store.delete("o", "g", "k"),
                store.list("o", "g"),
                store.incr("o", "calls", "k", expires_at=time.time() + TTL),
            ]
            for call in calls:
                with anyio.fail_after(10), pytest.raises(StoreUnavailable) as caught:
                    await call
                assert "s3cret" not in f"{caught.value} {caught.value.__cause__!r}"


async def test_unavailable_when_no_cluster_answers() -> None:
    (port,) = free_ports(1)
    async with RedisStore.from_url(f"redis+cluster://127.0.0.1:{port}") as store:
        with anyio.fail_after(10), pytest.raises(StoreUnavailable):
            await store.get("o", "g", "k")


async def test_two_processes_lose_no_update(redis_server: RedisServer) -> None:
    namespace = f"processes-{uuid.uuid4().hex}"
    async with RedisStore.from_url(redis_server.url, namespace=namespace) as store:
        await store.create("o", "g", "k", b"", expires_at=time.time() + 600)
        worker = [sys.executable, "-m", "tests.stores.cas_worker", redis_server.url, namespace]
        async with anyio.create_task_group() as tg:
            for name in "ab":
                tg.start_soon(partial(anyio.run_process, [*worker, name, "100"], cwd=ROOT))
        record = await store.get("o", "g", "k")
    assert record is not None and record.version == 201
    expected = {f"{name}{item}" for name in "ab" for item in range(100)}
    assert sorted(record.value.decode().split(",")[:-1]) == sorted(expected)
