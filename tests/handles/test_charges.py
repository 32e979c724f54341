"""The handle layer's side of a folded rate-limit count (``handles._charges``).

The server leaves a pending charge in a context variable; the manager's first read
or compare-and-set on the same store, for the same owner, counts it in the same
step, once. A failure to count refuses the call with what the server says
(``Pending.refusal``), and never claims a change that may have happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from handles._charges import PENDING, Pending
from stores.base import Counter, CountExceeded, Store, StoreUnavailable

from .support import ALICE, BASKET, BOB, T0, Basket, make_env
from .test_settle import LostAnswers

pytestmark = pytest.mark.anyio


class Refused(Exception):
    """What the test's server refuses a call with; ``cause`` is the store's failure."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(type(cause).__name__)
        self.cause = cause


@contextmanager
def pending(store: Store, owner: str, *limits: int) -> Iterator[Pending]:
    counters = [Counter("rate-limit", f"c{n}", T0 + 60, limit) for n, limit in enumerate(limits)]
    charge = Pending(store, owner, counters, Refused)
    token = PENDING.set(charge)
    try:
        yield charge
    finally:
        PENDING.reset(token)


def add(sku: str) -> Any:
    def change(state: Basket) -> None:
        state.items[sku] = state.items.get(sku, 0) + 1

    return change


async def test_the_first_read_counts_the_charge_once() -> None:
    e = make_env()
    handle = await e.manager.create(ALICE, BASKET)
    with pending(e.store, ALICE.digest, 5) as charge:
        await e.manager.get(ALICE, BASKET, handle.id)
        await e.manager.get(ALICE, BASKET, handle.id)
    assert charge.spent and charge.refused is None
    counter = await e.store.get(ALICE.digest, "rate-limit", "c0")
    assert counter is not None and counter.version == 1


async def test_another_owner_or_store_leaves_the_charge_pending() -> None:
    e, other = make_env(), make_env()
    handle = await e.manager.create(BOB, BASKET)
    with pending(e.store, ALICE.digest, 5) as charge:
        await e.manager.get(BOB, BASKET, handle.id)
    assert not charge.spent
    with pending(other.store, BOB.digest, 5) as charge:
        await e.manager.get(BOB, BASKET, handle.id)
    assert not charge.spent


async def test_an_edit_past_the_limit_is_refused_and_not_applied() -> None:
    e = make_env()
    handle = await e.manager.create(ALICE, BASKET)
    with pending(e.store, ALICE.digest, 0) as charge, pytest.raises(Refused) as refused:
        await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert isinstance(refused.value.cause, CountExceeded) and charge.refused is refused.value
    stored = await e.manager.get(ALICE, BASKET, handle.id)
    assert (stored.version, stored.state.items) == (1, {})


async def test_an_edit_that_never_ran_and_never_will_is_refused() -> None:
    e = make_env(LostAnswers)
    handle = await e.manager.create(ALICE, BASKET)  # remembered: the edit starts with its CAS
    assert isinstance(e.store, LostAnswers)
    e.store.plan["replace"] = ["instead"]  # the compare-and-set's answer is lost; it never ran
    with pending(e.store, ALICE.digest, 5), pytest.raises(Refused) as refused:
        await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert isinstance(refused.value.cause, StoreUnavailable)
    stored = await e.manager.get(ALICE, BASKET, handle.id)  # the fence took its version
    assert stored.state.items == {}


async def test_an_edit_that_applied_unanswered_is_a_success() -> None:
    e = make_env(LostAnswers)
    handle = await e.manager.create(ALICE, BASKET)
    assert isinstance(e.store, LostAnswers)
    e.store.plan["replace"] = ["after"]
    with pending(e.store, ALICE.digest, 5) as charge:
        updated = await e.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert updated.handle.state.items == {"fig": 1} and charge.refused is None
