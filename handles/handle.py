"""``Handle``: what the manager returns, a snapshot of one handle and its state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from pydantic import BaseModel

from .kinds import HandleKind, iso_utc

__all__ = ["Handle", "Updated"]

S = TypeVar("S", bound=BaseModel)
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Handle(Generic[S]):
    """One handle as last read or written: a snapshot (frozen: changing it would store nothing).

    Attributes:
        id: The opaque id the model passes back (``bsk_…``).
        kind: The handle's kind.
        state: The state, an instance of ``kind.model``.
        version: The record's version; it grows by one on each update.
        created_at: Creation time, Unix seconds (whole seconds).
        expires_at: When the handle expires unless used again, Unix seconds.
    """

    id: str
    kind: HandleKind[S]
    state: S
    version: int
    created_at: float
    expires_at: float

    @property
    def created_at_iso(self) -> str:
        """``created_at`` as ISO 8601 UTC, e.g. ``2026-11-29T23:59:00Z``."""
        return iso_utc(self.created_at)

    @property
    def expires_at_iso(self) -> str:
        """``expires_at`` as ISO 8601 UTC, e.g. ``2026-11-30T00:29:00Z``."""
        return iso_utc(self.expires_at)


class Updated(NamedTuple, Generic[S, R]):
    """What ``HandleManager.update`` returns: the handle as written and the function's result."""

    handle: Handle[S]
    result: R
