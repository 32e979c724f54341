"""Closes across replicas on a real Redis: committed once, claimed only when committed.

Two managers with one key ring over two ``RedisStore`` objects on one redis-server (or
one Redis Cluster) stand for two replicas.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from handles.errors import HandleClosed, HandleConflict
from handles.manager import HandleManager
from stores.redis import RedisStore
from tests.redis_fixtures import RedisCluster, RedisServer

from .support import ALICE, BASKET, KEY, Basket

pytestmark = [pytest.mark.anyio, pytest.mark.redis]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["server", "cluster"])
async def replicas(request: pytest.FixtureRequest) -> AsyncIterator[tuple[HandleManager, ...]]:
    redis: RedisServer | RedisCluster = request.getfixturevalue(f"redis_{request.param}")
    namespace = f"close-{uuid.uuid4().hex}"
    async with (
        RedisStore.from_url(redis.url, namespace=namespace) as one,
        RedisStore.from_url(redis.url, namespace=namespace) as two,
    ):
        yield (
            HandleManager(one, [BASKET], secret_keys=KEY),
            HandleManager(two, [BASKET], secret_keys=KEY),
        )


async def test_a_close_that_loses_the_version_race_leaves_no_tombstone(
    replicas: tuple[HandleManager, ...],
) -> None:
    """F6: replica A read version 1; B changed the basket; A's close must not commit,
    must say so as a conflict, and B must not read a tombstone of it."""
    a, b = replicas
    handle = await a.create(ALICE, BASKET, Basket(items={"mug": 1}))
    seen = await a.get(ALICE, BASKET, handle.id)
    await b.update(ALICE, BASKET, handle.id, lambda s: s.items.update(cup=1))
    with pytest.raises(HandleConflict) as caught:
        await a.close(ALICE, BASKET, handle.id, reason="checked out", version=seen.version)
    assert str(caught.value) == (
        f"Basket {handle.id!r} changed since it was read; this change was not applied. "
        "Retry this call shortly."
    )
    still = await b.get(ALICE, BASKET, handle.id)
    assert still.state.items == {"mug": 1, "cup": 1}
    await b.close(ALICE, BASKET, handle.id, reason="closed", version=still.version)
    with pytest.raises(HandleClosed, match="was closed at"):
        await a.get(ALICE, BASKET, handle.id)


async def test_fifty_concurrent_closes_on_two_replicas_commit_once(
    replicas: tuple[HandleManager, ...],
) -> None:
    """Every close read the same version; one commits, ``on_commit`` runs once, and every
    caller gets the committed outcome."""
    handle = await replicas[0].create(ALICE, BASKET, Basket(items={"mug": 2}))
    committed: list[Any] = []
    answers: list[Any] = []
    read: list[int] = []
    all_read = anyio.Event()

    async def place(order: dict[str, str]) -> None:
        committed.append(order)

    async def checkout(n: int) -> None:
        manager = replicas[n % 2]
        seen = await manager.get(ALICE, BASKET, handle.id)
        read.append(seen.version)
        if len(read) == 50:
            all_read.set()
        await all_read.wait()  # every caller has read version 1 before any closes
        order = {"order_id": f"ord_{n}"}
        answers.append(
            await manager.close(
                ALICE,
                BASKET,
                handle.id,
                reason="checked out",
                version=seen.version,
                outcome=order,
                on_commit=place,
            )
        )

    async with anyio.create_task_group() as tg:
        for n in range(50):
            tg.start_soon(checkout, n)
    assert read == [1] * 50
    assert len(committed) == 1
    assert answers == committed * 50
    with pytest.raises(HandleClosed) as caught:
        await replicas[1].get(ALICE, BASKET, handle.id)
    assert caught.value.outcome == committed[0]


async def test_a_close_with_another_reason_loses_with_the_closed_text(
    replicas: tuple[HandleManager, ...],
) -> None:
    a, b = replicas
    handle = await a.create(ALICE, BASKET)
    await a.close(ALICE, BASKET, handle.id, reason="checked out", version=1, outcome={"n": 1})
    with pytest.raises(HandleClosed, match="was checked out at"):
        await b.close(ALICE, BASKET, handle.id, reason="closed", version=1, outcome={"n": 2})
