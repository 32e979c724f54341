"""Round trips to Redis per basket tool call, counted on a real redis-server.

Issue 7's budget: at most 2 per ``add_item`` (read, then compare-and-set) and 1 per
``get_basket`` (read with renewal). Counted twice, independently: requests written
by the client's connections, and ``EVALSHA`` calls in the server's commandstats; on both
of a ``RedisStore``'s paths (redis-py's client, and its own connection, which the demo uses).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from example_basket.app import build_server
from handles import Principal, Server
from handles.server.dispatch import Connection
from tests.redis_fixtures import STORE_PATHS, CountingConnection, RedisServer, counting_store

pytestmark = pytest.mark.anyio

SECRET = "round-trip-test-secret-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # redis.asyncio runs on asyncio only


@pytest.fixture(params=STORE_PATHS)
async def basket_server(
    request: pytest.FixtureRequest, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Server]:
    namespace = f"trips-{uuid.uuid4().hex[:8]}"
    async with counting_store(
        redis_server.url, request.param, monkeypatch, namespace=namespace
    ) as store:
        yield build_server(store, secret_keys=[SECRET])


class Caller:
    def __init__(self, server: Server, redis_server: RedisServer) -> None:
        self.server, self.redis = server, redis_server.client()
        self.connection = Connection(Principal("trips"))
        self.ids = 0

    async def call(self, tool: str, **arguments: Any) -> tuple[dict[str, Any], tuple[int, int]]:
        """The tool's structured result, and (requests sent, EVALSHA calls) for it."""
        self.ids += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        sent, evalsha = CountingConnection.sent, self._evalsha()
        response = await self.server.handle(message, self.connection)
        trips = CountingConnection.sent - sent, self._evalsha() - evalsha
        assert response is not None
        result = response["result"]
        assert not result["isError"], result["content"]
        return result["structuredContent"], trips

    def _evalsha(self) -> int:
        stats = self.redis.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {"calls": 0})["calls"])


async def test_add_item_takes_two_round_trips_and_get_basket_one(
    basket_server: Server, redis_server: RedisServer
) -> None:
    caller = Caller(basket_server, redis_server)
    # Warm up: the first call of each script loads it (EVALSHA, NOSCRIPT, EVAL).
    warm = (await caller.call("create_basket"))[0]["basket_id"]
    await caller.call("add_item", basket_id=warm, sku="MUG-24")
    await caller.call("get_basket", basket_id=warm)

    basket_id = (await caller.call("create_basket"))[0]["basket_id"]
    for sku in ("MUG-24", "CUP-01", "MUG-24"):
        view, trips = await caller.call("add_item", basket_id=basket_id, sku=sku)
        assert trips == (2, 2), sku
    view, trips = await caller.call("get_basket", basket_id=basket_id)
    assert trips == (1, 1)
    assert {line["sku"]: line["quantity"] for line in view["items"]} == {"MUG-24": 2, "CUP-01": 1}
