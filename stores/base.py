"""The store contract: the few async methods a backend implements.

This module is the single written contract. Backends say only what differs;
``stores.testing.StoreConformance`` is its executable form.

A store keeps *records*: opaque ``bytes`` with a version and an expiry, addressed
by ``(owner, group, key)``:

- ``owner`` is a digest of the principal that owns the record. Every record of one
  owner may share a shard (Redis Cluster hash tags use it), so a backend can make
  create-plus-index and listing atomic.
- ``group`` names the records' kind (``"basket"``); listing and the live-record
  limit are per ``(owner, group)``.
- ``key`` is the record's own name (the handle id).

Time is Unix seconds as ``float``. A record whose ``expires_at`` is not in the
future does not exist for any method: reads return ``None``, it does not count
towards a limit and it is not listed. Backends reclaim expired records on their
own, never by scanning everything on each call.

Versions start at 1 and grow by one on each successful ``replace`` (or
``replace_or_read``, the same compare-and-set answered with the current record).

Counters: ``incr`` keeps a count in a record of its own (value: the count in
ASCII digits; version: the count), for rate limits and the like. It is atomic
across every process sharing the store, and its record is a record like any
other (``get`` and ``list`` see it), so give counters a group of their own.

Charges: ``count_and_get`` and ``count_and_replace_or_read`` first count a *charge*
(``Counter`` records of the same owner, as ``incr`` counts them, in order) and run
the operation only if no count passed its ``Counter.limit``; otherwise they raise
``CountExceeded`` and the record is untouched. A rate limiter uses them to fold its
count into a tool's own store operation: one round trip instead of two. The
defaults here take two steps (count, then operate); ``MemoryStore`` and
``RedisStore`` take one.

Errors: a backend raises ``StoreUnavailable`` when it cannot reach its storage
or the storage refuses for a while (a transient condition). Its ``applied``
says what became of a write: ``None`` when the request may have reached the
storage but no answer came (a timeout, a connection lost mid-request: the write
may or may not have been applied, and may still be applied later), ``False``
when the storage certainly did not apply it (it could not be reached, or it
refused before changing anything). ``StoreFull`` is the refusal of a store out
of space (``applied`` is ``False``). ``create`` raises ``LimitExceeded`` when the
owner already has ``limit`` live records in the group. Every other outcome is a
return value.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self

__all__ = [
    "CountExceeded",
    "Counter",
    "LimitExceeded",
    "Record",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
]


@dataclass(frozen=True, slots=True)
class Record:
    """A stored value with its version and its expiry (Unix seconds)."""

    value: bytes
    version: int
    expires_at: float


class StoreError(Exception):
    """Base class of the errors a store raises."""


class StoreUnavailable(StoreError):
    """The backing storage could not be reached or refused for now; see ``applied``.

    Args:
        message: What happened, without addresses or secrets.
        applied: ``None`` if a write may or may not have been applied (no answer
            came), ``False`` if it certainly was not.
    """

    def __init__(self, message: str = "the store is unavailable", *, applied: bool | None = None):
        super().__init__(message)
        self.applied = applied


class StoreFull(StoreUnavailable):
    """The storage is out of space and refused the write before changing anything."""

    def __init__(self, message: str = "the store is full") -> None:
        super().__init__(message, applied=False)


class LimitExceeded(StoreError):
    """``create`` refused: the owner already has ``limit`` live records in the group."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the owner already has {limit} live records in this group")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Counter:
    """One counter a charged operation adds one to, and the most it may reach.

    The counter is the record ``(owner, group, key)`` of the charged operation's
    owner (so it shares the owner's shard), counted as ``incr`` counts it: created
    at 1 with ``expires_at``, else one more with its expiry kept.
    """

    group: str
    key: str
    expires_at: float
    limit: int


class CountExceeded(StoreError):
    """A charged operation refused: ``counter`` reached ``count``, past its limit.

    The operation did not run. The counters before this one in the charge, and
    this one, were counted; those after it were not.
    """

    def __init__(self, counter: Counter, count: int) -> None:
        super().__init__(f"counter {counter.key!r} is at {count}, past its limit {counter.limit}")
        self.counter = counter
        self.count = count


