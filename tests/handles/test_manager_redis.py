"""The manager on ``RedisStore``: fakeredis always, a real redis-server when installed.

``redis.asyncio`` runs on asyncio only, so these tests do not run on trio.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import fakeredis
import pytest
import redis

from handles.manager import HandleManager
from stores.redis import RedisStore

from .support import ALICE, BASKET, KEY, KINDS, Basket

pytestmark = pytest.mark.anyio

N = 200
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def fake_server() -> AsyncIterator[fakeredis.FakeServer]:
    yield fakeredis.FakeServer()


def fake_store(server: fakeredis.FakeServer) -> RedisStore:
    client = fakeredis.FakeAsyncRedis(server=server, max_connections=256)
    store = RedisStore(client)
    store._owns_client = True  # close the client with the store
    return store


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


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server (e.g. apt-get install redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    directory = tmp_path_factory.mktemp("redis")
    arguments = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", directory]
    process = subprocess.Popen(
        [binary, *map(str, arguments)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        client = redis.Redis(port=port, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()


@pytest.mark.redis
async def test_two_processes_on_a_real_redis_lose_nothing(redis_url: str) -> None:
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
