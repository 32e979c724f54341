"""``HandleManager``: create, read, update, close and list handles over a ``Store``.

Records live at ``(principal.digest, kind.name, handle_id)``; a closed handle leaves
a tombstone at ``(principal.digest, f"{kind.name}:closed", handle_id)`` so later use
says "closed" rather than "unknown". Every id is verified (kind, principal, absolute
deadline) before any store access.

Updates never lose a write: in-process callers on one handle take turns on a
per-handle ``anyio.Lock``; callers in other processes are caught by the store's
versioned compare-and-set, retried with a small jittered backoff.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from types import TracebackType
from typing import Any, TypeVar, overload

from pydantic import BaseModel

from stores.base import LimitExceeded, Store, StoreUnavailable

from ._guard import Guard
from ._turns import Turns
from ._writes import Writer
from .errors import QuotaExceeded, StorageUnavailable
from .handle import Handle, Updated
from .ids import HandleCodec, SecretKeys
from .kinds import HandleKind
from .principal import Principal

__all__ = ["HandleManager"]

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
    ) -> None:
        self._store = store
        self._codec = HandleCodec(kinds, secret_keys)
        self._guard = Guard(self._codec, store)
        self._clock = clock
        if isinstance(closed_retention, timedelta):
            closed_retention = closed_retention.total_seconds()
        self._writer = Writer(store, self._guard, clock, max_retries, float(closed_retention))
        self._turns = Turns()

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
            StorageUnavailable: The store could not be reached.
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
            record = await self._store.create(
                owner, kind.name, handle_id, value, expires_at=expires, limit=kind.quota
            )
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
            record = await self._store.get(owner, kind.name, handle_id, renew_until=renew)
            if record is None:
                raise await self._guard.gone(owner, kind, handle_id)
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
        return value comes back as ``Updated.result``. It may run more than once when
        another process wins a race, so it should only change the state. If it raises,
        nothing is written.

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
    ) -> None:
        """End a handle, leaving a tombstone so later use reads "was <reason>".

        Args:
            principal: The caller.
            kind: The handle's kind.
            handle_id: The handle.
            reason: Past participle for messages: "closed", "checked out", …
            version: Close only if the state is still at this version (a checkout
                closes exactly the state it read); otherwise ``HandleConflict``.

        Raises:
            HandleError: Unknown, wrong kind, expired, already closed, store
                unavailable, or ``HandleConflict`` if ``version`` is stale.
        """
        owner, now = principal.digest, self._clock()
        created = self._guard.check(kind, handle_id, owner, now)
        with _storage_errors(kind):
            async with self._turns.hold((owner, kind.name, handle_id)):
                await self._writer.close(owner, kind, handle_id, created, now, reason, version)

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
        if isinstance(exc, StoreUnavailable):
            raise StorageUnavailable(self.kind) from exc
