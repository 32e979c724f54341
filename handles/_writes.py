"""``Writer``: the two multi-step writes, an update's compare-and-set loop and a close.

The manager verifies the id and serializes in-process callers first; what is left
here is what other processes can race with: a versioned compare-and-set retried with
a small jittered backoff, and a close that writes its tombstone before it deletes
the record, so a reader that misses the record always finds the tombstone.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel

from stores.base import Store

from ._awaitables import maybe_await
from ._guard import Guard, closed_group
from .errors import HandleConflict, HandleExpired
from .handle import Handle, Updated
from .kinds import HandleKind

__all__ = ["Writer"]

S = TypeVar("S", bound=BaseModel)

_BACKOFF_BASE, _BACKOFF_CAP = 0.001, 0.05


class Writer:
    """Runs updates and closes against ``store``; see the module docstring."""

    def __init__(
        self,
        store: Store,
        guard: Guard,
        clock: Callable[[], float],
        max_retries: int,
        retention: float,
    ) -> None:
        self._store = store
        self._guard = guard
        self._clock = clock
        self._max_retries = max_retries
        self._retention = retention

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
            new = await store.replace(
                owner, kind.name, handle_id, value, version=record.version, expires_at=expires
            )
            if new is not None:
                handle = Handle(handle_id, kind, state, new.version, created, new.expires_at)
                return Updated(handle, result)
        why = f"kept changing under concurrent calls ({self._max_retries + 1} attempts)"
        raise HandleConflict(kind, handle_id, why)

    async def close(
        self,
        owner: str,
        kind: HandleKind[Any],
        handle_id: str,
        created: int,
        now: float,
        reason: str,
        version: int | None,
    ) -> None:
        """Tombstone, then delete the record (at ``version``, when given)."""
        store, group = self._store, closed_group(kind)
        hard = kind.lifetime.absolute_deadline(created)
        until = now + self._retention if hard is None else hard
        tombstone = self._guard.tombstone(reason, now)
        # Tombstone first: a reader that misses the record must find it.
        if await store.create(owner, group, handle_id, tombstone, expires_at=until) is None:
            raise await self._guard.gone(owner, kind, handle_id)
        if await store.delete(owner, kind.name, handle_id, version=version):
            return
        await store.delete(owner, group, handle_id)
        if await store.get(owner, kind.name, handle_id) is None:
            raise await self._guard.gone(owner, kind, handle_id)
        raise HandleConflict(kind, handle_id, "changed since it was read")
