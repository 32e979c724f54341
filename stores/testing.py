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

import pytest

from ._conformance import (
    BasicCases,
    ChargeCases,
    ConcurrencyCases,
    CounterCases,
    ExpiryCases,
    LimitCases,
    ReplaceOrReadCases,
    RetireCases,
)
from ._harness import ManualClock as ManualClock
from ._harness import StoreHarness as StoreHarness

__all__ = ["ManualClock", "StoreConformance", "StoreHarness"]


@pytest.mark.anyio
class StoreConformance(
    BasicCases,
    LimitCases,
    ExpiryCases,
    ConcurrencyCases,
    CounterCases,
    RetireCases,
    ReplaceOrReadCases,
    ChargeCases,
):
    """Every test of the store contract; subclass it and provide ``store_harness``."""
