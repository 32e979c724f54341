"""The manager on ``RedisStore``: fakeredis always, and a real redis-server (marked redis).

``redis.asyncio`` runs on asyncio only, so these tests do not run on trio.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import fakeredis
import pytest

from handles.manager import HandleManager
from stores.redis import RedisStore
from tests.redis_fixtures import RedisServer

from .support import ALICE, BASKET, KEY, KINDS, Basket

pytestmark = pytest.mark.anyio

N = 200
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fake_server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()


@asynccontextmanager
async def fake_store(server: fakeredis.FakeServer) -> AsyncIterator[RedisStore]:
    """A store on its own client (its own connections) to ``server``."""
    client = fakeredis.FakeAsyncRedis(server=server, max_connections=256)
    async with RedisStore(client, script_flags=False) as store:
        yield store
    await client.aclose()


def bump(basket: Basket) -> None:
    basket.count += 1


async def update_all(managers: list[HandleManager], handle_id: str) -> None:
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            for number in range(N):
                manager = managers[number % len(managers)]
                tasks.start_soon(manager.update, ALICE, BASKET, handle_id, bump)


async def test_concurrent_updates_on_fakeredis_all_apply(
    fake_server: fakeredis.FakeServer,
) -> None:
    async with fake_store(fake_server) as store:
        manager = HandleManager(store, KINDS, secret_keys=KEY)
        handle = await manager.create(ALICE, BASKET)
        await update_all([manager], handle.id)
        got = await manager.get(ALICE, BASKET, handle.id)
        assert (got.state.count, got.version) == (N, N + 1)


async def test_two_clients_on_one_fakeredis_lose_nothing(
    fake_server: fakeredis.FakeServer,
) -> None:
    """Two stores with their own clients and managers stand for two replicas."""
    async with fake_store(fake_server) as first, fake_store(fake_server) as second:
        managers = [HandleManager(s, KINDS, secret_keys=KEY) for s in (first, second)]
        handle = await managers[0].create(ALICE, BASKET)
        await update_all(managers, handle.id)
        got = await managers[1].get(ALICE, BASKET, handle.id)
        assert (got.state.count, got.version) == (N, N + 1)


@pytest.mark.redis
async def test_two_processes_on_a_real_redis_lose_nothing(redis_server: RedisServer) -> None:
    redis_url = redis_server.url
    namespace = f"test-{uuid.uuid4().hex}"
    async with RedisStore.from_url(redis_url, namespace=namespace) as store:
        manager = HandleManager(store, KINDS, secret_keys=KEY)
        handle = await manager.create(ALICE, BASKET)
        command = [sys.executable, "-m", "tests.handles.redis_worker", redis_url, namespace]
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                for _ in range(2):
                    tasks.start_soon(run, [*command, handle.id, str(N // 2)])
        got = await manager.get(ALICE, BASKET, handle.id)
        assert (got.state.count, got.version) == (N, N + 1)


async def run(command: list[str]) -> None:
    await anyio.run_process(command, cwd=ROOT, stdout=None, stderr=None)
