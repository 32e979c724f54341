"""The conformance suite on a third-party backend: ``SQLiteStore`` from sqlite_store.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stores.testing import ManualClock, StoreConformance, StoreHarness
from tests.stores.sqlite_store import SQLiteStore


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    async def store_harness(self) -> AsyncIterator[StoreHarness]:
        clock = ManualClock()
        async with SQLiteStore(clock=clock) as store:
            yield StoreHarness(store, clock)
