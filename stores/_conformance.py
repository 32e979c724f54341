"""The test cases of ``stores.testing.StoreConformance``, grouped by theme.

Each test takes the ``store_harness`` fixture and talks to the store only through
the contract in ``stores.base``.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from ._harness import StoreHarness
from .base import Counter, CountExceeded, LimitExceeded, Record

OWNER = "owner-a"
OTHER_OWNER = "owner-b"
GROUP = "basket"
CLOSED = "basket:closed"
TTL = 1000.0
"""The suite's usual lifetime: long, so that no real-time expiry can interfere."""

MEBIBYTE = bytes(range(256)) * 4096


class BasicCases:
    """create, get, replace, delete and list on live records."""

    async def test_create_returns_version_one(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        record = await store.create(OWNER, GROUP, "k", b"v", expires_at=expires_at)
        assert record == Record(b"v", 1, expires_at)
        assert await store.get(OWNER, GROUP, "k") == record

    async def test_create_on_live_address_changes_nothing(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        first = await store.create(OWNER, GROUP, "k", b"first", expires_at=now + TTL)
        assert await store.create(OWNER, GROUP, "k", b"second", expires_at=now + 2 * TTL) is None
        assert await store.get(OWNER, GROUP, "k") == first

    async def test_get_unknown_returns_none(self, store_harness: StoreHarness) -> None:
        assert await store_harness.store.get(OWNER, GROUP, "missing") is None

    async def test_get_renews_until(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v", expires_at=now + TTL)
        renewed = await store.get(OWNER, GROUP, "k", renew_until=now + 3 * TTL)
        assert renewed == Record(b"v", 1, now + 3 * TTL)
        store_harness.advance(2 * TTL)
        assert await store.get(OWNER, GROUP, "k") == renewed
        assert await store.list(OWNER, GROUP) == {"k": renewed}

    async def test_replace_is_compare_and_set(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v1", expires_at=now + TTL)
        second = await store.replace(OWNER, GROUP, "k", b"v2", version=1, expires_at=now + TTL)
        assert second == Record(b"v2", 2, now + TTL)
        assert (
            await store.replace(OWNER, GROUP, "k", b"stale", version=1, expires_at=now + TTL)
            is None
        )
        third = await store.replace(OWNER, GROUP, "k", b"v3", version=2, expires_at=now + 2 * TTL)
        assert third == Record(b"v3", 3, now + 2 * TTL)
        assert await store.get(OWNER, GROUP, "k") == third

    async def test_replace_unknown_returns_none(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        assert await store.replace(OWNER, GROUP, "k", b"v", version=1, expires_at=now + TTL) is None
        assert await store.get(OWNER, GROUP, "k") is None

    async def test_delete(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v", expires_at=now + TTL)
        assert await store.delete(OWNER, GROUP, "k") is True
        assert await store.get(OWNER, GROUP, "k") is None
        assert await store.delete(OWNER, GROUP, "k") is False
        assert await store.list(OWNER, GROUP) == {}
        again = await store.create(OWNER, GROUP, "k", b"again", expires_at=now + TTL)
        assert again == Record(b"again", 1, now + TTL)

    async def test_delete_at_version(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v", expires_at=now + TTL)
        await store.replace(OWNER, GROUP, "k", b"v2", version=1, expires_at=now + TTL)
        assert await store.delete(OWNER, GROUP, "k", version=1) is False
        assert await store.get(OWNER, GROUP, "k") == Record(b"v2", 2, now + TTL)
        assert await store.delete(OWNER, GROUP, "k", version=2) is True
        assert await store.get(OWNER, GROUP, "k") is None

    async def test_list_holds_the_owners_records_in_the_group(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        a = await store.create(OWNER, GROUP, "a", b"A", expires_at=now + TTL)
        b = await store.create(OWNER, GROUP, "b", b"B", expires_at=now + 2 * TTL)
        await store.create(OWNER, "other-group", "c", b"C", expires_at=now + TTL)
        await store.create(OTHER_OWNER, GROUP, "d", b"D", expires_at=now + TTL)
        assert await store.list(OWNER, GROUP) == {"a": a, "b": b}
        b2 = await store.replace(OWNER, GROUP, "b", b"B2", version=1, expires_at=now + TTL)
        await store.delete(OWNER, GROUP, "a")
        assert await store.list(OWNER, GROUP) == {"b": b2}
        assert await store.list(OWNER, "no-such-group") == {}

    async def test_owners_are_isolated(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        mine = await store.create(OWNER, GROUP, "k", b"mine", expires_at=now + TTL)
        theirs = await store.create(OTHER_OWNER, GROUP, "k", b"theirs", expires_at=now + TTL)
        assert mine is not None and theirs is not None
        assert await store.replace(OTHER_OWNER, GROUP, "k", b"x", version=1, expires_at=now + TTL)
        assert await store.delete(OTHER_OWNER, GROUP, "k") is True
        assert await store.get(OWNER, GROUP, "k") == mine
        assert await store.list(OWNER, GROUP) == {"k": mine}

    async def test_addresses_never_collide(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        addresses = [
            ("o", "g:x", "k"), ("o", "g", "x:k"), ("o:g", "x", "k"), ("o", "g:x:k", ""),
            ("o{x}", "g", "k"), ("o}", "g", "k"), ("o", "g", "{o}"), ("o%7D", "g", "k"),
            ("", "g", "k"), ("o", "", "k"), ("o", "g", ""), ("ö ✓", "g ✓", "k ✓"),
        ]  # fmt: skip
        for owner, group, key in addresses:
            value = repr((owner, group, key)).encode()
            assert await store.create(owner, group, key, value, expires_at=now + TTL)
        for owner, group, key in addresses:
            record = await store.get(owner, group, key)
            assert record is not None and record.value == repr((owner, group, key)).encode()
            expected = {k for o, g, k in addresses if (o, g) == (owner, group)}
            assert set(await store.list(owner, group)) == expected

    @pytest.mark.parametrize(
        "value", [b"", b"\x00", bytes(range(256)), "ünï".encode(), MEBIBYTE], ids=len
    )
    async def test_values_round_trip(self, store_harness: StoreHarness, value: bytes) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", value, expires_at=now + TTL)
        assert (await store.get(OWNER, GROUP, "k")) == Record(value, 1, now + TTL)
        await store.replace(OWNER, GROUP, "k", value + value, version=1, expires_at=now + TTL)
        assert await store.list(OWNER, GROUP) == {"k": Record(value + value, 2, now + TTL)}

    async def test_aclose_is_idempotent(self, store_harness: StoreHarness) -> None:
        await store_harness.store.aclose()
        await store_harness.store.aclose()


class LimitCases:
    """``create(limit=...)`` counts the owner's live records in the group."""

    async def test_limit_refuses_creation(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        for key in "ab":
            assert await store.create(OWNER, GROUP, key, b"", expires_at=now + TTL, limit=2)
        with pytest.raises(LimitExceeded) as caught:
            await store.create(OWNER, GROUP, "c", b"", expires_at=now + TTL, limit=2)
        assert caught.value.limit == 2
        assert await store.get(OWNER, GROUP, "c") is None
        assert await store.create(OWNER, GROUP, "c", b"", expires_at=now + TTL, limit=3)

    async def test_live_address_wins_over_limit(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "a", b"", expires_at=now + TTL)
        assert await store.create(OWNER, GROUP, "a", b"", expires_at=now + TTL, limit=1) is None

    async def test_limit_counts_only_this_owner_and_group(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OTHER_OWNER, GROUP, "a", b"", expires_at=now + TTL)
        await store.create(OWNER, "other-group", "a", b"", expires_at=now + TTL)
        assert await store.create(OWNER, GROUP, "a", b"", expires_at=now + TTL, limit=1)

    async def test_limit_ignores_deleted_records(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "a", b"", expires_at=now + TTL)
        await store.delete(OWNER, GROUP, "a")
        assert await store.create(OWNER, GROUP, "b", b"", expires_at=now + TTL, limit=1)


class ExpiryCases:
    """A record whose ``expires_at`` is not in the future is gone for every method."""

    async def _expired(self, store_harness: StoreHarness, key: str = "k") -> None:
        """Create ``key`` and move time exactly to its deadline."""
        now = store_harness.now()
        await store_harness.store.create(OWNER, GROUP, key, b"old", expires_at=now + TTL)
        store_harness.advance(TTL - 1)
        assert await store_harness.store.get(OWNER, GROUP, key) is not None
        store_harness.advance(1)

    async def test_get(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness)
        assert await store_harness.store.get(OWNER, GROUP, "k") is None

    async def test_get_does_not_renew(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness)
        later = store_harness.now() + TTL
        assert await store_harness.store.get(OWNER, GROUP, "k", renew_until=later) is None
        assert await store_harness.store.get(OWNER, GROUP, "k") is None

    async def test_replace(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness)
        later = store_harness.now() + TTL
        store = store_harness.store
        assert await store.replace(OWNER, GROUP, "k", b"x", version=1, expires_at=later) is None
        assert await store.get(OWNER, GROUP, "k") is None

    async def test_delete(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness)
        assert await store_harness.store.delete(OWNER, GROUP, "k", version=1) is False
        assert await store_harness.store.delete(OWNER, GROUP, "k") is False

    async def test_list(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness, "old")
        store, now = store_harness.store, store_harness.now()
        fresh = await store.create(OWNER, GROUP, "new", b"new", expires_at=now + TTL)
        assert await store.list(OWNER, GROUP) == {"new": fresh}

    async def test_create(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness)
        store, now = store_harness.store, store_harness.now()
        record = await store.create(OWNER, GROUP, "k", b"new", expires_at=now + TTL)
        assert record == Record(b"new", 1, now + TTL)
        assert await store.get(OWNER, GROUP, "k") == record

    async def test_limit(self, store_harness: StoreHarness) -> None:
        await self._expired(store_harness, "old")
        store, now = store_harness.store, store_harness.now()
        assert await store.create(OWNER, GROUP, "new", b"", expires_at=now + TTL, limit=1)

    async def test_renewal_can_shorten(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v", expires_at=now + 2 * TTL)
        assert await store.get(OWNER, GROUP, "k", renew_until=now + TTL)
        store_harness.advance(TTL)
        assert await store.get(OWNER, GROUP, "k") is None

    async def test_replace_sets_expiry(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "a", b"", expires_at=now + TTL)
        await store.create(OWNER, GROUP, "b", b"", expires_at=now + 2 * TTL)
        await store.replace(OWNER, GROUP, "a", b"", version=1, expires_at=now + 3 * TTL)
        await store.replace(OWNER, GROUP, "b", b"", version=1, expires_at=now + TTL)
        store_harness.advance(TTL)
        assert set(await store.list(OWNER, GROUP)) == {"a"}


class ConcurrencyCases:
    """Each method is one atomic step, however many tasks call it at once."""

    async def test_read_modify_write_loses_no_update(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        await store.create(OWNER, GROUP, "k", b"", expires_at=expires_at)

        async def attempt(item: int) -> bool:
            record = await store.get(OWNER, GROUP, "k")
            assert record is not None
            await anyio.lowlevel.checkpoint()  # let the others read this version too
            value = record.value + b"%d," % item
            written = await store.replace(
                OWNER, GROUP, "k", value, version=record.version, expires_at=expires_at
            )
            return written is not None

        # All 200 writers try at once; the losers retry four at a time, as a
        # client's back-off would spread them: at once, they would make some
        # 20,000 attempts.
        retries = anyio.CapacityLimiter(4)

        async def append(item: int) -> None:
            if not await attempt(item):
                async with retries:
                    while not await attempt(item):
                        pass

        async with anyio.create_task_group() as tg:
            for item in range(200):
                tg.start_soon(append, item)
        final = await store.get(OWNER, GROUP, "k")
        assert final is not None and final.version == 201
        assert sorted(int(item) for item in final.value.split(b",")[:-1]) == list(range(200))

    async def test_one_create_wins(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        winners: list[Record] = []

        async def create(item: int) -> None:
            record = await store.create(OWNER, GROUP, "k", b"%d" % item, expires_at=expires_at)
            if record is not None:
                winners.append(record)

        async with anyio.create_task_group() as tg:
            for item in range(50):
                tg.start_soon(create, item)
        assert len(winners) == 1
        assert await store.get(OWNER, GROUP, "k") == winners[0]

    async def test_limit_holds_under_concurrency(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        outcomes: list[bool] = []

        async def create(key: str) -> None:
            try:
                created = await store.create(
                    OWNER, GROUP, key, b"", expires_at=expires_at, limit=10
                )
            except LimitExceeded:
                outcomes.append(False)
            else:
                outcomes.append(created is not None)

        async with anyio.create_task_group() as tg:
            for item in range(30):
                tg.start_soon(create, f"k{item}")
        assert sorted(outcomes) == [False] * 20 + [True] * 10
        assert len(await store.list(OWNER, GROUP)) == 10


class CounterCases:
    """``incr``: an atomic counter in a record, with the expiry of its first call."""

    async def test_counts_from_one(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        counts = [await store.incr(OWNER, "calls", "k", expires_at=expires_at) for _ in range(3)]
        assert counts == [1, 2, 3]
        assert await store.get(OWNER, "calls", "k") == Record(b"3", 3, expires_at)

    async def test_keeps_its_first_expiry(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.incr(OWNER, "calls", "k", expires_at=now + TTL)
        assert await store.incr(OWNER, "calls", "k", expires_at=now + 3 * TTL) == 2
        store_harness.advance(TTL)
        assert await store.get(OWNER, "calls", "k") is None

    async def test_restarts_at_one_after_expiry(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.incr(OWNER, "calls", "k", expires_at=now + TTL)
        await store.incr(OWNER, "calls", "k", expires_at=now + TTL)
        store_harness.advance(TTL)
        later = store_harness.now() + TTL
        assert await store.incr(OWNER, "calls", "k", expires_at=later) == 1
        assert await store.list(OWNER, "calls") == {"k": Record(b"1", 1, later)}

    async def test_counters_are_isolated(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        await store.incr(OWNER, "calls", "k", expires_at=expires_at)
        await store.incr(OWNER, "calls", "k", expires_at=expires_at)
        assert await store.incr(OTHER_OWNER, "calls", "k", expires_at=expires_at) == 1
        assert await store.incr(OWNER, "other-calls", "k", expires_at=expires_at) == 1
        assert await store.incr(OWNER, "calls", "j", expires_at=expires_at) == 1

    async def test_concurrent_calls_get_distinct_counts(self, store_harness: StoreHarness) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        counts: list[int] = []

        async def incr() -> None:
            counts.append(await store.incr(OWNER, "calls", "k", expires_at=expires_at))

        async with anyio.create_task_group() as tg:
            for _ in range(100):
                tg.start_soon(incr)
        assert sorted(counts) == list(range(1, 101))


class RetireCases:
    """``retire``: a live record moves to another group in one step, optionally capped."""

    async def test_moves_the_record(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"state", expires_at=now + TTL)
        retired = await store.retire(
            OWNER, GROUP, "k", into=CLOSED, value=b"tomb", expires_at=now + 2 * TTL
        )
        assert retired is True
        assert await store.get(OWNER, GROUP, "k") is None
        assert await store.list(OWNER, GROUP) == {}
        assert await store.get(OWNER, CLOSED, "k") == Record(b"tomb", 1, now + 2 * TTL)
        assert await store.list(OWNER, CLOSED) == {"k": Record(b"tomb", 1, now + 2 * TTL)}
        assert await store.create(OWNER, GROUP, "j", b"", expires_at=now + TTL, limit=1)

    async def test_at_version(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v1", expires_at=now + TTL)
        second = await store.replace(OWNER, GROUP, "k", b"v2", version=1, expires_at=now + TTL)
        stale = await store.retire(
            OWNER, GROUP, "k", into=CLOSED, value=b"tomb", expires_at=now + TTL, version=1
        )
        assert stale is False
        assert await store.get(OWNER, GROUP, "k") == second
        assert await store.get(OWNER, CLOSED, "k") is None
        assert await store.retire(
            OWNER, GROUP, "k", into=CLOSED, value=b"tomb", expires_at=now + TTL, version=2
        )
        assert await store.get(OWNER, GROUP, "k") is None

    async def test_missing_or_expired_changes_nothing(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, CLOSED, "k", b"earlier", expires_at=now + 3 * TTL)
        assert not await store.retire(
            OWNER, GROUP, "k", into=CLOSED, value=b"tomb", expires_at=now + 2 * TTL
        )
        await store.create(OWNER, GROUP, "old", b"", expires_at=now + TTL)
        store_harness.advance(TTL)
        assert not await store.retire(
            OWNER, GROUP, "old", into=CLOSED, value=b"tomb", expires_at=now + 2 * TTL
        )
        assert await store.list(OWNER, CLOSED) == {"k": Record(b"earlier", 1, now + 3 * TTL)}

    async def test_overwrites_a_record_in_the_other_group(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, CLOSED, "k", b"earlier", expires_at=now + 3 * TTL)
        await store.create(OWNER, GROUP, "k", b"state", expires_at=now + TTL)
        assert await store.retire(
            OWNER, GROUP, "k", into=CLOSED, value=b"tomb", expires_at=now + 2 * TTL
        )
        assert await store.get(OWNER, CLOSED, "k") == Record(b"tomb", 1, now + 2 * TTL)
        store_harness.advance(2 * TTL)
        assert await store.list(OWNER, CLOSED) == {}

    async def test_keep_drops_those_that_expire_soonest(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        for n in range(6):
            key = f"k{n}"
            await store.create(OWNER, GROUP, key, b"", expires_at=now + TTL)
            expires = now + (10 - n) * TTL  # later closes expire sooner: the new one too
            assert await store.retire(
                OWNER, GROUP, key, into=CLOSED, value=b"%d" % n, expires_at=expires, keep=3
            )
            assert len(await store.list(OWNER, CLOSED)) == min(n + 1, 3)
        # k0, k1 expire last; k5 is the newest and is always kept.
        assert set(await store.list(OWNER, CLOSED)) == {"k0", "k1", "k5"}
        await store.create(OTHER_OWNER, GROUP, "x", b"", expires_at=now + TTL)
        assert await store.retire(
            OTHER_OWNER, GROUP, "x", into=CLOSED, value=b"", expires_at=now + TTL, keep=3
        )
        assert len(await store.list(OWNER, CLOSED)) == 3

    async def test_one_of_concurrent_retires_wins(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"state", expires_at=now + TTL)
        winners: list[int] = []

        async def retire(item: int) -> None:
            value = b"%d" % item
            if await store.retire(
                OWNER, GROUP, "k", into=CLOSED, value=value, expires_at=now + TTL, version=1
            ):
                winners.append(item)

        async with anyio.create_task_group() as tg:
            for item in range(50):
                tg.start_soon(retire, item)
        assert len(winners) == 1
        assert await store.get(OWNER, CLOSED, "k") == Record(b"%d" % winners[0], 1, now + TTL)


class ReplaceOrReadCases:
    """``replace_or_read``: ``replace``, answered with the live record when it does not apply."""

    async def test_applies_as_replace(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v1", expires_at=now + TTL)
        answer = await store.replace_or_read(
            OWNER, GROUP, "k", b"v2", version=1, expires_at=now + 2 * TTL
        )
        assert answer == (True, Record(b"v2", 2, now + 2 * TTL))
        assert await store.get(OWNER, GROUP, "k") == Record(b"v2", 2, now + 2 * TTL)

    async def test_stale_version_answers_the_live_record(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v1", expires_at=now + TTL)
        second = await store.replace(OWNER, GROUP, "k", b"v2", version=1, expires_at=now + TTL)
        answer = await store.replace_or_read(
            OWNER, GROUP, "k", b"stale", version=1, expires_at=now + 3 * TTL
        )
        assert answer == (False, second)
        store_harness.advance(TTL)  # the refused write did not renew the record either
        assert await store.get(OWNER, GROUP, "k") is None

    async def test_missing_or_expired_answers_none(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        missing = await store.replace_or_read(
            OWNER, GROUP, "k", b"v", version=1, expires_at=now + TTL
        )
        assert missing == (False, None)
        await store.create(OWNER, GROUP, "old", b"v", expires_at=now + TTL)
        store_harness.advance(TTL)
        later = store_harness.now() + TTL
        expired = await store.replace_or_read(
            OWNER, GROUP, "old", b"x", version=1, expires_at=later
        )
        assert expired == (False, None)
        assert await store.get(OWNER, GROUP, "old") is None
        assert await store.list(OWNER, GROUP) == {}

    async def test_writers_that_guess_the_version_lose_no_update(
        self, store_harness: StoreHarness
    ) -> None:
        store, expires_at = store_harness.store, store_harness.now() + TTL
        await store.create(OWNER, GROUP, "k", b"", expires_at=expires_at)
        guess = Record(b"", 1, expires_at)  # what every writer believes, mostly wrongly
        retries = anyio.CapacityLimiter(4)

        async def append(item: int) -> None:
            record: Record | None = guess
            async with retries:
                while record is not None:
                    value = record.value + b"%d," % item
                    applied, current = await store.replace_or_read(
                        OWNER, GROUP, "k", value, version=record.version, expires_at=expires_at
                    )
                    record = None if applied else current
                    assert applied or current is not None

        async with anyio.create_task_group() as tg:
            for item in range(100):
                tg.start_soon(append, item)
        final = await store.get(OWNER, GROUP, "k")
        assert final is not None and final.version == 101
        assert sorted(int(item) for item in final.value.split(b",")[:-1]) == list(range(100))


class ChargeCases:
    """``count_and_get`` and ``count_and_replace_or_read``: count a charge, then operate."""

    @staticmethod
    def charge(now: float, *limits: int) -> list[Counter]:
        return [Counter("calls", f"c{n}", now + TTL, limit) for n, limit in enumerate(limits)]

    async def test_counts_and_reads(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        created = await store.create(OWNER, GROUP, "k", b"v", expires_at=now + TTL)
        charge = self.charge(now, 5, 5)
        for _ in range(2):
            assert await store.count_and_get(OWNER, GROUP, "k", charge=charge) == created
        assert await store.count_and_get(OWNER, GROUP, "missing", charge=charge) is None
        counted = await store.list(OWNER, "calls")
        assert counted == {"c0": Record(b"3", 3, now + TTL), "c1": Record(b"3", 3, now + TTL)}
        renewed = await store.count_and_get(
            OWNER, GROUP, "k", charge=charge, renew_until=now + 2 * TTL
        )
        assert renewed == Record(b"v", 1, now + 2 * TTL)

    async def test_counts_and_replaces(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v1", expires_at=now + TTL)
        charge = self.charge(now, 5)
        answer = await store.count_and_replace_or_read(
            OWNER, GROUP, "k", b"v2", version=1, expires_at=now + TTL, charge=charge
        )
        assert answer == (True, Record(b"v2", 2, now + TTL))
        stale = await store.count_and_replace_or_read(
            OWNER, GROUP, "k", b"v3", version=1, expires_at=now + TTL, charge=charge
        )
        assert stale == (False, Record(b"v2", 2, now + TTL))
        assert await store.incr(OWNER, "calls", "c0", expires_at=now + TTL) == 3

    async def test_a_count_past_its_limit_refuses_the_read(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"v", expires_at=now + TTL)
        charge = self.charge(now, 2)
        for _ in range(2):
            await store.count_and_get(OWNER, GROUP, "k", charge=charge)
        with pytest.raises(CountExceeded) as refused:
            await store.count_and_get(OWNER, GROUP, "k", charge=charge, renew_until=now + 3 * TTL)
        assert (refused.value.counter, refused.value.count) == (charge[0], 3)
        assert await store.get(OWNER, GROUP, "k") == Record(b"v", 1, now + TTL)  # not renewed

    async def test_a_count_past_its_limit_leaves_the_record_untouched(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        created = await store.create(OWNER, GROUP, "k", b"v1", expires_at=now + TTL)
        charge = self.charge(now, 1)
        await store.count_and_get(OWNER, GROUP, "k", charge=charge)
        with pytest.raises(CountExceeded):
            await store.count_and_replace_or_read(
                OWNER, GROUP, "k", b"v2", version=1, expires_at=now + 2 * TTL, charge=charge
            )
        assert await store.get(OWNER, GROUP, "k") == created

    async def test_counters_after_the_one_past_its_limit_are_not_counted(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        charge = self.charge(now, 1, 10)
        await store.count_and_get(OWNER, GROUP, "k", charge=charge)
        with pytest.raises(CountExceeded) as refused:
            await store.count_and_get(OWNER, GROUP, "k", charge=charge)
        assert refused.value.counter == charge[0]
        assert await store.incr(OWNER, "calls", "c1", expires_at=now + TTL) == 2

    async def test_counters_expire_and_start_again(self, store_harness: StoreHarness) -> None:
        store, now = store_harness.store, store_harness.now()
        charge = self.charge(now, 1)
        await store.count_and_get(OWNER, GROUP, "k", charge=charge)
        assert await store.get(OWNER, "calls", "c0") == Record(b"1", 1, now + TTL)
        store_harness.advance(TTL)
        assert await store.get(OWNER, "calls", "c0") is None
        later = self.charge(store_harness.now(), 1)
        await store.count_and_get(OWNER, GROUP, "k", charge=later)  # a new window: 1 again
        assert await store.get(OWNER, "calls", "c0") == Record(b"1", 1, later[0].expires_at)

    async def test_concurrent_charges_admit_exactly_the_limit(
        self, store_harness: StoreHarness
    ) -> None:
        store, now = store_harness.store, store_harness.now()
        await store.create(OWNER, GROUP, "k", b"", expires_at=now + TTL)
        charge, outcomes = self.charge(now, 10), []

        async def read() -> None:
            try:
                await store.count_and_get(OWNER, GROUP, "k", charge=charge)
            except CountExceeded:
                outcomes.append(False)
            else:
                outcomes.append(True)

        async with anyio.create_task_group() as tg:
            for _ in range(30):
                tg.start_soon(read)
        assert sorted(outcomes) == [False] * 20 + [True] * 10
