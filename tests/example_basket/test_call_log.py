"""The log: one line per tool call, and never a whole handle, a key, a subject or a state."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from example_basket.app import build_server
from handles.principal import Principal
from handles.server.dispatch import Server
from stores.memory import MemoryStore
from tests.handles.support import FailingStore

from .support import call_in_process

pytestmark = pytest.mark.anyio
SECRET = "log-secret-" + "L" * 32
ALICE = Principal("alice-the-subject", issuer="https://id.example")
BOB = Principal("bob-the-subject", issuer="https://id.example")
LINE = re.compile(
    r"tools/call (?P<tool>[a-z_]+) principal=(?P<digest>[0-9a-f]{12}) "
    r"outcome=(?P<outcome>ok|error|input_required|refused \(\w+\)) duration_ms=\d+\.\d\d"
)
FULL_ID = re.compile(r"bsk_[A-Za-z0-9_-]{43}")


call = call_in_process


async def session(server: Server) -> tuple[int, list[str]]:
    """A session with successes and every kind of refusal; the calls made and basket ids."""
    created = await call(server, ALICE, "create_basket")
    basket_id = created["structuredContent"]["basket_id"]
    mistyped = basket_id[:-1] + ("A" if basket_id[-1] != "A" else "B")  # always differs
    calls: list[tuple[Principal, str, dict[str, Any]]] = [
        (ALICE, "add_item", {"basket_id": basket_id, "sku": "MUG-12", "quantity": 3}),
        (ALICE, "get_basket", {"basket_id": basket_id}),
        (ALICE, "search_catalog", {"query": "mug"}),
        (ALICE, "add_item", {"basket_id": basket_id, "sku": "NOPE-1"}),
        (ALICE, "add_item", {"basket_id": mistyped, "sku": "MUG-12"}),
        (BOB, "get_basket", {"basket_id": basket_id}),
        (ALICE, "add_item", {"basket_id": basket_id, "quantity": 1000}),
        (ALICE, "checkout", {"basket_id": basket_id}),
        (ALICE, "checkout", {"basket_id": basket_id, "confirm": True}),
        (ALICE, "get_basket", {"basket_id": basket_id}),
        (ALICE, "list_baskets", {}),
    ]
    for principal, tool, arguments in calls:
        await call(server, principal, tool, **arguments)
    return len(calls) + 1, [basket_id]


def texts(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


def assert_clean(lines: list[str], basket_ids: list[str]) -> None:
    log = "\n".join(lines)
    for secret in (SECRET, ALICE.subject, BOB.subject, ALICE.digest, *basket_ids):
        assert secret not in log
    assert FULL_ID.search(log) is None
    assert "MUG-12" not in log and '"items"' not in log  # no state, no arguments


async def test_one_line_per_call_at_info(caplog: pytest.LogCaptureFixture) -> None:
    server = build_server(MemoryStore(), secret_keys=SECRET, rate_limit=100)
    with caplog.at_level(logging.INFO):
        calls, basket_ids = await session(server)
    lines = [line for line in texts(caplog) if line.startswith("tools/call ")]
    assert len(lines) == calls and all(LINE.fullmatch(line) for line in lines), lines
    outcomes = [LINE.fullmatch(line)["outcome"] for line in lines]  # type: ignore[index]
    assert outcomes.count("ok") == 6 and outcomes.count("error") == 6
    assert_clean(texts(caplog), basket_ids)


async def test_nothing_secret_even_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    server = build_server(MemoryStore(), secret_keys=SECRET)
    with caplog.at_level(logging.DEBUG):
        _, basket_ids = await session(server)
    assert any("tag does not verify" in line for line in texts(caplog))  # debug reasons shown
    assert_clean(texts(caplog), basket_ids)


async def test_store_failures_are_logged_without_detail(caplog: pytest.LogCaptureFixture) -> None:
    server = build_server(FailingStore(MemoryStore()), secret_keys=SECRET)
    with caplog.at_level(logging.DEBUG):
        result = await call(server, ALICE, "create_basket")
    assert result["isError"] and "temporarily unavailable" in result["content"][0]["text"]
    assert all(record.exc_info is None for record in caplog.records)
    assert_clean(texts(caplog), [])
