"""Writes whose answer never came (``StoreUnavailable`` with ``applied=None``) are settled.

``LostAnswers`` makes chosen calls fail after or instead of running them, as a
timeout does when Redis runs the script late or never. Every answer is then true:
success only for a write that applied once, ``OutcomeUnknown`` (never "retry") when
reading back could not tell.
"""

from __future__ import annotations

from typing import Any

import pytest

from handles.errors import HandleClosed, OutcomeUnknown, StorageUnavailable
from stores.base import Record, StoreUnavailable

from .support import ALICE, BASKET, Basket, CountingStore, make_env

pytestmark = pytest.mark.anyio


class LostAnswers(CountingStore):
    """Delegates; the next ``plan[method]`` calls lose their answer.

    Each planned entry is "after" (the call runs, then its answer is lost) or
    "instead" (the call never runs: only its answer is lost); ``down`` fails every
    call without running it.
    """

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.plan: dict[str, list[str]] = {}
        self.down = False

    async def _lose(self, method: str, run: Any) -> Any:
        await self._before(method)
        if self.down:
            raise StoreUnavailable("no answer", applied=None)
        planned = self.plan.get(method)
        how = planned.pop(0) if planned else None
        if how == "instead":
            raise StoreUnavailable("no answer", applied=None)
        result = await run()
        if how == "after":
            raise StoreUnavailable("no answer", applied=None)
        return result

    async def create(self, *args: Any, **kwargs: Any) -> Record | None:
        return await self._lose("create", lambda: self.inner.create(*args, **kwargs))  # type: ignore[no-any-return]

    async def get(self, *args: Any, **kwargs: Any) -> Record | None:
        return await self._lose("get", lambda: self.inner.get(*args, **kwargs))  # type: ignore[no-any-return]

    async def replace(self, *args: Any, **kwargs: Any) -> Record | None:
        return await self._lose("replace", lambda: self.inner.replace(*args, **kwargs))  # type: ignore[no-any-return]

    async def retire(self, *args: Any, **kwargs: Any) -> bool:
        return await self._lose("retire", lambda: self.inner.retire(*args, **kwargs))  # type: ignore[no-any-return]


def env(**options: Any) -> Any:
    return make_env(LostAnswers, **options)


def add(sku: str) -> Any:
    def change(state: Basket) -> None:
        state.items[sku] = state.items.get(sku, 0) + 1

    return change


async def test_an_update_applied_but_unanswered_is_a_success_applied_once() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["replace"] = ["after"]
    updated = await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert (updated.handle.version, updated.handle.state.items) == (2, {"fig": 1})
    stored = await e.manager.get(ALICE, BASKET, handle.id)
    assert (stored.version, stored.state.items) == (2, {"fig": 1})


async def test_an_update_never_run_is_fenced_then_applied_once() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["replace"] = ["instead"]
    updated = await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    # The fence took version 2 with the old state; the update ran again on it.
    assert (updated.handle.version, updated.handle.state.items) == (3, {"fig": 1})
    assert (await e.manager.get(ALICE, BASKET, handle.id)).state.items == {"fig": 1}


async def test_an_unanswered_fence_is_read_back_too() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["replace"] = ["instead", "after"]  # the update, then the first fence
    updated = await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert updated.handle.state.items == {"fig": 1}
    assert (await e.manager.get(ALICE, BASKET, handle.id)).state.items == {"fig": 1}


async def test_a_silent_store_gets_outcome_unknown_never_retry() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["replace"] = ["after"]

    def add_then_go_silent(state: Basket) -> None:
        state.items["fig"] = 1
        e.store.plan["get"] = ["instead"] * 10
        e.store.plan["replace"] = ["after"] + ["instead"] * 10

    with pytest.raises(OutcomeUnknown) as caught:
        await e.manager.update(ALICE, BASKET, handle.id, add_then_go_silent)
    assert not caught.value.retryable
    assert str(caught.value) == (
        f"The basket store did not answer in time, so it is not known whether this change to "
        f"basket {handle.id!r} was applied. Call list_baskets to see the current state before "
        "repeating this call."
    )


async def test_a_read_that_times_out_is_retryable() -> None:
    e = env(cache_bytes=0)  # nothing remembered: the update reads first
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["get"] = ["instead"]
    with pytest.raises(StorageUnavailable) as caught:
        await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert caught.value.retryable
    assert (await e.manager.get(ALICE, BASKET, handle.id)).version == 1  # nothing written


async def test_a_create_applied_but_unanswered_returns_the_handle() -> None:
    e = env()
    e.store.plan["create"] = ["after"]
    handle = await e.manager.create(ALICE, BASKET, Basket(items={"fig": 1}))
    assert [h.id for h in await e.manager.list(ALICE, BASKET)] == [handle.id]
    assert handle.version == 1


async def test_a_create_never_run_is_created_once() -> None:
    e = env()
    e.store.plan["create"] = ["instead"]
    handle = await e.manager.create(ALICE, BASKET)
    assert [h.id for h in await e.manager.list(ALICE, BASKET)] == [handle.id]


async def test_a_create_on_a_silent_store_is_outcome_unknown() -> None:
    e = env()
    e.store.down = True
    with pytest.raises(OutcomeUnknown, match="whether a new basket was created"):
        await e.manager.create(ALICE, BASKET)


async def test_a_close_applied_but_unanswered_is_committed() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["retire"] = ["after"]
    order = {"order_id": "ord_1"}
    assert await e.manager.close(ALICE, BASKET, handle.id, version=1, outcome=order) == order
    with pytest.raises(HandleClosed) as caught:
        await e.manager.get(ALICE, BASKET, handle.id)
    assert caught.value.outcome == order


async def test_a_close_never_run_is_closed_once() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.plan["retire"] = ["instead"]
    placed: list[Any] = []

    async def place(order: Any) -> None:
        placed.append(order)

    order = {"order_id": "ord_1"}
    closed = await e.manager.close(
        ALICE, BASKET, handle.id, version=1, outcome=order, on_commit=place
    )
    assert closed == order and placed == [order]


async def test_a_close_on_a_silent_store_is_outcome_unknown_and_places_nothing() -> None:
    e = env()
    handle = await e.manager.create(ALICE, BASKET)
    e.store.down = True
    placed: list[Any] = []

    async def place(order: Any) -> None:
        placed.append(order)

    with pytest.raises(OutcomeUnknown) as caught:
        await e.manager.close(
            ALICE, BASKET, handle.id, reason="checked out", version=1, outcome={}, on_commit=place
        )
    assert f"whether basket {handle.id!r} was checked out" in str(caught.value)
    assert placed == []
