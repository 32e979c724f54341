"""The store under test and the clock it reads, for ``stores.testing``.

Apart from the suite so that its cases can name the harness without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import Store

__all__ = ["ManualClock", "StoreHarness"]


class ManualClock:
    """A clock that stands still until moved; pass it as a store's ``clock``."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += seconds


@dataclass
class StoreHarness:
    """The store under test and the clock it reads.

    Subclass and override ``advance`` if the backend's notion of time must be
    moved some other way.
    """

    store: Store
    clock: ManualClock = field(default_factory=ManualClock)

    def now(self) -> float:
        """The store's current time."""
        return self.clock()

    def advance(self, seconds: float) -> None:
        """Move the store's time forward by ``seconds``."""
        self.clock.advance(seconds)
