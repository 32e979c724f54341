from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.lowlevel
import pytest

from handles.errors import HandleConflict
from handles.manager import HandleManager
from stores.base import Record

from .support import (
    ALICE,
    BASKET,
    KEY,
    KINDS,
    Basket,
    CountingStore,
    Env,
    YieldingStore,
    make_env,
)

pytestmark = pytest.mark.anyio

N = 200


def bump(basket: Basket) -> int:
    basket.count += 1
    return basket.count


async def bump_slowly(basket: Basket) -> int:
    seen = basket.count
    await anyio.lowlevel.checkpoint()  # every other update gets to run here
    basket.count = seen + 1
    return basket.count


async def run_all(env: Env, handle_id: str, fn: Callable[[Basket], object], n: int = N) -> None:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            for _ in range(n):
                tasks.start_soon(env.manager.update, ALICE, BASKET, handle_id, fn)


async def check_all_applied(env: Env, handle_id: str, n: int = N) -> None:
    got = await env.manager.get(ALICE, BASKET, handle_id)
    assert (got.state.count, got.version) == (n, n + 1)
    assert len(env.manager._turns) == 0  # every per-handle lock was dropped


async def test_concurrent_updates_all_apply() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    await run_all(env, handle.id, bump)
    await check_all_applied(env, handle.id)


async def test_concurrent_async_updates_that_yield_midway_all_apply() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    await run_all(env, handle.id, bump_slowly)
    await check_all_applied(env, handle.id)
    assert env.store.calls["replace"] == N  # turns, not retries


async def test_concurrent_updates_over_a_store_that_yields_all_apply() -> None:
    env = make_env(YieldingStore)
    handle = await env.manager.create(ALICE, BASKET)
    await run_all(env, handle.id, bump_slowly)
    await check_all_applied(env, handle.id)


async def test_two_managers_on_one_store_lose_nothing() -> None:
    """Two managers stand for two processes: only compare-and-set keeps them apart."""
    env = make_env(YieldingStore)
    other = HandleManager(env.store, KINDS, secret_keys=KEY, clock=env.clock)
    handle = await env.manager.create(ALICE, BASKET)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            for number in range(N):
                manager = other if number % 2 else env.manager
                tasks.start_soon(manager.update, ALICE, BASKET, handle.id, bump_slowly)
    await check_all_applied(env, handle.id)
    assert env.store.calls["replace"] > N  # some compare-and-sets lost and were retried


class LosingStore(CountingStore):
    """Every compare-and-set loses, as if another process always wrote first."""

    async def replace(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
    ) -> Record | None:
        await self._before("replace")
        return None


async def test_an_update_that_keeps_losing_gives_up_with_a_conflict() -> None:
    env = make_env(LosingStore, max_retries=2)
    handle = await env.manager.create(ALICE, BASKET)
    runs = []

    def record_run(basket: Basket) -> None:
        runs.append(basket.count)

    with pytest.raises(HandleConflict) as caught:
        await env.manager.update(ALICE, BASKET, handle.id, record_run)
    # Once on the state remembered from the create (a refusal there may just mean
    # another replica wrote), then 1 + max_retries times on the store's.
    assert runs == [0, 0, 0, 0]
    assert caught.value.retryable
    assert str(caught.value) == (
        f"Basket '{handle.id}' kept changing under concurrent calls (3 attempts); this change "
        "was not applied. Retry this call shortly."
    )


async def test_close_at_a_stale_version_changes_nothing() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    read = await env.manager.get(ALICE, BASKET, handle.id)
    await env.manager.update(ALICE, BASKET, handle.id, bump)
    with pytest.raises(HandleConflict) as caught:
        await env.manager.close(
            ALICE, BASKET, handle.id, reason="checked out", version=read.version
        )
    assert str(caught.value) == (
        f"Basket '{handle.id}' changed since it was read; this change was not applied. "
        "Retry this call shortly."
    )
    got = await env.manager.get(ALICE, BASKET, handle.id)  # still open, no tombstone
    assert got.state.count == 1
    await env.manager.close(ALICE, BASKET, handle.id, reason="checked out", version=got.version)
    assert await env.manager.list(ALICE, BASKET) == []


async def test_a_cancelled_update_releases_its_turn() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    started = anyio.Event()

    async def stall(basket: Basket) -> None:
        started.set()
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(env.manager.update, ALICE, BASKET, handle.id, stall)
        await started.wait()
        tasks.start_soon(env.manager.update, ALICE, BASKET, handle.id, bump)
        await anyio.lowlevel.checkpoint()
        tasks.cancel_scope.cancel()
    assert len(env.manager._turns) == 0
    await env.manager.update(ALICE, BASKET, handle.id, bump)
    assert (await env.manager.get(ALICE, BASKET, handle.id)).state.count == 1
