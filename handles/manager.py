"""``HandleManager``: create, read, update, close and list handles over a ``Store``.

Records live at ``(principal.digest, kind.name, handle_id)``; a closed handle leaves
a tombstone at ``(principal.digest, f"{kind.name}:closed", handle_id)`` so later use
says "closed" rather than "unknown". Every id is verified (kind, principal, absolute
deadline) before any store access.

Updates never lose a write: in-process callers on one handle take turns on a
per-handle ``anyio.Lock``; callers in other processes are caught by the store's
versioned compare-and-set, retried with a small jittered backoff.

A close commits in one atomic step (``Store.retire``), so "closed" is said only of
a close that happened, and of concurrent closes on any replica one commits and the
others get its outcome. A write whose answer never came is read back before
anything is said (``handles._writes``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from types import TracebackType
from typing import Any, TypeVar, overload

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from stores.base import LimitExceeded, Store, StoreFull, StoreUnavailable
from stores.memory import MemoryStore

from . import _charges
from ._guard import Guard
from ._latest import Latest
from ._turns import Turns
from ._writes import Writer
from .errors import QuotaExceeded, StorageFull, StorageUnavailable
from .handle import Handle, Updated
from .ids import HandleCodec, SecretKeys
from .kinds import HandleKind
from .principal import Principal

__all__ = ["CACHE_BYTES", "CLOSED_LIMIT", "HandleManager"]

CLOSED_LIMIT = 1000
"""The default ``closed_limit``: tombstones kept per principal and kind."""

CACHE_BYTES = 16 * 2**20
"""The default ``cache_bytes``: 16 MiB of remembered state (some 30,000 small baskets)."""

S = TypeVar("S", bound=BaseModel)
R = TypeVar("R")


class HandleManager:
    """Principal-bound, expiring, typed handles over a store.

    Args:
        store: Where records live.
        kinds: The handle kinds this manager serves.
        secret_keys: Signing keys, oldest to newest (the last signs), each at least
            32 bytes. ``None`` uses an ephemeral key and logs a warning.
        clock: Unix seconds; inject a fake one in tests (give the store the same).
        max_retries: Compare-and-set retries of one update before ``HandleConflict``.
        closed_retention: How long a tombstone lasts for kinds without an absolute
            lifetime; otherwise it lasts until the handle's absolute deadline.
        closed_limit: The most tombstones kept per principal and kind; past it,
            those that expire soonest are dropped (and those handles then read as
            expired rather than closed). The default, 1,000 of some 200 bytes each,
            bounds a principal's tombstones of a kind at about 200 KB.
        cache_bytes: The most bytes of state remembered, per handle this manager
            wrote or read last (least recently used out; 0 remembers nothing), so
            that an edit of such a handle sends its compare-and-set without reading
            first: one round trip to the store instead of two. The store's reply
            still decides: a version that moved elsewhere costs one more round
            trip, and a close or expiry elsewhere is reported as such. Default:
            ``CACHE_BYTES``, or 0 over a ``MemoryStore`` (nothing to save there).
    """

    def __init__(
        self,
        store: Store,
        kinds: Iterable[HandleKind[Any]],
        *,
        secret_keys: SecretKeys | None = None,
        clock: Callable[[], float] = time.time,
        max_retries: int = 16,
        closed_retention: float | timedelta = 86400.0,
        closed_limit: int = CLOSED_LIMIT,
        cache_bytes: int | None = None,
    ) -> None:
        if closed_limit < 1:
            raise ValueError("closed_limit must be at least 1")
        if cache_bytes is None:  # a MemoryStore's read is a dict lookup: nothing to save
            cache_bytes = 0 if isinstance(store, MemoryStore) else CACHE_BYTES
        self._latest = Latest(cache_bytes)
        self._store = store
        self._codec = HandleCodec(kinds, secret_keys)
        self._guard = Guard(self._codec, store)
        self._clock = clock
        if isinstance(closed_retention, timedelta):
            closed_retention = closed_retention.total_seconds()
        self._writer = Writer(
            store,
            self._guard,
            clock,
            max_retries,
            float(closed_retention),
            closed_limit,
            self._latest,
        )
        self._turns = Turns()

    @property
    def store(self) -> Store:
        """Where the records live."""
        return self._store

    @property
    def kinds(self) -> list[HandleKind[Any]]:
        """The registered kinds."""
        return self._codec.kinds

    def check(self, principal: Principal, kind: HandleKind[Any], handle_id: str) -> None:
        """Refuse an id that cannot be ``principal``'s live ``kind``: one HMAC, no store access.

        What ``get`` checks before it reads the store; a screen for ids seen outside
        a call (an HTTP header, a gateway) uses it.

        Raises:
            HandleError: Unknown (mistyped, forged, foreign), wrong kind, or past its
                absolute deadline.
        """
        self._guard.check(kind, handle_id, principal.digest, self._clock())

    async def create(
        self, principal: Principal, kind: HandleKind[S], state: S | None = None
    ) -> Handle[S]:
        """Create a handle holding ``state`` (default ``kind.model()``).

        Raises:
            QuotaExceeded: The principal already holds ``kind.quota`` live handles.
            StorageUnavailable: The store could not be reached (``StorageFull``: it
                is out of space); nothing was created.
            OutcomeUnknown: The store did not answer, and reading back could not tell.
        """
        state = kind.model() if state is None else state
        if not isinstance(state, kind.model):
            raise TypeError(f"a {kind.name} holds {kind.model.__name__}, not {type(state)!r}")
        value, owner = state.model_dump_json().encode(), principal.digest
        with _storage_errors(kind):
            try:
                return await self._create(owner, kind, state, value)
            except LimitExceeded as exc:
                raise QuotaExceeded(kind, exc.limit) from exc

    async def _create(self, owner: str, kind: HandleKind[S], state: S, value: bytes) -> Handle[S]:
        while True:
            now = self._clock()
            handle_id = self._codec.mint(kind, owner, now)
            created = int(now)
            expires = kind.lifetime.deadline(created, now)
            record = await self._writer.create(owner, kind, handle_id, value, expires)
            if record is not None:  # None only if 128 random bits collided
                return Handle(handle_id, kind, state, record.version, created, expires)

    async def get(self, principal: Principal, kind: HandleKind[S], handle_id: str) -> Handle[S]:
        """Read a handle, renewing its idle lifetime.

        Raises:
            HandleError: Unknown, wrong kind, expired, closed or store unavailable.
        """
        owner, now = principal.digest, self._clock()
        created = self._guard.check(kind, handle_id, owner, now)
        renew = None if kind.lifetime.idle is None else kind.lifetime.deadline(created, now)
        with _storage_errors(kind):
            record = await _charges.get(self._store, owner, kind.name, handle_id, renew_until=renew)
            if record is None:
                self._latest.drop((owner, kind.name, handle_id))
                raise await self._guard.gone(owner, kind, handle_id)
            self._latest.offer((owner, kind.name, handle_id), record)
        state = kind.model.model_validate_json(record.value)
        return Handle(handle_id, kind, state, record.version, created, record.expires_at)

    @overload
    async def update(
        self,
        principal: Principal,
        kind: HandleKind[S],
        handle_id: str,
        fn: Callable[[S], Awaitable[R]],
    ) -> Updated[S, R]: ...

    @overload
    async def update(
        self, principal: Principal, kind: HandleKind[S], handle_id: str, fn: Callable[[S], R]
    ) -> Updated[S, R]: ...

    async def update(
        self, principal: Principal, kind: HandleKind[S], handle_id: str, fn: Callable[[S], Any]
    ) -> Updated[S, Any]:
        """Change a handle's state with ``fn`` without ever losing a concurrent update.

        ``fn`` receives an editable copy of the state, may be sync or async, and its
        return value comes back as ``Updated.result``. It may run more than once (when
        another process wins a race, or the version this manager remembered has moved),
        so it should only change the state. If it raises, nothing is written; if it
        raised on a remembered state, it runs once more on the store's, so that what it
        raises is about the latest state.

        Raises:
            HandleError: Unknown, wrong kind, expired, closed, store unavailable, or
                ``HandleConflict`` once the retries run out.
        """
        owner = principal.digest
        created = self._guard.check(kind, handle_id, owner, self._clock())
        with _storage_errors(kind):
            async with self._turns.hold((owner, kind.name, handle_id)):
                return await self._writer.apply(owner, kind, handle_id, created, fn)

    async def close(
        self,
        principal: Principal,
        kind: HandleKind[Any],
        handle_id: str,
        *,
        reason: str = "closed",
        version: int | None = None,
        outcome: Any = None,
        on_commit: Callable[[Any], Awaitable[Any]] | None = None,
    ) -> Any:
        """End a handle, leaving a tombstone so later use reads "was <reason>".

        The record is replaced by its tombstone in one atomic step, so of
        concurrent closes (in this process or any other sharing the store) exactly
        one commits. ``outcome``, if given, is stored with the tombstone (as JSON):
        a concurrent close with the same ``reason`` that lost gets the winner's
        outcome back instead of committing a second one (one order per basket).

        Args:
            principal: The caller.
            kind: The handle's kind.
            handle_id: The handle.
            reason: Past participle for messages: "closed", "checked out", …
            version: Close only if the state is still at this version (a checkout
                closes exactly the state it read); otherwise ``HandleConflict``.
            outcome: What the close produced (JSON-able: a model, a dict, ...); one
                that pydantic cannot serialize, or over 64 KiB, is not stored.
            on_commit: Awaited with ``outcome`` once this close has committed, and
                only then: the place for an effect that must happen at most once per
                handle (placing the order). It runs after the commit, so if it fails
                the handle stays closed; its exception propagates.

        Returns:
            ``outcome`` if this close committed; the committed close's outcome
            (as JSON) if a concurrent close with the same ``reason`` won.

        Raises:
            HandleError: Unknown, wrong kind, expired, already closed, store
                unavailable, ``HandleConflict`` if ``version`` is stale, or
                ``OutcomeUnknown`` if the store did not answer and reading back
                could not tell whether the close committed.
        """
        owner, now = principal.digest, self._clock()
        created = self._guard.check(kind, handle_id, owner, now)
        with _storage_errors(kind):
            async with self._turns.hold((owner, kind.name, handle_id)):
                committed, theirs = await self._writer.close(
                    owner, kind, handle_id, created, now, reason, version, _jsonable(outcome)
                )
        if not committed:
            return theirs
        if on_commit is not None:
            await on_commit(outcome)
        return outcome

    async def list(self, principal: Principal, kind: HandleKind[S]) -> list[Handle[S]]:
        """The caller's live handles of ``kind``, oldest first (no renewal).

        Raises:
            StorageUnavailable: The store could not be reached.
        """
        with _storage_errors(kind):
            records = await self._store.list(principal.digest, kind.name)
        handles = [
            Handle(
                key,
                kind,
                kind.model.model_validate_json(record.value),
                record.version,
                self._codec.minted_at(key),
                record.expires_at,
            )
            for key, record in records.items()
        ]
        handles.sort(key=lambda handle: (handle.created_at, handle.id))
        return handles


class _storage_errors:
    """Turns the store's ``StoreUnavailable`` into the model's ``StorageUnavailable``."""

    __slots__ = ("kind",)

    def __init__(self, kind: HandleKind[Any]) -> None:
        self.kind = kind

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, StoreFull):
            raise StorageFull(self.kind) from exc
        if isinstance(exc, StoreUnavailable):
            raise StorageUnavailable(self.kind) from exc


_MAX_OUTCOME_BYTES = 65536


def _jsonable(outcome: Any) -> Any:
    """``outcome`` as JSON-able Python, or ``None`` if it is not or is too large."""
    if outcome is None:
        return None
    try:
        if len(to_json(outcome)) > _MAX_OUTCOME_BYTES:
            return None
        return to_jsonable_python(outcome)
    except (PydanticSerializationError, ValueError, TypeError):
        return None
