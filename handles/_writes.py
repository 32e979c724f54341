"""``Writer``: the writes other processes can race with, and writes whose answer never came.

The manager verifies the id and serializes in-process callers first; what is left
here:

- An update is a versioned compare-and-set, retried with a small jittered backoff.
- A close is one atomic ``Store.retire``: the record is replaced by its tombstone
  at the version the closer read, so a tombstone exists only for a close that
  committed, and of concurrent closes (on any replica) exactly one commits. The
  tombstone carries the close's outcome (what the closing tool returned), so the
  callers that lost get the winner's outcome rather than a second one. Tombstones
  are capped per principal and kind (``closed_limit``): the ones that expire
  soonest are dropped first.
- A write whose answer never came (``StoreUnavailable`` with ``applied=None``: a
  timeout, a connection lost mid-request) is settled by reading back, by version,
  whether it applied, before anything is said:

  * update: a *fence*, the old value written back at the version read. If the
    fence commits, the lost write can never commit (its version is gone), so
    the update runs again; if it does not, the record at the next version with
    the new value is the lost write, applied.
  * create: the same create again (same id and value); a live record with that
    value means it applied, and the late one, if it comes, finds it and does
    nothing.
  * close: the same retire again; the tombstone's token says whose close it is.

  If the store stays silent through the attempts, the caller gets
  ``OutcomeUnknown`` ("it is not known whether ..."), never a "retry".
"""

from __future__ import annotations

import logging
import random
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel

from stores.base import LimitExceeded, Record, Store, StoreUnavailable

from ._awaitables import maybe_await
from ._guard import Guard
from ._tombstones import Tombstone, closed_group
from .errors import HandleClosed, HandleConflict, HandleExpired, OutcomeUnknown, echo
from .handle import Handle, Updated
from .ids import redact
from .kinds import HandleKind

__all__ = ["Writer"]

S = TypeVar("S", bound=BaseModel)

_BACKOFF_BASE, _BACKOFF_CAP = 0.001, 0.05

SETTLE_ATTEMPTS = 2
"""How many times a write whose answer never came is read back before ``OutcomeUnknown``.

Each attempt waits at most the store's reply timeout, so such a call takes at most
``(1 + SETTLE_ATTEMPTS)`` timeouts and 0.1 s of pause: 6.1 s on ``RedisStore``'s 2 s
defaults (a read, or a write refused outright, still fails within one timeout)."""

_SETTLE_PAUSE = 0.1

_log = logging.getLogger("handles")


def _unanswered(write: str, kind: HandleKind[Any], handle_id: str) -> None:
    _log.warning(
        "%s of %s %s: no answer from the store; reading back whether it applied",
        write,
        kind.name,
        redact(handle_id),
    )


