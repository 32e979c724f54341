"""A RedisStore from from_url lets at most max_connections calls into its pool at once.

Options select redis-py's client (and its blocking pool) rather than the store's own
connection, so these run on the path that users of ``client_kwargs`` get. A cluster
store has no blocking pool to lean on: it hands out turns itself.
"""

from __future__ import annotations

import time
import uuid

import anyio
import pytest
from redis.asyncio import Redis

from stores import StoreUnavailable
from stores import redis as redis_store
from stores.redis import RedisStore
from tests.redis_fixtures import RedisCluster, RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


def store_on(server: RedisServer | RedisCluster, **options: object) -> RedisStore:
    return RedisStore.from_url(server.url, namespace=f"slots-{uuid.uuid4().hex[:8]}", **options)  # type: ignore[arg-type]


def connected_clients(node: RedisServer) -> int:
    with node.client() as client:
        return int(client.info("clients")["connected_clients"])


async def test_more_calls_than_connections_wait_their_turn(redis_server: RedisServer) -> None:
    async with store_on(redis_server, max_connections=2) as store:
        later = time.time() + 60
        await store.create("o", "g", "k", b"v", expires_at=later)
        results: list[bytes] = []

        async def read() -> None:
            record = await store.get("o", "g", "k")
            assert record is not None
            results.append(record.value)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:
                for _ in range(50):
                    tasks.start_soon(read)
        # redis-py's plain pool raises "Too many connections" past its size: none did.
        assert results == [b"v"] * 50


async def test_a_call_that_finds_no_free_connection_in_time_is_unavailable(
    redis_server: RedisServer,
) -> None:
    async with store_on(redis_server, max_connections=1, timeout=0.2) as store:
        assert isinstance(store.client, Redis)
        pool = store.client.connection_pool
        held = await pool.get_connection()  # type: ignore[no-untyped-call]  # held by "another call"
        with anyio.fail_after(10), pytest.raises(StoreUnavailable):
            await store.get("o", "g", "k")
        await pool.release(held)
        assert await store.get("o", "g", "k") is None


@pytest.mark.redis
async def test_a_burst_on_a_cluster_opens_no_more_than_max_connections(
    redis_cluster: RedisCluster,
) -> None:
    async with store_on(redis_cluster, max_connections=4) as store:
        later = time.time() + 60
        await store.create("o", "g", "k", b"v", expires_at=later)
        primary = redis_cluster.primary_for(store._keys("o", "g")[1])
        before = connected_clients(primary)
        results: list[bytes] = []

        async def read() -> None:
            record = await store.get("o", "g", "k")
            assert record is not None
            results.append(record.value)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:
                for _ in range(200):
                    tasks.start_soon(read)
        # redis-py's cluster pool raises "Too many connections" past its size: none did.
        assert results == [b"v"] * 200
        # The store's connections stay open in its pool: at most four to this node.
        assert connected_clients(primary) - before <= 4


@pytest.mark.redis
async def test_a_cluster_call_that_gets_no_turn_in_time_is_unavailable_and_unsent(
    redis_cluster: RedisCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_store, "_CLUSTER_WAIT", 0.2)
    async with store_on(redis_cluster, max_connections=1) as store:
        turns = store._turns
        assert turns is not None
        await turns.acquire()  # held by "another call"
        with anyio.fail_after(10), pytest.raises(StoreUnavailable) as refused:
            await store.get("o", "g", "k")
        assert refused.value.applied is False
        assert "busy for 0.2 s" in str(refused.value)
        turns.release()
        assert await store.get("o", "g", "k") is None
