"""``Writer``: the writes other processes can race with, and writes whose answer never came.

The manager verifies the id and serializes in-process callers first; what is left
here:

- An update is a versioned compare-and-set (``Store.replace_or_read``), retried
  with a small jittered backoff; the version and state come from ``Latest`` when
  this process holds the handle's last version, saving the read.
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

from . import _charges
from ._awaitables import maybe_await
from ._guard import Guard
from ._latest import Latest
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
        latest: Latest,
    ) -> None:
        self.latest = latest
        self._remember = latest.max_bytes > 0  # else not even a lookup per edit
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
            record = await self._store.create(
                owner, kind.name, handle_id, value, expires_at=expires, limit=kind.quota
            )
        except StoreUnavailable as exc:
            if exc.applied is not None:
                raise
        else:
            if record is not None:
                self.latest.put((owner, kind.name, handle_id), record)
            return record
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
        """Apply ``fn`` to a fresh copy of the state and compare-and-set the result.

        The state comes from ``latest`` when this process holds the handle's last
        version (one round trip: the compare-and-set), else from the store (two).
        A remembered version that moved costs one more round trip, never a lost
        update: the refusal carries the live record, and ``fn`` runs again on it.
        If ``fn`` raises on a remembered state, it runs again on the store's.
        """
        key = (owner, kind.name, handle_id)
        record = self.latest.get(key) if self._remember else None
        guessed = record is not None  # a remembered record: the store has not confirmed it
        conflicts = 0
        while True:
            if record is None:
                record = await _charges.get(self._store, owner, kind.name, handle_id)
                if record is None:
                    self.latest.drop(key)
                    raise await self._guard.gone(owner, kind, handle_id)
            state = kind.model.model_validate_json(record.value)
            try:
                result = await maybe_await(fn(state))
            except Exception:
                if not guessed:
                    raise
                record, guessed = None, False  # refused a state that may be old: ask the store
                continue
            now = self._clock()
            expires = kind.lifetime.deadline(created, now)
            if expires <= now:
                raise HandleExpired(kind, handle_id, expires)
            value = state.model_dump_json().encode()
            pending = _charges.take(self._store, owner)  # the call's rate-limit count, if first
            try:
                applied, current = await _charges.replace_or_read(
                    self._store,
                    pending,
                    owner,
                    kind.name,
                    handle_id,
                    value,
                    version=record.version,
                    expires_at=expires,
                )
            except StoreUnavailable as exc:
                if exc.applied is not None:
                    raise
                self.latest.drop(key)
                current = await self._settle_replace(owner, kind, handle_id, record, value, expires)
                applied = current is not None
                if not applied and pending is not None:  # not run, and never will be: refuse
                    raise pending.refusal(exc) from None
            else:
                if current is None:  # closed or expired, here or on another replica
                    self.latest.drop(key)
                    raise await self._guard.gone(owner, kind, handle_id)
            if applied:
                assert current is not None
                if self._remember:
                    self.latest.put(key, current)
                handle = Handle(
                    handle_id, kind, state, current.version, created, current.expires_at
                )
                return Updated(handle, result)
            if not guessed:  # a race with another process, not an old guess: back off
                conflicts += 1
                if conflicts > self._max_retries:
                    why = f"kept changing under concurrent calls ({conflicts} attempts)"
                    raise HandleConflict(kind, handle_id, why)
                await anyio.sleep(
                    random.uniform(0, min(_BACKOFF_CAP, _BACKOFF_BASE * 2**conflicts))
                )
            record, guessed = current, False  # None after a fence: read it again

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

        self.latest.drop((owner, kind.name, handle_id))  # whatever happens, it may be gone
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
