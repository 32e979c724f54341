"""MemoryStore beyond the contract: how it reclaims expired records, and ``len``."""

from __future__ import annotations

from typing import Any

import pytest

from stores import MemoryStore, StoreFull
from stores.testing import ManualClock

pytestmark = pytest.mark.anyio

TTL = 100.0


class NoScans(dict[Any, Any]):
    """A dict that fails the test if anyone walks through it."""

    def __iter__(self) -> Any:
        raise AssertionError("the store scanned all its records")

    def items(self) -> Any:
        raise AssertionError("the store scanned all its records")

    def values(self) -> Any:
        raise AssertionError("the store scanned all its records")

    def keys(self) -> Any:
        raise AssertionError("the store scanned all its records")


async def test_len_counts_records_until_they_are_reclaimed() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    for key, lifetime in [("short", TTL), ("long", 2 * TTL), ("other", 2 * TTL)]:
        await store.create("o", "g", key, b"", expires_at=clock() + lifetime)
    assert len(store) == 3
    clock.advance(TTL)
    assert len(store) == 3  # expired, not reclaimed yet
    await store.list("o", "g")
    assert len(store) == 2
    clock.advance(TTL)
    assert await store.get("o", "g", "long") is None  # reading reclaims too
    assert len(store) == 1


async def test_reclaiming_never_scans_all_records() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    store._records = NoScans()
    for number in range(1000):
        await store.create("o", "g", f"k{number}", b"", expires_at=clock() + TTL + number)
    clock.advance(TTL + 500)
    await store.create("o", "g", "fresh", b"", expires_at=clock() + TTL)
    assert len(store) == 500
    assert await store.get("o", "g", "k999") is not None
    assert await store.replace("o", "g", "k999", b"x", version=1, expires_at=clock() + TTL)
    assert await store.delete("o", "g", "k998")
    assert len(await store.list("o", "g")) == 499


async def test_renewals_do_not_grow_the_deadline_heap_without_bound() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    await store.create("o", "g", "k", b"", expires_at=clock() + TTL)
    for step in range(5000):
        assert await store.get("o", "g", "k", renew_until=clock() + TTL + step)
    assert len(store._deadlines) <= 2 * len(store) + 1024 + 1
    clock.advance(TTL + 5000)
    await store.list("o", "g")
    assert len(store) == 0


async def test_max_records_bounds_the_store() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock, max_records=3)
    now = clock()
    for key in "abc":
        assert await store.create("o", "g", key, b"", expires_at=now + 10)
    with pytest.raises(StoreFull) as caught:
        await store.create("o", "g", "d", b"", expires_at=now + 100)
    assert caught.value.applied is False
    assert str(caught.value) == "the memory store holds its most records (3)"
    with pytest.raises(StoreFull):
        await store.incr("o", "calls", "n", expires_at=now + 100)
    assert len(store) == 3 and await store.get("o", "g", "d") is None
    # What does not add a record still works when full.
    assert await store.replace("o", "g", "a", b"x", version=1, expires_at=now + 100)
    assert await store.retire("o", "g", "b", into="g:closed", value=b"", expires_at=now + 100)
    assert await store.delete("o", "g", "c")
    assert await store.create("o", "g", "d", b"", expires_at=now + 100)
    assert len(store) == 3


async def test_a_full_store_reclaims_what_expired_before_refusing() -> None:
    clock = ManualClock()
    store = MemoryStore(clock=clock, max_records=2)
    now = clock()
    await store.create("o", "g", "a", b"", expires_at=now + 10)
    await store.create("o", "g", "b", b"", expires_at=now + 10)
    clock.advance(10)
    assert await store.create("o", "g", "c", b"", expires_at=now + 100)
    assert len(store) == 1


def test_max_records_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_records must be at least 1"):
        MemoryStore(max_records=0)
