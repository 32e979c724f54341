"""RedisStore through a Redis Cluster failover: a primary dies under a stream of writes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from stores import StoreUnavailable
from stores.redis import RedisStore
from tests.redis_fixtures import RedisCluster, running_redis_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.redis, pytest.mark.slow]

OWNER, GROUP, NAMESPACE = "owner-a", "basket", "failover"
KEYS = [f"k{number}" for number in range(5)]
SLOT_KEY = f"{NAMESPACE}:{{{OWNER}}}"  # every key of OWNER hashes like this one


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


@pytest.fixture
def cluster() -> Iterator[RedisCluster]:
    """A cluster of its own: the test kills one of its primaries."""
    with running_redis_cluster(node_timeout_ms=1000) as cluster:
        yield cluster


async def increment(store: RedisStore, key: str) -> None:
    """Get the record, then replace it with value and version both one higher."""
    with anyio.fail_after(5):  # no operation may hang, whatever the cluster does
        record = await store.get(OWNER, GROUP, key)
        assert record is not None and int(record.value) == record.version
        value, later = b"%d" % (record.version + 1), time.time() + 600
        assert await store.replace(
            OWNER, GROUP, key, value, version=record.version, expires_at=later
        )


async def test_a_primary_fails_over(cluster: RedisCluster) -> None:
    async with RedisStore.from_url(cluster.url, namespace=NAMESPACE) as store:
        for key in KEYS:
            await store.create(OWNER, GROUP, key, b"1", expires_at=time.time() + 600)
            for _ in range(20):
                await increment(store, key)
        primary = cluster.primary_for(SLOT_KEY)
        cluster.wait_for_replicas(primary)  # what WAIT would give a writer
        started, killed = anyio.Event(), anyio.Event()

        async def stream(key: str) -> None:
            successes = 0
            while successes < 10:
                try:
                    await increment(store, key)
                except StoreUnavailable:
                    await anyio.sleep(0.05)  # the cluster is failing over
                else:
                    started.set()
                    successes += killed.is_set()

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for key in KEYS:
                    tg.start_soon(stream, key)
                await started.wait()
                primary.kill()
                killed.set()

        assert cluster.wait_for_new_primary(SLOT_KEY, primary) is not primary
        for key in KEYS:  # replicated writes survived the failover
            record = await store.get(OWNER, GROUP, key)
            assert record is not None and record.version >= 21
