"""The docs/examples baskets as real processes: stdio, and streamable HTTP under uvicorn.

Each is driven by FastMCP's client and by the official ``mcp`` client. Over HTTP two
bearer tokens are two principals; 50 concurrent ``add_item`` on one basket lose
nothing, on MemoryStore and on a real redis-server; the log holds no ERROR line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.redis_fixtures import RedisServer

from .support import (
    Caller,
    HttpServer,
    fastmcp_caller,
    fastmcp_stdio,
    http_server,
    sdk_caller,
    sdk_stdio,
)

pytestmark = pytest.mark.anyio
FRAMEWORKS = ["fastmcp", "sdk"]
CLIENTS = ["fastmcp-client", "mcp-client"]
CONCURRENT = 50


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # FastMCP and the SDK client run on asyncio


@pytest.fixture(params=FRAMEWORKS)
def framework(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _http(client: str, url: str, token: str) -> AbstractAsyncContextManager[Caller]:
    return fastmcp_caller(url, token) if client == "fastmcp-client" else sdk_caller(url, token)


def _unknown(basket_id: str) -> str:
    return (
        f"Unknown basket {basket_id!r}. Copy the basket_id exactly as create_basket "
        "returned it, call list_baskets to see your open baskets, "
        "or call create_basket to start a new one."
    )


async def _round_trip(call: Caller) -> str:
    basket_id = str((await call("create_basket", {})).structured["basket_id"])
    added = await call("add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 3})
    assert not added.is_error, added.text
    assert (await call("get_basket", {"basket_id": basket_id})).structured == {"items": {"tea": 3}}
    listed = (await call("list_baskets", {})).structured["result"]
    assert basket_id in [entry["id"] for entry in listed]
    assert (await call("checkout", {"basket_id": basket_id})).structured == {"items": {"tea": 3}}
    gone = await call("get_basket", {"basket_id": basket_id})
    assert gone.is_error and f"{basket_id!r} was checked out at " in gone.text
    other = str((await call("create_basket", {})).structured["basket_id"])
    assert (await call("close_basket", {"basket_id": other})).structured == {"closed": other}
    invented = await call("get_basket", {"basket_id": "bsk_invented"})
    assert invented.is_error and invented.text == _unknown("bsk_invented")
    return basket_id


async def test_stdio_with_fastmcp_client(framework: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    async with fastmcp_caller(fastmcp_stdio(framework, log)) as call:
        await _round_trip(call)
        assert (await call("add_item", {"basket_id": "bsk_x"})).is_error  # no sku
    text = log.read_text()
    assert "INFO" in text or framework == "sdk", "FastMCP logs each refusal at INFO"
    assert [line for line in text.splitlines() if line.startswith(("ERROR", "Traceback"))] == []


async def test_stdio_with_mcp_client(framework: str) -> None:
    async with sdk_caller(sdk_stdio(framework)) as call:
        await _round_trip(call)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, HttpServer]]:
    """Both baskets over HTTP on MemoryStore; FastMCP with ``mask_error_details``."""
    logs = tmp_path_factory.mktemp("logs")
    with (
        http_server("fastmcp", logs / "fastmcp.log", "--mask") as fast,
        http_server("sdk", logs / "sdk.log") as sdk,
    ):
        yield {"fastmcp": fast, "sdk": sdk}


async def test_http_two_principals(framework: str, client: str, servers: dict[str, Any]) -> None:
    server = servers[framework]
    async with _http(client, server.url, "tok-alice") as alice:
        basket_id = await _round_trip(alice)
        mine = str((await alice("create_basket", {})).structured["basket_id"])
        await alice("add_item", {"basket_id": mine, "sku": "tea"})
    async with _http(client, server.url, "tok-bob") as bob:
        for tool, extra in (("get_basket", {}), ("add_item", {"sku": "tea"}), ("checkout", {})):
            refused = await bob(tool, {"basket_id": mine, **extra})
            assert refused.is_error
            assert refused.text == _unknown(mine)
        assert mine not in str((await bob("list_baskets", {})).structured)
        assert (await bob("get_basket", {"basket_id": basket_id})).text == _unknown(basket_id)
    async with _http(client, server.url, "tok-alice") as alice:
        assert (await alice("get_basket", {"basket_id": mine})).structured == {"items": {"tea": 1}}
    assert server.errors() == []


async def _concurrent_adds(call: Caller) -> None:
    basket_id = (await call("create_basket", {})).structured["basket_id"]
    failures: list[str] = []

    async def add(n: int) -> None:
        reply = await call("add_item", {"basket_id": basket_id, "sku": f"sku{n % 5}"})
        if reply.is_error:
            failures.append(reply.text)

    async with anyio.create_task_group() as group:
        for n in range(CONCURRENT):
            group.start_soon(add, n)
    assert failures == []
    items = (await call("get_basket", {"basket_id": basket_id})).structured["items"]
    assert items == {f"sku{k}": CONCURRENT // 5 for k in range(5)}


async def test_http_concurrent_adds_lose_nothing_on_memory(
    framework: str, client: str, servers: dict[str, Any]
) -> None:
    async with _http(client, servers[framework].url, "tok-alice") as call:
        await _concurrent_adds(call)
    assert servers[framework].errors() == []


@pytest.mark.redis
async def test_http_concurrent_adds_lose_nothing_on_redis(
    framework: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    store = f"{redis_server.url}/0"
    with http_server(framework, tmp_path / "server.log", "--store", store) as server:
        for client in CLIENTS:
            async with _http(client, server.url, "tok-alice") as call:
                await _concurrent_adds(call)
                await _round_trip(call)
        async with _http("mcp-client", server.url, "tok-bob") as bob:
            assert (await bob("get_basket", {"basket_id": "bsk_x"})).text == _unknown("bsk_x")
        assert server.errors() == []
