"""MemoryStore reclaims a mass expiry a bounded batch per call, and hides the rest."""

from __future__ import annotations

import pytest

from stores import MemoryStore
from stores.memory import RECLAIM_PER_CALL
from stores.testing import ManualClock

pytestmark = pytest.mark.anyio

TTL = 100.0
MANY = 3 * RECLAIM_PER_CALL + 10


async def filled(clock: ManualClock, owner: str = "crowd") -> MemoryStore:
    """A store with MANY records that all expire at once, TTL from now."""
    store = MemoryStore(clock=clock)
    for number in range(MANY):
        await store.create(owner, "g", f"k{number}", b"", expires_at=clock() + TTL)
    return store


async def test_each_call_reclaims_a_bounded_batch_until_none_are_left() -> None:
    clock = ManualClock()
    store = await filled(clock)
    clock.advance(TTL)
    held = [len(store)]
    for number in range(5):
        await store.create("o", "g", f"new{number}", b"", expires_at=clock() + TTL)
        held.append(len(store))
    assert held[1] == MANY - RECLAIM_PER_CALL + 1  # one batch, plus the record it made
    assert held[-1] == 5  # all expired records gone within a few calls


async def test_expired_records_are_invisible_before_they_are_reclaimed() -> None:
    clock = ManualClock()
    store = await filled(clock)
    clock.advance(TTL)
    await store.create("o", "g", "trigger", b"", expires_at=clock() + TTL)
    assert len(store) > RECLAIM_PER_CALL  # not all reclaimed yet
    assert await store.get("crowd", "g", f"k{MANY - 1}") is None
    assert await store.list("crowd", "g") == {}
    assert not await store.replace("crowd", "g", "k0", b"x", version=1, expires_at=clock() + TTL)
    assert not await store.delete("crowd", "g", "k1")


async def test_a_limit_counts_only_live_records_before_they_are_reclaimed() -> None:
    clock = ManualClock()
    store = await filled(clock, owner="first")
    clock.advance(1)  # so "first"'s records expire, and come off the heap, first
    for number in range(10):
        await store.create("capped", "g", f"c{number}", b"", expires_at=clock() + TTL)
    clock.advance(TTL)
    # The reclaim batch is spent on "first"'s records; "capped"'s 10 are expired
    # but still indexed, and must not count against its limit of 10.
    record = await store.create("capped", "g", "fresh", b"v", expires_at=clock() + TTL, limit=10)
    assert record is not None
    assert list(await store.list("capped", "g")) == ["fresh"]
