"""Tombstones: what a closed handle leaves behind, so later use reads "was <reason>".

A tombstone lives in the store under the caller's own key, in the kind's closed
group, and holds why and when the handle was closed, which close wrote it (to settle
a close whose answer never came) and what that close returned (for concurrent
closers that lost). This module is the one place that knows their group and format.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .kinds import HandleKind

__all__ = ["Tombstone", "closed_group"]


class Tombstone(BaseModel):
    """A tombstone's fields."""

    reason: str
    closed_at: float
    token: str = ""  # which close wrote it, to settle a close whose answer never came
    outcome: Any = None  # what the close returned, as JSON, for concurrent closers

    @classmethod
    def read(cls, value: bytes) -> Tombstone:
        """A tombstone from its stored value."""
        return cls.model_validate_json(value)

    def dump(self) -> bytes:
        """The stored value; ``outcome`` must be JSON-able."""
        return self.model_dump_json().encode()


def closed_group(kind: HandleKind[Any]) -> str:
    """The store group of ``kind``'s tombstones."""
    return f"{kind.name}:closed"
