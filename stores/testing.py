"""``StoreConformance``: the contract of ``stores.base`` as a pytest test class.

Run it against a backend by subclassing it and providing one fixture,
``store_harness``, that yields a ``StoreHarness``::

    class TestMyStore(StoreConformance):
        @pytest.fixture
        async def store_harness(self) -> AsyncIterator[StoreHarness]:
            clock = ManualClock()
            async with MyStore(clock=clock) as store:
                yield StoreHarness(store, clock)

The suite moves time only through the harness and never sleeps. Every expiry it
sets lies at least 100 s after the harness's now, so a backend that also expires
data physically, relative to its clock, never loses a record the clock still
considers live. Tests are anyio tests; they run on whatever ``anyio_backend``
the subclass's scope provides. This module imports pytest; import it from tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ._conformance import (
    BasicCases,
    ConcurrencyCases,
    CounterCases,
    ExpiryCases,
    LimitCases,
    RetireCases,
)
from .base import Store

__all__ = ["ManualClock", "StoreConformance", "StoreHarness"]


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


@pytest.mark.anyio
class StoreConformance(
    BasicCases, LimitCases, ExpiryCases, ConcurrencyCases, CounterCases, RetireCases
):
    """Every test of the store contract; subclass it and provide ``store_harness``."""
