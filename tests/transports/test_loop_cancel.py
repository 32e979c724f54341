"""A cancel hits the request it names, never the next one its worker runs.

Requests share their worker's cancel scope (one per worker, renewed after a cancel),
so these pin down the edges: a request that finishes despite the cancel (it was in
a shielded section, and stdio then writes its reply without yielding), and a cancel
that arrives for a request already done.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from handles.principal import Principal
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.transports.memory import MemoryClient, connect_memory
from handles.transports.stdio import serve_stdio

pytestmark = pytest.mark.anyio

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Gate:
    def __init__(self) -> None:
        self.open = anyio.Event()
        self.runs: list[str] = []


def build(gate: Gate) -> Server:
    server = Server("cancel", "1")

    @server.tool
    async def shielded(ctx: Context) -> str:
        """Wait for the gate in a shielded section: a cancel cannot stop it."""
        await ctx.report_progress(0)
        with anyio.CancelScope(shield=True):
            await gate.open.wait()
        gate.runs.append("shielded")
        return "done"

    @server.tool
    async def held(ctx: Context) -> str:
        """Wait for the gate (a cancel stops it)."""
        await ctx.report_progress(0)
        try:
            await gate.open.wait()
        except anyio.get_cancelled_exc_class():
            gate.runs.append("held cancelled")
            raise
        gate.runs.append("held")
        return "held"

    @server.tool
    async def step(who: str) -> str:
        """Yield twice, then say who ran."""
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        gate.runs.append(who)
        return who

    return server


@asynccontextmanager
async def connected(gate: Gate, **options: Any) -> AsyncIterator[MemoryClient]:
    with anyio.fail_after(5):
        async with connect_memory(build(gate), Principal("dana"), **options) as client:
            yield client


class Pipes:
    """serve_stdio in this process, on two pipes: write requests, read replies."""

    def __init__(self, to_server: int, from_server: int) -> None:
        self.to_server, self.from_server = to_server, from_server
        self.buffer = b""

    async def send(self, message: dict[str, Any]) -> None:
        os.write(self.to_server, json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.from_server)
            self.buffer += os.read(self.from_server, 65536)
        line, _, self.buffer = self.buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply


@asynccontextmanager
async def over_stdio(gate: Gate, max_concurrency: int = 1) -> AsyncIterator[Pipes]:
    server_in, client_out = os.pipe()
    client_in, server_out = os.pipe()
    os.set_blocking(client_in, False)
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(
                    lambda: serve_stdio(
                        build(gate),
                        principal=Principal("dana"),
                        max_concurrency=max_concurrency,
                        stdin=server_in,
                        stdout=server_out,
                    )
                )
                yield Pipes(client_out, client_in)
                os.close(client_out)  # EOF: the server ends by itself
                client_out = -1
    finally:
        for fd in (server_in, client_in, server_out, client_out):
            if fd >= 0:
                os.close(fd)


def call(id: str | int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": {**META, "progressToken": id}}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def cancel(id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}


@pytest.mark.parametrize("transport", ["memory", "stdio"])
async def test_the_request_after_one_that_outlived_its_cancel_still_runs(transport: str) -> None:
    gate = Gate()
    connection = connected(gate, max_concurrency=1) if transport == "memory" else over_stdio(gate)
    async with connection as client:
        await client.send(call("s", "shielded"))
        assert (await client.receive())["method"] == "notifications/progress"
        await client.send(call("next", "step", who="next"))  # queued behind "s"
        await client.send(cancel("s"))
        await anyio.wait_all_tasks_blocked()
        gate.open.set()
        reply = await client.receive()
        if reply["id"] == "s":  # stdio wrote it without a checkpoint, so no cancel came
            assert transport == "stdio"
            reply = await client.receive()
        # "next", on the same worker, ran in full, in a scope nobody cancelled.
        assert reply["id"] == "next"
        assert reply["result"]["structuredContent"] == {"result": "next"}
        assert gate.runs == ["shielded", "next"]
        await client.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert await client.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_a_cancel_for_a_finished_request_touches_nothing() -> None:
    gate = Gate()
    async with connected(gate, max_concurrency=1) as client:
        await client.send(call("a", "step", who="a"))
        assert (await client.receive())["id"] == "a"
        await client.send(call("b", "step", who="b"))
        await client.send(cancel("a"))
        reply = await client.receive()
        assert reply["result"]["structuredContent"] == {"result": "b"}
        assert gate.runs == ["a", "b"]


@pytest.mark.parametrize("transport", ["memory", "stdio"])
async def test_a_cancel_names_its_request_by_type_too(transport: str) -> None:
    """``True == 1`` and ``1.0 == 1`` in Python: neither cancels request ``1``; ``1`` does."""
    gate = Gate()
    connection = (
        connected(gate, max_concurrency=2) if transport == "memory" else over_stdio(gate, 2)
    )
    async with connection as client:
        await client.send(call(1, "held"))
        assert (await client.receive())["method"] == "notifications/progress"
        await client.send(call("2", "held"))
        assert (await client.receive())["method"] == "notifications/progress"
        for other in (True, 1.0, "1"):
            await client.send(cancel(other))
        await client.send(cancel("2"))  # a cancel that matches: request "2" ends unanswered
        with anyio.fail_after(5):
            while "held cancelled" not in gate.runs:
                await client.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
                assert (await client.receive())["id"] == 9
        gate.open.set()
        reply = await client.receive()
        assert (reply["id"], reply["result"]["structuredContent"]) == (1, {"result": "held"})
        assert gate.runs == ["held cancelled", "held"]
