"""``MemoryStore``: the embedded default, for one process.

Each method runs without awaiting, so it is atomic for every task of the event
loop. Expired records are reclaimed lazily from a heap of deadlines: each call
pops what has expired since the last one, at most ``RECLAIM_PER_CALL`` records, so
no call scans the whole store and none stalls the event loop when many expire at
once (a million at once took 12 s in one call); the rest go in the next calls.
Until then an expired record is invisible: reads, lists and limits skip it.
Not shared between processes: use ``stores.redis.RedisStore`` for replicas.

Global bound: at most ``max_records`` records (one million by default) are held.
A write that would add a record past it first reclaims what has expired; if
the store is still full, it raises ``StoreFull`` and changes nothing, as Redis
does with ``maxmemory`` and ``noeviction``: nothing live is evicted behind a
caller's back. Writes that do not add a record (``replace``, renewals, an
``incr`` of a live counter, a ``retire`` over an existing tombstone) still work,
and so do deletes and closes, which free room.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence

from .base import Counter, CountExceeded, LimitExceeded, Record, Store, StoreFull

__all__ = ["MemoryStore"]

_Address = tuple[str, str, str]

RECLAIM_PER_CALL = 512
"""The most expired records one call reclaims (stale heap entries are not counted)."""

MAX_RECORDS = 1_000_000
"""The default bound on the records one ``MemoryStore`` holds."""


class MemoryStore(Store):
    """Records in a dict, with a per-owner index and an injectable ``clock``.

    Args:
        clock: Unix seconds; the contract's notion of now.
        max_records: The most records held at once (see the module docstring).
    """

    def __init__(
        self, *, clock: Callable[[], float] = time.time, max_records: int = MAX_RECORDS
    ) -> None:
        if max_records < 1:
            raise ValueError("max_records must be at least 1")
        self._clock = clock
        self.max_records = max_records
        self._records: dict[_Address, Record] = {}
        self._index: dict[tuple[str, str], set[str]] = {}
        self._deadlines: list[tuple[float, _Address]] = []

    def __len__(self) -> int:
        """The number of records held, live or not yet reclaimed."""
        return len(self._records)

    async def create(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        expires_at: float,
        limit: int | None = None,
    ) -> Record | None:
        now = self._reclaim()
        address = (owner, group, key)
        if self._live(address, now) is not None:
            return None
        if limit is not None and self._count(owner, group, now, limit) >= limit:
            raise LimitExceeded(limit)
        self._make_room(address, now)
        return self._put(address, Record(value, 1, expires_at))

    async def get(
        self, owner: str, group: str, key: str, *, renew_until: float | None = None
    ) -> Record | None:
        address = (owner, group, key)
        record = self._live(address, self._clock())
        if record is None or renew_until is None:
            return record
        return self._put(address, Record(record.value, record.version, renew_until))

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
        address = (owner, group, key)
        record = self._live(address, self._clock())
        if record is None or record.version != version:
            return None
        return self._put(address, Record(value, version + 1, expires_at))

    async def replace_or_read(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
    ) -> tuple[bool, Record | None]:
        address = (owner, group, key)
        record = self._live(address, self._clock())
        if record is None or record.version != version:
            return False, record
        return True, self._put(address, Record(value, version + 1, expires_at))

    async def delete(self, owner: str, group: str, key: str, *, version: int | None = None) -> bool:
        address = (owner, group, key)
        record = self._live(address, self._clock())
        if record is None or (version is not None and record.version != version):
            return False
        self._drop(address)
        return True

    async def count_and_get(
        self,
        owner: str,
        group: str,
        key: str,
        *,
        charge: Sequence[Counter],
        renew_until: float | None = None,
    ) -> Record | None:
        self._charge(owner, charge)  # no await in between: one atomic step
        return await self.get(owner, group, key, renew_until=renew_until)

    async def count_and_replace_or_read(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
        charge: Sequence[Counter],
    ) -> tuple[bool, Record | None]:
        self._charge(owner, charge)
        return await self.replace_or_read(
            owner, group, key, value, version=version, expires_at=expires_at
        )

    async def incr(self, owner: str, group: str, key: str, *, expires_at: float) -> int:
        return self._incr((owner, group, key), expires_at)

    def _charge(self, owner: str, charge: Sequence[Counter]) -> None:
        for counter in charge:
            count = self._incr((owner, counter.group, counter.key), counter.expires_at)
            if count > counter.limit:
                raise CountExceeded(counter, count)

    def _incr(self, address: _Address, expires_at: float) -> int:
        now = self._reclaim()
        record = self._live(address, now)
        if record is None:
            self._make_room(address, now)
            self._put(address, Record(b"1", 1, expires_at))
            return 1
        count = record.version + 1
        # Same expiry: no new deadline on the heap.
        self._records[address] = Record(str(count).encode(), count, record.expires_at)
        return count

    async def retire(
        self,
        owner: str,
        group: str,
        key: str,
        *,
        into: str,
        value: bytes,
        expires_at: float,
        version: int | None = None,
        keep: int | None = None,
    ) -> bool:
        now = self._reclaim()
        address = (owner, group, key)
        record = self._live(address, now)
        if record is None or (version is not None and record.version != version):
            return False
        self._drop(address)
        self._put((owner, into, key), Record(value, 1, expires_at))
        if keep is not None:
            self._trim(owner, into, key, now, keep)
        return True

    async def list(self, owner: str, group: str) -> dict[str, Record]:
        now = self._reclaim()
        keys = list(self._index.get((owner, group), ()))
        records = {key: self._live((owner, group, key), now) for key in keys}
        return {key: record for key, record in records.items() if record is not None}

    def _count(self, owner: str, group: str, now: float, limit: int) -> int:
        """Live records of ``(owner, group)``; expired ones are dropped on the way."""
        keys = self._index.get((owner, group), ())
        if len(keys) < limit:
            return len(keys)
        for key in list(keys):
            self._live((owner, group, key), now)
        return len(self._index.get((owner, group), ()))

    def _trim(self, owner: str, group: str, kept: str, now: float, keep: int) -> None:
        """Drop ``(owner, group)``'s records beyond ``keep``, soonest to expire first."""
        keys = self._index.get((owner, group), set())
        if len(keys) <= keep:
            return
        live = [(owner, group, key) for key in list(keys) if key != kept]
        records = [(r.expires_at, a) for a in live if (r := self._live(a, now)) is not None]
        excess = len(records) + 1 - keep
        if excess > 0:
            for _, address in heapq.nsmallest(excess, records):
                self._drop(address)

    def _make_room(self, address: _Address, now: float) -> None:
        """Raise ``StoreFull`` if adding a record at ``address`` would pass ``max_records``."""
        if len(self._records) < self.max_records or address in self._records:
            return
        self._reclaim_all(now)
        if len(self._records) >= self.max_records:
            raise StoreFull(f"the memory store holds its most records ({self.max_records})")

    def _reclaim_all(self, now: float) -> None:
        """Drop every record whose deadline has passed (only when the store is full)."""
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= now:
            _, address = heapq.heappop(deadlines)
            record = self._records.get(address)
            if record is not None and record.expires_at <= now:
                self._drop(address)

    def _live(self, address: _Address, now: float) -> Record | None:
        record = self._records.get(address)
        if record is not None and record.expires_at <= now:
            self._drop(address)
            return None
        return record

    def _put(self, address: _Address, record: Record) -> Record:
        owner, group, key = address
        self._records[address] = record
        self._index.setdefault((owner, group), set()).add(key)
        heapq.heappush(self._deadlines, (record.expires_at, address))
        if len(self._deadlines) > 2 * len(self._records) + 1024:
            self._compact()
        return record

    def _drop(self, address: _Address) -> None:
        owner, group, key = address
        del self._records[address]
        keys = self._index[(owner, group)]
        keys.discard(key)
        if not keys:
            del self._index[(owner, group)]

    def _reclaim(self) -> float:
        """Drop records whose deadline has passed, at most ``RECLAIM_PER_CALL``; return now."""
        now = self._clock()
        deadlines, budget = self._deadlines, RECLAIM_PER_CALL
        while budget and deadlines and deadlines[0][0] <= now:
            _, address = heapq.heappop(deadlines)
            record = self._records.get(address)
            if record is not None and record.expires_at <= now:
                self._drop(address)
                budget -= 1
        return now

    def _compact(self) -> None:
        """Rebuild the heap from live records once renewals have bloated it."""
        self._deadlines = [(r.expires_at, a) for a, r in self._records.items()]
        heapq.heapify(self._deadlines)
