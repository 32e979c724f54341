"""Log messages reach the client only at the levels it asked for, in both eras.

2025 era: ``logging/setLevel`` on the connection (stdio-like memory transport) or,
over stateless HTTP, for the principal's later requests. 2026-07-28: ``_meta``
``io.modelcontextprotocol/logLevel`` on each request. Logged data gets the
results' hygiene: no exception text, no principal fields, a size cap.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from handles.principal import Principal
from handles.server.protocol import LOG_LEVELS
from handles.transports.http import http_app
from handles.transports.memory import MemoryClient, connect_memory

from .asking_support import SECRET, build_server, legacy_init, modern_meta
from .http_support import serving

pytestmark = pytest.mark.anyio
ALICE = Principal("alice")
LEVEL = "io.modelcontextprotocol/logLevel"


async def call_collecting(client: MemoryClient, id: int, params: dict[str, Any]) -> list[Any]:
    """Send a tools/call; every message up to and including its response."""
    await client.send({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    seen = []
    while True:
        message = await client.receive()
        seen.append(message)
        if message.get("id") == id:
            return seen


def logged(messages: list[Any]) -> list[str]:
    levels = []
    for m in messages:
        if m.get("method") == "notifications/message":
            assert m["params"]["logger"] == "chatty"
            assert m["params"]["data"] == f"at {m['params']['level']}"
            levels.append(m["params"]["level"])
    return levels


async def test_legacy_nothing_is_logged_until_the_client_sets_a_level() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        init = await client.request(1, "initialize", legacy_init())
        assert init["result"]["capabilities"] == {"tools": {}, "logging": {}}
        messages = await call_collecting(client, 2, {"name": "chatty"})
        assert len(messages) == 1 and messages[0]["result"]["isError"] is False
        assert await client.request(3, "logging/setLevel", {"level": "warning"}) == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {},
        }
        messages = await call_collecting(client, 4, {"name": "chatty"})
        assert logged(messages) == list(LOG_LEVELS[3:])
        await client.request(5, "logging/setLevel", {"level": "debug"})
        assert logged(await call_collecting(client, 6, {"name": "chatty"})) == list(LOG_LEVELS)


async def test_legacy_set_level_refuses_an_unknown_level() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(1, "initialize", legacy_init())
        reply = await client.request(2, "logging/setLevel", {"level": "verbose"})
        assert reply["error"]["code"] == -32602
        assert "debug, info, notice" in reply["error"]["message"]


async def test_modern_logs_per_request_at_the_level_its_meta_names() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        plain = {"name": "chatty", "_meta": modern_meta()}
        assert logged(await call_collecting(client, 1, plain)) == []
        error = {"name": "chatty", "_meta": modern_meta(**{LEVEL: "error"})}
        assert logged(await call_collecting(client, 2, error)) == list(LOG_LEVELS[4:])
        assert logged(await call_collecting(client, 3, plain)) == []  # nothing carried over
        bogus = {"name": "chatty", "_meta": modern_meta(**{LEVEL: "loud"})}
        assert logged(await call_collecting(client, 4, bogus)) == []
        reply = await client.request(
            5, "logging/setLevel", {"level": "debug", "_meta": modern_meta()}
        )
        assert reply["error"]["code"] == -32601  # removed in 2026-07-28


async def test_logged_data_gets_the_results_hygiene() -> None:
    async with connect_memory(build_server(max_log_bytes=4096), ALICE) as client:
        params = {"name": "leaky", "_meta": modern_meta(**{LEVEL: "debug"})}
        messages = await call_collecting(client, 1, params)
    raw = json.dumps(messages)
    assert SECRET not in raw and "hunter2" not in raw and "Traceback" not in raw
    error, big, who = (m["params"]["data"] for m in messages[:3])
    assert error == "RuntimeError (the details are in the server's log)"
    assert isinstance(big, str) and len(big) < 400
    assert big.endswith("[log data of 100011 bytes cut: this server sends at most 4096]")
    assert who == f"principal {ALICE.digest[:12]}"


async def sse_messages(response: httpx.Response) -> list[Any]:
    assert response.headers["content-type"] == "text/event-stream"
    return [
        json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_http_both_eras_filter_by_level() -> None:
    headers = {"accept": "application/json, text/event-stream"}
    legacy = {**headers, "mcp-protocol-version": "2025-11-25"}
    async with (
        serving(http_app(build_server(), principal=ALICE)) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):

        async def post(id: int, method: str, params: Any, h: dict[str, str]) -> Any:
            body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
            return await http.post(url, json=body, headers=h)

        await post(1, "initialize", legacy_init(), headers)
        quiet = await post(2, "tools/call", {"name": "chatty"}, legacy)
        assert quiet.headers["content-type"] == "application/json"  # nothing logged
        assert (await post(3, "logging/setLevel", {"level": "critical"}, legacy)).json() == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {},
        }
        loud = await sse_messages(await post(4, "tools/call", {"name": "chatty"}, legacy))
        assert logged(loud) == ["critical", "alert", "emergency"]
        assert loud[-1]["id"] == 4

        modern = {
            **headers,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "chatty",
        }
        params = {"name": "chatty", "_meta": modern_meta(**{LEVEL: "alert"})}
        assert logged(await sse_messages(await post(5, "tools/call", params, modern))) == [
            "alert",
            "emergency",
        ]
        params = {"name": "chatty", "_meta": modern_meta()}
        plain = await post(6, "tools/call", params, modern)
        assert plain.headers["content-type"] == "application/json"
