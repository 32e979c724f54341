"""Checkout logs to the client (a real stdio subprocess, the official client), filtered by level.

It logs ``debug`` before asking and ``info`` once the order is placed. 2026-07-28:
the client's ``log_level`` rides in each request's ``_meta``; 2025-11-25: the client
sends ``logging/setLevel``. Without either nothing is sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import LoggingMessageNotificationParams

from .support import connect, ok, server_params

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Logs:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.seen.append(params.model_dump(mode="json", exclude_none=True))


async def checkout(mode: str, level: str | None, set_level: str | None = None) -> Logs:
    logs = Logs()
    options: dict[str, Any] = {"logging_callback": logs}
    if level is not None:
        options["log_level"] = level
    async with connect(server_params("alice"), mode, **options) as client:
        if set_level is not None:
            with pytest.warns(MCPDeprecationWarning):  # logging is deprecated in 2026-07-28
                await client.set_logging_level(set_level)  # type: ignore[arg-type]
        basket_id = (await ok(client, "create_basket"))["basket_id"]
        await ok(client, "add_item", basket_id=basket_id, sku="MUG-24")
        order = await ok(client, "checkout", basket_id=basket_id, confirm=True)
        placed = {"event": "order placed", "order_id": order["order_id"]}
        expected = {**placed, "basket_id": basket_id, "total": 19.9}
        assert all(entry["data"] == expected for entry in logs.seen if entry["level"] == "info")
    return logs


@pytest.mark.parametrize(
    ("mode", "level", "set_level"),
    [("2026-07-28", "info", None), ("legacy", None, "info")],
    ids=["2026-07-28", "2025-11-25"],
)
async def test_info_is_sent_and_debug_is_not(
    mode: str, level: str | None, set_level: str | None
) -> None:
    logs = await checkout(mode, level, set_level)
    assert [(e["level"], e["logger"]) for e in logs.seen] == [("info", "checkout")]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_nothing_is_sent_unless_asked(mode: str) -> None:
    assert (await checkout(mode, None)).seen == []


async def test_debug_shows_the_question_too() -> None:
    logs = Logs()
    async with connect(server_params("alice"), "legacy", logging_callback=logs) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level("debug")
        basket_id = (await ok(client, "create_basket"))["basket_id"]
        await ok(client, "add_item", basket_id=basket_id, sku="MUG-24")
        await client.call_tool("checkout", {"basket_id": basket_id})  # no elicitation: refused
    assert logs.seen == [
        {"level": "debug", "logger": "checkout", "data": "asking the user to confirm 19.90 EUR"}
    ]
