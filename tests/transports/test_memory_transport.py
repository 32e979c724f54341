"""The message loop through the in-memory transport: framing, concurrency, cancellation.

Ordering claims use ``anyio.wait_all_tasks_blocked()``: once every other task is
blocked, anything the server was going to write by then is already in the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from handles.principal import Principal
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.transports.memory import MemoryClient, connect_memory

pytestmark = pytest.mark.anyio

PRINCIPAL = Principal("carol")
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Gate:
    """What the ``hold`` tool waits for, and what it saw."""

    def __init__(self) -> None:
        self.open = anyio.Event()
        self.cancelled: list[str | int] = []


def build(gate: Gate) -> Server:
    server = Server("mem", "1")

    @server.tool
    async def hold(ctx: Context) -> str:
        """Report progress, then wait for the gate."""
        await ctx.report_progress(0)
        try:
            await gate.open.wait()
        except anyio.get_cancelled_exc_class():
            gate.cancelled.append(ctx.request_id)
            raise
        return "released"

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool
    async def whoami(who: Principal) -> str:
        """Who calls."""
        return who.subject

    return server


@asynccontextmanager
async def connected(gate: Gate, **options: Any) -> AsyncIterator[MemoryClient]:
    with anyio.fail_after(5):
        async with connect_memory(build(gate), PRINCIPAL, **options) as client:
            yield client


def call(id: str | int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": {**MODERN_META, "progressToken": id}}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def cancel(id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}


async def start_hold(client: MemoryClient, id: str | int) -> None:
    """Call ``hold`` and wait until it runs (its progress notification arrived)."""
    await client.send(call(id, "hold"))
    progress = await client.receive()
    assert progress["method"] == "notifications/progress"
    assert progress["params"] == {"progressToken": id, "progress": 0}


def structured(reply: dict[str, Any]) -> Any:
    return reply["result"]["structuredContent"]["result"]


async def test_request_and_response() -> None:
    async with connected(Gate()) as client:
        assert await client.request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
        await client.send(call("x", "add", a=1, b=2))
        assert await client.receive() == {
            "jsonrpc": "2.0",
            "id": "x",
            "result": {
                "content": [{"type": "text", "text": "3"}],
                "structuredContent": {"result": 3},
                "isError": False,
                "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "mem", "version": "1"}},
            },
        }


async def test_the_principal_reaches_the_tools() -> None:
    async with connected(Gate()) as client:
        await client.send(call(1, "whoami"))
        assert structured(await client.receive()) == "carol"


async def test_malformed_input_is_answered_and_the_loop_goes_on() -> None:
    async with connected(Gate()) as client:
        await client.send(b"{oops")
        assert await client.receive() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the message is not valid JSON"},
        }
        await client.send(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
        assert (await client.receive())["error"]["code"] == -32600
        await client.send(b'{"jsonrpc":"2.0","id":"q","method":"ping","params":7}')
        reply = await client.receive()
        assert (reply["id"], reply["error"]["code"]) == ("q", -32600)
        assert await client.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_notifications_get_nothing_back() -> None:
    async with connected(Gate()) as client:
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await client.send({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add"}})
        await client.send(cancel("never-sent"))
        await client.send(cancel({"not": "an id"}))
        await anyio.wait_all_tasks_blocked()
        assert await client.request(1, "ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_requests_run_concurrently() -> None:
    gate = Gate()
    async with connected(gate) as client:
        await start_hold(client, "h")
        await client.send(call("a", "add", a=2, b=3))
        assert (await client.receive())["id"] == "a"  # answered while "h" still holds
        gate.open.set()
        reply = await client.receive()
        assert (reply["id"], structured(reply)) == ("h", "released")


async def test_every_request_that_waits_gets_a_worker_of_its_own() -> None:
    gate = Gate()
    async with connected(gate) as client:
        for id in range(10):  # sent at once: each worker hands the rest to the next
            await client.send(call(id, "hold"))
        started = [await client.receive() for _ in range(10)]
        assert sorted(m["params"]["progressToken"] for m in started) == list(range(10))
        await client.send(call("a", "add", a=2, b=3))
        assert (await client.receive())["id"] == "a"  # ten hold, one more still runs
        gate.open.set()
        assert sorted([(await client.receive())["id"] for _ in range(10)]) == list(range(10))


async def test_max_concurrency_bounds_the_requests_in_flight() -> None:
    gate = Gate()
    async with connected(gate, max_concurrency=1) as client:
        await start_hold(client, "h")
        await client.send(call("a", "add", a=2, b=3))
        await anyio.wait_all_tasks_blocked()  # "a" waits for the only slot
        gate.open.set()
        assert [(await client.receive())["id"] for _ in range(2)] == ["h", "a"]


async def test_a_cancelled_request_stops_and_gets_no_response() -> None:
    gate = Gate()
    async with connected(gate, max_concurrency=1) as client:
        await start_hold(client, 7)
        await client.send(cancel(7))
        await anyio.wait_all_tasks_blocked()
        assert gate.cancelled == [7]
        # Nothing was written for 7, and its slot is free again.
        await client.send(call(8, "add", a=1, b=1))
        reply = await client.receive()
        assert (reply["id"], structured(reply)) == (8, 2)


async def test_a_cancel_behind_a_waiting_request_still_arrives() -> None:
    """With every slot busy, the reader queues the next request and reads on."""
    gate = Gate()
    async with connected(gate, max_concurrency=1) as client:
        await start_hold(client, "h")
        await client.send(call("a", "add", a=2, b=3))
        await client.send(cancel("h"))
        reply = await client.receive()
        assert (reply["id"], structured(reply)) == ("a", 5)
        assert gate.cancelled == ["h"]


async def test_a_queued_request_cancelled_before_it_starts_gets_no_response() -> None:
    gate = Gate()
    async with connected(gate, max_concurrency=1) as client:
        await start_hold(client, "h")
        await client.send(call("a", "add", a=2, b=3))
        await client.send(cancel("a"))
        await client.send(call("b", "add", a=1, b=1))
        await anyio.wait_all_tasks_blocked()
        gate.open.set()
        assert [(await client.receive())["id"] for _ in range(2)] == ["h", "b"]


async def test_cancel_matches_the_id_type() -> None:
    gate = Gate()
    async with connected(gate) as client:
        await start_hold(client, 1)
        await client.send(cancel("1"))
        await anyio.wait_all_tasks_blocked()
        assert gate.cancelled == []
        gate.open.set()
        reply = await client.receive()
        assert (reply["id"], structured(reply)) == (1, "released")


async def test_a_finished_id_can_be_reused_and_a_late_cancel_is_ignored() -> None:
    gate = Gate()
    gate.open.set()
    async with connected(gate) as client:
        for _ in range(2):
            await client.send(call(5, "add", a=1, b=2))
            assert structured(await client.receive()) == 3
            await client.send(cancel(5))
        await anyio.wait_all_tasks_blocked()
        assert await client.request(6, "ping") == {"jsonrpc": "2.0", "id": 6, "result": {}}


async def test_closing_the_connection_cancels_requests_in_flight() -> None:
    gate = Gate()
    async with connected(gate) as client:
        await start_hold(client, "left")
    assert gate.cancelled == ["left"]