class Store(ABC):
    """Versioned, expiring records with a per-owner index.

    Use a store as an async context manager, or call ``aclose()`` when done.
    """

    @abstractmethod
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
        """Create a record at version 1 if no live record has this address.

        Atomically: if a live record exists, return ``None`` and change nothing;
        if ``limit`` is given and the owner has that many live records in
        ``group``, raise ``LimitExceeded``; otherwise store the record, index it
        under ``(owner, group)`` and return it.
        """

    @abstractmethod
    async def get(
        self, owner: str, group: str, key: str, *, renew_until: float | None = None
    ) -> Record | None:
        """Return the live record, or ``None``.

        With ``renew_until``, the record's expiry is first moved to that time
        (in the same atomic step), and the returned record carries it.
        """

    @abstractmethod
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
        """Compare-and-set: replace the live record if its version is ``version``.

        On success the record holds ``value`` at ``version + 1`` with the new
        expiry, and is returned. If the record is gone or its version differs,
        nothing changes and ``None`` is returned; ``get`` tells which.
        """

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
        """``replace``, answered with the live record when it does not apply.

        Returns ``(True, new)`` when the record was replaced (as ``replace``
        returns it), ``(False, current)`` when it was not: ``current`` is the live
        record (at another version; nothing changed, its expiry included), or
        ``None`` if there is none. A caller that guessed the version learns the
        real one in the same reply.

        This default is built on ``replace`` and ``get``: a second round trip
        when the version moved (and a failure of that ``get`` is reported with
        ``applied=False``: the ``replace`` certainly did not apply). Backends
        override it with one atomic step.
        """
        new = await self.replace(owner, group, key, value, version=version, expires_at=expires_at)
        if new is not None:
            return True, new
        try:
            return False, await self.get(owner, group, key)
        except StoreUnavailable as exc:
            raise StoreUnavailable(str(exc), applied=False) from exc

    @abstractmethod
    async def delete(self, owner: str, group: str, key: str, *, version: int | None = None) -> bool:
        """Delete the live record (only at ``version``, when given).

        Return whether a record was deleted.
        """

    @abstractmethod
    async def list(self, owner: str, group: str) -> dict[str, Record]:
        """Return the owner's live records in ``group``, by key.

        Its cost grows with this owner's records in the group, not with the store.
        """

    async def incr(self, owner: str, group: str, key: str, *, expires_at: float) -> int:
        """Atomically add one to a counter record and return the new count.

        If no live record has this address, create it at 1 with ``expires_at``;
        otherwise add one and keep its expiry (``expires_at`` is then ignored).
        Concurrent calls on one live counter never return the same count.

        This default is built on ``get``, ``create`` and ``replace``: two or three
        round trips, repeated when another caller wins a race. Backends override
        it with one atomic step.
        """
        while True:
            record = await self.get(owner, group, key)
            if record is None:
                if await self.create(owner, group, key, b"1", expires_at=expires_at):
                    return 1
                continue
            count = record.version + 1
            if await self.replace(
                owner,
                group,
                key,
                str(count).encode(),
                version=record.version,
                expires_at=record.expires_at,
            ):
                return count

    async def count_and_get(
        self,
        owner: str,
        group: str,
        key: str,
        *,
        charge: Sequence[Counter],
        renew_until: float | None = None,
    ) -> Record | None:
        """Count ``charge`` (see ``Counter``), then ``get`` unless a count passed its limit.

        Raises:
            CountExceeded: A counter passed its limit; nothing was read or renewed.

        This default counts with ``incr`` and then calls ``get``: two steps or more,
        not one atomic step (a failure of the ``get`` leaves the count made).
        Backends override it with one atomic step.
        """
        await _count(self, owner, charge)
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
        """Count ``charge`` (see ``Counter``), then ``replace_or_read`` unless one passed.

        Raises:
            CountExceeded: A counter passed its limit; the record is untouched.

        This default counts with ``incr`` and then calls ``replace_or_read``: two
        steps or more, not one atomic step. Backends override it with one.
        """
        await _count(self, owner, charge)
        return await self.replace_or_read(
            owner, group, key, value, version=version, expires_at=expires_at
        )

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
        """Replace a live record by a record in another group, in one atomic step.

        If the live record at ``(owner, group, key)`` exists (at ``version``, when
        given), delete it and store ``value`` at ``(owner, into, key)`` at version 1
        with ``expires_at`` (over any record there), then, when ``keep`` is given,
        delete the owner's live records in ``into`` beyond the ``keep`` that expire
        last (those that expire soonest go first; the new one is kept). Return
        whether the record was retired; if not, nothing changed. A closed handle's
        tombstone is written this way, so no reader ever sees a tombstone of a
        close that did not happen, nor neither record.

        This default takes two or three steps: a versioned ``delete``, then a
        ``create`` (and a ``list`` plus ``delete`` calls to trim ``into``, which a
        later call catches up on if they fail); between them a reader finds
        neither record, and a failure after the ``delete`` is reported with
        ``applied=None``. Backends override it with one atomic step.
        """
        if not await self.delete(owner, group, key, version=version):
            return False
        try:
            await self.delete(owner, into, key)
            await self.create(owner, into, key, value, expires_at=expires_at)
        except StoreUnavailable as exc:  # the record is gone already: half applied
            raise StoreUnavailable(str(exc), applied=None) from exc
        if keep is not None:
            with contextlib.suppress(StoreUnavailable):  # retired; the next call trims
                records = await self.list(owner, into)
                if len(records) > keep:
                    others = sorted((r.expires_at, k) for k, r in records.items() if k != key)
                    for _, old in others[: len(records) - keep]:
                        await self.delete(owner, into, old)
        return True

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections and background resources. Safe to call twice."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _count(store: Store, owner: str, charge: Sequence[Counter]) -> None:
    """Count each counter with ``incr``, in order, up to the first that passes its limit."""
    for counter in charge:
        count = await store.incr(owner, counter.group, counter.key, expires_at=counter.expires_at)
        if count > counter.limit:
            raise CountExceeded(counter, count)
