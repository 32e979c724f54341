"""The conformance suite on every store this package ships, on every Redis we can start."""

from __future__ import annotations

from collections.abc import AsyncIterator

import fakeredis
import pytest

from stores import MemoryStore
from stores.redis import RedisStore
from stores.testing import ManualClock, StoreConformance, StoreHarness


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    async def store_harness(self) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        async with MemoryStore(clock=clock) as store:
            yield StoreHarness(store, clock)


class TestRedisStoreOnFakeredis(StoreConformance):
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    async def store_harness(self) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        client = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), max_connections=256)
        async with RedisStore(client, clock=clock) as store:
            yield StoreHarness(store, clock)
        await client.aclose()