class Writer:
    """Runs creates, updates and closes against ``store``; see the module docstring."""

    def __init__(
        self,
        store: Store,
        guard: Guard,
        clock: Callable[[], float],
        max_retries: int,
        retention: float,
        closed_limit: int,
    ) -> None:
        self._store = store
        self._guard = guard
        self._clock = clock
        self._max_retries = max_retries
        self._retention = retention
        self._closed_limit = closed_limit

    async def create(
        self, owner: str, kind: HandleKind[Any], handle_id: str, value: bytes, expires: float
    ) -> Record | None:
        """``store.create`` under the kind's quota, settled if its answer never came."""
        try:
            return await self._store.create(
                owner, kind.name, handle_id, value, expires_at=expires, limit=kind.quota
            )
        except StoreUnavailable as exc:
            if exc.applied is not None:
                raise
        _unanswered("create", kind, handle_id)
        for attempt in range(SETTLE_ATTEMPTS):
            await _pause(attempt)
            try:
                record = await self._store.create(
                    owner, kind.name, handle_id, value, expires_at=expires, limit=kind.quota
                )
                if record is not None:
                    return record
                current = await self._store.get(owner, kind.name, handle_id)
            except LimitExceeded:
                break  # the lost create may still come: say nothing false
            except StoreUnavailable:
                continue
            if current is not None and current.version == 1 and current.value == value:
                return current
            break
        raise OutcomeUnknown(kind, f"a new {kind.label} was created")

    async def apply(
        self,
        owner: str,
        kind: HandleKind[S],
        handle_id: str,
        created: int,
        fn: Callable[[S], Any],
    ) -> Updated[S, Any]:
        """Apply ``fn`` to a fresh copy of the state and compare-and-set the result."""
        store = self._store
        for attempt in range(self._max_retries + 1):
            if attempt:
                await anyio.sleep(random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt)))
            record = await store.get(owner, kind.name, handle_id)
            if record is None:
                raise await self._guard.gone(owner, kind, handle_id)
            state = kind.model.model_validate_json(record.value)
            result = await maybe_await(fn(state))
            now = self._clock()
            expires = kind.lifetime.deadline(created, now)
            if expires <= now:
                raise HandleExpired(kind, handle_id, expires)
            value = state.model_dump_json().encode()
            try:
                new = await store.replace(
                    owner, kind.name, handle_id, value, version=record.version, expires_at=expires
                )
            except StoreUnavailable as exc:
                if exc.applied is not None:
                    raise
                new = await self._settle_replace(owner, kind, handle_id, record, value, expires)
            if new is not None:
                handle = Handle(handle_id, kind, state, new.version, created, new.expires_at)
                return Updated(handle, result)
        why = f"kept changing under concurrent calls ({self._max_retries + 1} attempts)"
        raise HandleConflict(kind, handle_id, why)

    async def _settle_replace(
        self,
        owner: str,
        kind: HandleKind[Any],
        handle_id: str,
        read: Record,
        value: bytes,
        expires: float,
    ) -> Record | None:
        """The lost replace's record if it applied, ``None`` once it never can."""
        store, version = self._store, read.version
        _unanswered("update", kind, handle_id)
        for attempt in range(SETTLE_ATTEMPTS):
            await _pause(attempt)
            try:
                fence = await store.replace(
                    owner, kind.name, handle_id, read.value, version=version, expires_at=expires
                )
                if fence is not None:
                    return None  # the lost write's version is gone: it can never apply
                current = await store.get(owner, kind.name, handle_id)
            except StoreUnavailable:
                continue
            if current is not None and current.version == version + 1:
                if current.value == value:
                    return current  # the lost write applied (or one identical to it)
                return None  # a fence or another writer took its version: it never will
            break
        whether = f"this change to {kind.label} {echo(handle_id)} was applied"
        raise OutcomeUnknown(kind, whether)

    async def close(
        self,
        owner: str,
        kind: HandleKind[Any],
        handle_id: str,
        created: int,
        now: float,
        reason: str,
        version: int | None,
        outcome: Any = None,
    ) -> tuple[bool, Any]:
        """Replace the record by its tombstone (at ``version``, when given).

        Returns ``(True, outcome)`` if this close committed; ``(False, theirs)`` if
        a concurrent close with the same ``reason`` that stored an outcome
        committed first.

        Raises:
            HandleClosed: Another close committed first (with another reason, or
                without an outcome).
            HandleConflict: The state changed since ``version``.
            OutcomeUnknown: The store did not answer, and reading back could not tell.
        """
        group = closed_group(kind)
        hard = kind.lifetime.absolute_deadline(created)
        until = now + self._retention if hard is None else hard
        token = secrets.token_hex(8)
        tombstone = Tombstone(reason=reason, closed_at=now, token=token, outcome=outcome).dump()

        async def retire() -> bool:
            return await self._store.retire(
                owner,
                kind.name,
                handle_id,
                into=group,
                value=tombstone,
                expires_at=until,
                version=version,
                keep=self._closed_limit,
            )

        try:
            if await retire():
                return True, outcome
        except StoreUnavailable as exc:
            if exc.applied is not None:
                raise
            if await self._settle_close(owner, kind, handle_id, reason, token, retire):
                return True, outcome
        return False, await self._lost(owner, kind, handle_id, reason)

    async def _settle_close(
        self,
        owner: str,
        kind: HandleKind[Any],
        handle_id: str,
        reason: str,
        token: str,
        retire: Callable[[], Any],
    ) -> bool:
        """Whether the close whose answer never came committed (retiring it again if not)."""
        _unanswered("close", kind, handle_id)
        for attempt in range(SETTLE_ATTEMPTS):
            await _pause(attempt)
            try:
                if await retire():
                    return True
                tombstone = await self._store.get(owner, closed_group(kind), handle_id)
            except StoreUnavailable:
                continue
            return tombstone is not None and Tombstone.read(tombstone.value).token == token
        whether = f"{kind.label} {echo(handle_id)} was {reason}"
        raise OutcomeUnknown(kind, whether)

    async def _lost(
        self,
        owner: str,
        kind: HandleKind[Any],
        handle_id: str,
        reason: str,
    ) -> Any:
        """The answer for a close that did not commit: the winner's outcome, or why."""
        if await self._store.get(owner, kind.name, handle_id) is not None:
            raise HandleConflict(kind, handle_id, "changed since it was read")
        error = await self._guard.gone(owner, kind, handle_id)
        if isinstance(error, HandleClosed) and error.reason == reason and error.outcome is not None:
            return error.outcome
        raise error


async def _pause(attempt: int) -> None:
    if attempt:
        await anyio.sleep(_SETTLE_PAUSE * attempt)
