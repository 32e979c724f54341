"""Tombstones are bounded per principal and kind (``closed_limit``), on memory and on Redis.

F4 of issue 13: create+close in a loop left one tombstone per close outside the
quota. Now a principal keeps at most ``closed_limit`` of them; the ones that expire
soonest (the oldest closes) go first, and those handles then read as expired.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from handles._tombstones import closed_group
from handles.errors import HandleClosed, HandleExpired
from handles.manager import CLOSED_LIMIT, HandleManager
from stores.base import Store
from stores.memory import MemoryStore
from stores.redis import RedisStore
from stores.testing import ManualClock
from tests.redis_fixtures import RedisServer

from .support import ALICE, BASKET, BOB, KEY, T0

pytestmark = pytest.mark.anyio

CYCLES, LIMIT = 300, 50


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def store_and_clock(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[Store, ManualClock]]:
    clock = ManualClock(T0)
    if request.param == "memory":
        yield MemoryStore(clock=clock), clock
        return
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    namespace = f"tombstones-{uuid.uuid4().hex}"
    async with RedisStore.from_url(redis_server.url, namespace=namespace, clock=clock) as store:
        yield store, clock


async def test_create_and_close_in_a_loop_keeps_closed_limit_tombstones(
    store_and_clock: tuple[Store, ManualClock],
) -> None:
    store, clock = store_and_clock
    manager = HandleManager(store, [BASKET], secret_keys=KEY, clock=clock, closed_limit=LIMIT)
    closed = []
    for _ in range(CYCLES):
        handle = await manager.create(ALICE, BASKET)
        await manager.close(ALICE, BASKET, handle.id)
        closed.append(handle.id)
        clock.advance(1)  # later closes expire later
    other = await manager.create(BOB, BASKET)
    await manager.close(BOB, BASKET, other.id)
    tombstones = await store.list(ALICE.digest, closed_group(BASKET))
    assert len(tombstones) == LIMIT
    assert set(tombstones) == set(closed[-LIMIT:])
    assert len(await store.list(BOB.digest, closed_group(BASKET))) == 1
    with pytest.raises(HandleClosed):
        await manager.get(ALICE, BASKET, closed[-1])
    with pytest.raises(HandleExpired):
        await manager.get(ALICE, BASKET, closed[0])
    print(f"\n{CYCLES} create+close cycles, closed_limit={LIMIT}: {len(tombstones)} tombstones")


def test_the_default_limit_is_stated() -> None:
    assert CLOSED_LIMIT == 1000
    with pytest.raises(ValueError, match="closed_limit must be at least 1"):
        HandleManager(MemoryStore(), [BASKET], secret_keys=KEY, closed_limit=0)
