"""Shared fixtures: every async test runs on asyncio and on trio unless it opts out."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.redis_fixtures"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
