"""The basket server on a full Redis (``maxmemory`` reached, ``noeviction``), rate limit on.

Every call gets a result the model can act on (never a JSON-RPC internal error),
creates and adds are refused up front with "the basket store is full", and what
reads or frees data keeps working.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from example_basket.app import build_server
from handles.principal import Principal
from handles.server.dispatch import Server
from stores.redis import RedisStore
from tests.redis_fixtures import RedisServer, running_redis_server

from .support import SECRET, call_in_process

pytestmark = [pytest.mark.anyio, pytest.mark.redis]
ALICE = Principal("alice")
FULL = (
    "The basket store is full, so nothing was changed. This clears when the server frees "
    "space; close_basket on baskets you no longer need frees some (list_baskets lists them)."
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def small_redis() -> Iterator[RedisServer]:
    with running_redis_server("--maxmemory-policy", "noeviction") as server:
        yield server


async def call(server: Server, tool: str, **arguments: Any) -> dict[str, Any]:
    return await call_in_process(server, ALICE, tool, **arguments)


def text(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


async def test_a_full_store_says_so_and_keeps_serving(small_redis: RedisServer) -> None:
    url, namespace = small_redis.url, f"full-{uuid.uuid4().hex}"
    async with RedisStore.from_url(url, namespace=namespace) as store:
        server = build_server(store, secret_keys=SECRET, rate_limit=10_000, quota=100_000)
        kept = (await call(server, "create_basket"))["structuredContent"]["basket_id"]
        await call(server, "add_item", basket_id=kept, sku="MUG-24")
        client = small_redis.client()
        # A limit a little above what Redis holds now: baskets fill it.
        client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 200_000)
        created = 0
        for _ in range(20_000):
            result = await call(server, "create_basket")
            if result["isError"]:
                break
            created += 1
        assert text(result) == FULL
        assert created > 0
        keys = len(client.keys(f"{namespace}:*:r:basket:*"))  # not the rate-limit counters
        for _ in range(20):
            assert text(await call(server, "create_basket")) == FULL
        assert text(await call(server, "add_item", basket_id=kept, sku="CUP-01")) == FULL
        assert len(client.keys(f"{namespace}:*:r:basket:*")) == keys  # nothing past the limit

        shown = await call(server, "get_basket", basket_id=kept)
        assert shown["isError"] is False
        assert [line["sku"] for line in shown["structuredContent"]["items"]] == ["MUG-24"]
        assert (await call(server, "list_baskets"))["isError"] is False
        assert (await call(server, "search_catalog", query="mug"))["isError"] is False
        assert (await call(server, "close_basket", basket_id=kept))["isError"] is False
        client.config_set("maxmemory", 0)
    print(f"\n{created} baskets filled Redis; then: {FULL!r}")
