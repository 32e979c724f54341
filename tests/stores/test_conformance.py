"""The conformance suite on every store this package ships, on every Redis we can start."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import fakeredis
import pytest

from stores import MemoryStore, Store
from stores.redis import RedisStore
from stores.testing import ManualClock, StoreConformance, StoreHarness
from tests.handles.support import YieldingStore
from tests.redis_fixtures import RedisCluster, RedisServer


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    async def store_harness(self) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        async with MemoryStore(clock=clock) as store:
            yield StoreHarness(store, clock)


class TestDefaultIncr(StoreConformance):
    """``Store.incr``'s default, on a store that yields at every call (so races happen)."""

    @pytest.fixture
    async def store_harness(self) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        async with YieldingStore(MemoryStore(clock=clock)) as store:
            assert type(store).incr is Store.incr
            yield StoreHarness(store, clock)


class TestRedisStoreOnFakeredis(StoreConformance):
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def store_harness(self) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), max_connections=256)
        async with RedisStore(client, clock=clock, script_flags=False) as store:
            yield StoreHarness(store, clock)
        await client.aclose()


@pytest.mark.redis
class TestRedisStoreOnRedisServer(StoreConformance):
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def store_harness(self, redis_server: RedisServer) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        namespace = f"test-{uuid.uuid4().hex}"
        async with RedisStore.from_url(redis_server.url, namespace=namespace, clock=clock) as store:
            yield StoreHarness(store, clock)


@pytest.mark.redis
class TestRedisStoreOnRedisCluster(StoreConformance):
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def store_harness(self, redis_cluster: RedisCluster) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        namespace = f"test-{uuid.uuid4().hex}"
        async with RedisStore.from_url(
            redis_cluster.url, namespace=namespace, clock=clock
        ) as store:
            yield StoreHarness(store, clock)
