"""Handle-affine routing, proven with a real nginx: two tab replicas, one redis-server.

nginx hashes on ``Mcp-Param-Tab-Id`` (which the official client mirrors from the
``x-mcp-header`` annotation), so every call of a tab reaches the replica that
holds its page: over many calls on many tabs, no page is ever reopened. Then one
replica is killed (SIGKILL): nginx sends its tabs to the other, which reopens each
from the state in Redis (URL, history, cookies), and every call succeeds after at
most one retryable refusal.

The figures (calls, reopenings, refusals) are printed (``pytest -s``) and are the
ones in benchmarks/RELIABILITY.md.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.redis_fixtures import RedisServer

from ..docs_examples.support import site
from .support import Replica, nginx, replica

pytestmark = [pytest.mark.anyio, pytest.mark.redis, pytest.mark.timeout(300)]
TABS = 8
ROUNDS = 4  # each round: navigate, read_page, read_page per tab
PAGES = ("/a", "/b", "/c")
REOPENED = "reopened from its stored state"
OPENED = "opened from its stored state"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(url: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


class Caller:
    """Calls tools, retrying once after a refusal, and counts both."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls = 0
        self.refusals: Counter[str] = Counter()

    async def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        for attempt in (1, 2):
            self.calls += 1
            try:
                result = await self.client.call_tool(tool, args)
            except MCPError as exc:  # e.g. a 502 from the gateway
                refusal = f"MCPError {exc}"
            else:
                if not result.is_error:
                    assert isinstance(result.structured_content, dict)
                    return result.structured_content
                refusal = str(result.content[0].text)  # type: ignore[union-attr]
            self.refusals[str(args.get("tab_id", "-"))] += 1
            assert attempt == 1, f"{tool} {args} refused twice; the second: {refusal}"
        raise AssertionError("unreachable")


def replica_of(routes: list[tuple[str, str, str]], tab: str) -> set[str]:
    return {upstream for tab_id, upstream, _ in routes if tab_id == tab}


async def test_calls_stay_on_the_tabs_replica_and_move_once_when_it_dies(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    namespace = f"tabs-{uuid.uuid4().hex[:8]}"
    with (
        site() as base,
        replica(tmp_path, redis_server.url, namespace, "--open-on-first-use") as one,
        replica(tmp_path, redis_server.url, namespace, "--open-on-first-use") as two,
        nginx(tmp_path, [one.address, two.address]) as gateway,
    ):
        replicas = {one.address: one, two.address: two}
        async with connect(gateway.url) as client:
            caller = Caller(client)
            tabs = [(await caller.ok("open_tab", url=f"{base}/a"))["tab_id"] for _ in range(TABS)]
            last: dict[str, str] = {}
            for round in range(ROUNDS):
                for number, tab in enumerate(tabs):
                    url = f"{base}{PAGES[(round + number) % len(PAGES)]}"
                    assert (await caller.ok("navigate", tab_id=tab, url=url))["url"] == url
                    assert (await caller.ok("read_page", tab_id=tab))["url"] == url
                    await caller.ok("read_page", tab_id=tab)
                    last[tab] = url
            steady_calls, steady_refusals = caller.calls, sum(caller.refusals.values())

            # Steady state: each tab's calls all went to one replica, no page reopened.
            routes = gateway.routes()
            placed = {tab: replica_of(routes, tab) for tab in tabs}
            assert all(len(where) == 1 for where in placed.values()), placed
            assert sum(r.lines(REOPENED) for r in replicas.values()) == 0
            assert sum(r.lines(OPENED) for r in replicas.values()) == TABS  # once each
            held: dict[str, list[str]] = defaultdict(list)
            for tab, where in placed.items():
                held[next(iter(where))].append(tab)
            assert set(held) <= set(replicas)

            # Kill the replica holding the most tabs; its tabs move to the other.
            victim_address = max(held, key=lambda address: len(held[address]))
            victim = replicas[victim_address]
            survivor: Replica = next(r for r in replicas.values() if r is not victim)
            moved = held[victim_address]
            victim.kill()
            before = len(gateway.routes())
            for tab in tabs:
                page = await caller.ok("read_page", tab_id=tab)
                assert page["url"] == last[tab]  # reopened at the URL it was left at
            for tab in moved:  # history and the page survive the move
                assert (await caller.ok("navigate", tab_id=tab, url=f"{base}/c"))["title"] == (
                    "Page C"
                )
                assert (await caller.ok("back", tab_id=tab))["url"] == last[tab]
            after = gateway.routes()[before:]
            assert all(survivor.address in upstream for tab, upstream, _ in after if tab != "-")
            reopened = survivor.lines(REOPENED)
            assert reopened == len(moved)  # each moved tab reopened exactly once
            failover_calls = caller.calls - steady_calls

        print(
            f"\nnginx affinity: {TABS} tabs, {steady_calls} calls in steady state "
            f"(tabs per replica: {sorted(len(v) for v in held.values())}), "
            f"0 reopenings; killed the replica holding {len(moved)} tabs: "
            f"{failover_calls} calls after, {reopened} reopenings, "
            f"{sum(caller.refusals.values())} refusals"
        )
        assert steady_refusals == 0
        assert all(count <= 1 for count in caller.refusals.values()), caller.refusals
