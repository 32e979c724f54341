"""``Guard``: what to say about a handle id, before and after the store is read.

Before: the id must verify for this kind and this principal, and its absolute
deadline (read from the id itself) must not have passed; nothing touches the store.
After: a verified id whose record is missing was closed (a tombstone under the
caller's own key says how and when) or has expired. "Expired" and "closed" are only
said once ownership is proven; everything else is ``UnknownHandle``, whose text
does not depend on the real reason. That reason goes to the debug log, with the id
redacted.
"""

from __future__ import annotations

import logging
from typing import Any

from stores.base import Store

from ._tombstones import Tombstone, closed_group
from .errors import HandleClosed, HandleError, HandleExpired, UnknownHandle, WrongKind
from .ids import HandleCodec, redact
from .kinds import HandleKind

__all__ = ["Guard"]

_log = logging.getLogger("handles")


class Guard:
    """Turns a handle id into its mint time, or into the error the model should see."""

    def __init__(self, codec: HandleCodec, store: Store) -> None:
        self._codec = codec
        self._store = store

    def check(self, kind: HandleKind[Any], handle_id: str, owner: str, now: float) -> int:
        """The mint time of ``owner``'s live ``kind`` handle; no store access.

        Raises:
            UnknownHandle: The id does not verify for this kind and owner.
            WrongKind: It is the owner's handle of another registered kind.
            HandleExpired: Its absolute deadline has passed.
        """
        created = self._codec.verify(kind, handle_id, owner)
        if created is None:
            raise self._refuse(kind, handle_id, owner)
        hard = kind.lifetime.absolute_deadline(created)
        if hard is not None and now >= hard:
            raise HandleExpired(kind, handle_id, hard)
        return created

    async def gone(self, owner: str, kind: HandleKind[Any], handle_id: str) -> HandleError:
        """The error for a verified handle whose record is missing: closed or expired."""
        tombstone = await self._store.get(owner, closed_group(kind), handle_id)
        if tombstone is not None:
            closed = Tombstone.read(tombstone.value)
            return HandleClosed(
                kind, handle_id, closed.reason, closed.closed_at, outcome=closed.outcome
            )
        _log.debug("%s %s: no record and no tombstone", kind.name, redact(handle_id))
        return HandleExpired(kind, handle_id, None)

    def _refuse(self, kind: HandleKind[Any], handle_id: str, owner: str) -> HandleError:
        other = self._codec.kind_of(handle_id, owner)
        if other is not None and other.name != kind.name:
            return WrongKind(kind, other, handle_id)
        if _log.isEnabledFor(logging.DEBUG):
            why = self._codec.explain(kind, handle_id)
            _log.debug("unknown %s %s: %s", kind.name, redact(handle_id), why)
        return UnknownHandle(kind, handle_id)
