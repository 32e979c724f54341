"""A RedisStore from from_url lets at most max_connections calls into its pool at once.

Options select redis-py's client (and its blocking pool) rather than the store's own
connection, so these run on the path that users of ``client_kwargs`` get.
"""

from __future__ import annotations

import time
import uuid

import anyio
import pytest
from redis.asyncio import Redis

from stores import StoreUnavailable
from stores.redis import RedisStore
from tests.redis_fixtures import RedisServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


def store_on(server: RedisServer, **options: object) -> RedisStore:
    return RedisStore.from_url(server.url, namespace=f"slots-{uuid.uuid4().hex[:8]}", **options)  # type: ignore[arg-type]


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
