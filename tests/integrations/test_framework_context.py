"""Issue 18 item 4: a handler logs and asks the user with its framework's own Context.

The adapters add no mechanism of their own: a ``closes`` handler (a checkout) declares the
framework's ``Context``, logs with ``ctx.info`` and asks with ``ctx.elicit``, and each
framework's own in-memory client receives the log message and answers the question.

Both clients connect with ``mode="legacy"``, the 2025-era initialize handshake: that is the
era in which ``ctx.elicit`` is a push ``elicitation/create`` request awaited inside the call
(and in which ``notifications/message`` needs no per-request ``_meta`` opt-in). Most hosts
in use still open with it.
"""

from __future__ import annotations

from typing import Any, Literal

import mcp_types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import Context as FastMCPContext
from fastmcp import FastMCP
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.logging import LogMessage
from mcp import Client as SDKClient
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import Context as SDKContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel

from handles import HandleKind, HandleManager, Lifetime, ToolError
from handles.integrations import fastmcp as fastmcp_adapter
from handles.integrations import mcp_sdk as sdk_adapter
from stores import MemoryStore

from .support import WAIT, Reply, _reply

pytestmark = [
    pytest.mark.anyio,
    # The SDK marks its logging helpers deprecated as of 2026-07-28 (SEP-2577); they work
    # on the 2025-era connection this file uses, which is the point.
    pytest.mark.filterwarnings(f"ignore::{MCPDeprecationWarning.__module__}.MCPDeprecationWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # FastMCP and the SDK client run on asyncio


class Basket(BaseModel):
    items: dict[str, int] = {}


class Confirm(BaseModel):
    confirm: bool


BASKET = HandleKind("basket", "bsk", Basket, Lifetime(idle=1800), close_tool="close_basket")


def _question(state: Basket) -> str:
    return (
        "Place the order for " + ", ".join(f"{n} x {sku}" for sku, n in state.items.items()) + "?"
    )


def _fastmcp_shop(orders: list[dict[str, int]]) -> FastMCP:
    server = FastMCP("shop")
    tools = fastmcp_adapter.HandleTools(server, _manager())
    _basket_tools(tools)

    @tools.closes(BASKET, reason="checked out")
    async def checkout(state: Basket, ctx: FastMCPContext) -> dict[str, Any]:
        """Buy what is in the basket, once the user has confirmed."""
        await ctx.info(f"checking out {len(state.items)} line(s)")
        answer = await ctx.elicit(_question(state), bool)
        if answer.action != "accept" or answer.data is not True:
            raise ToolError("not ordered: the user did not confirm")
        orders.append(dict(state.items))
        return {"order": len(orders), "items": state.items}

    return server


def _sdk_shop(orders: list[dict[str, int]]) -> MCPServer:
    server = MCPServer("shop")
    tools = sdk_adapter.HandleTools(server, _manager())
    _basket_tools(tools)

    @tools.closes(BASKET, reason="checked out")
    async def checkout(state: Basket, ctx: SDKContext) -> dict[str, Any]:
        """Buy what is in the basket, once the user has confirmed."""
        await ctx.info(f"checking out {len(state.items)} line(s)")
        answer = await ctx.elicit(_question(state), Confirm)
        if answer.action != "accept" or not answer.data.confirm:
            raise ToolError("not ordered: the user did not confirm")
        orders.append(dict(state.items))
        return {"order": len(orders), "items": state.items}

    return server


def _manager() -> HandleManager:
    key = "framework-context-secret-" + "s" * 32
    return HandleManager(MemoryStore(), [BASKET], secret_keys=[key])


def _basket_tools(tools: fastmcp_adapter.HandleTools | sdk_adapter.HandleTools) -> None:
    tools.lifecycle(BASKET)

    @tools.edits(BASKET)
    async def add_item(state: Basket, sku: str, quantity: int = 1) -> Basket:
        """Add quantity units of sku to the basket."""
        state.items[sku] = state.items.get(sku, 0) + quantity
        return state

    @tools.reads(BASKET)
    async def get_basket(state: Basket) -> Basket:
        """Show what is in the basket."""
        return state


Answer = Literal["accept", "decline", "cancel"]


class User:
    """The client side: what it was told and asked, and how it answers."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.logs: list[tuple[str, Any]] = []
        self.questions: list[str] = []


async def _shop_with(framework: str, user: User, orders: list[dict[str, int]]) -> list[Reply]:
    """create, add, checkout, then checkout again and get: the replies of the last three."""
    if framework == "fastmcp":

        async def on_log(message: LogMessage) -> None:
            user.logs.append((message.level, message.data))

        async def on_elicit(message: str, response_type: Any, params: Any, context: Any) -> Any:
            user.questions.append(message)
            if user.answer == "accept":
                return ElicitResult(action="accept", content={"value": True})
            return ElicitResult(action=user.answer)

        async with FastMCPClient(
            _fastmcp_shop(orders),
            log_handler=on_log,
            elicitation_handler=on_elicit,
            mode="legacy",
            timeout=WAIT,
        ) as client:

            async def call(name: str, arguments: dict[str, Any]) -> Reply:
                return _reply(await client.call_tool(name, arguments, raise_on_error=False))

            return await _script(call)

    async def on_sdk_log(params: mcp_types.LoggingMessageNotificationParams) -> None:
        user.logs.append((params.level, params.data))

    async def on_sdk_elicit(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        user.questions.append(params.message)
        if user.answer == "accept":
            return mcp_types.ElicitResult(action="accept", content={"confirm": True})
        return mcp_types.ElicitResult(action=user.answer)

    async with SDKClient(
        _sdk_shop(orders),
        logging_callback=on_sdk_log,
        elicitation_callback=on_sdk_elicit,
        mode="legacy",
        read_timeout_seconds=WAIT,
    ) as sdk:

        async def sdk_call(name: str, arguments: dict[str, Any]) -> Reply:
            return _reply(await sdk.call_tool(name, arguments))

        return await _script(sdk_call)


async def _script(call: Any) -> list[Reply]:
    basket_id = (await call("create_basket", {})).structured["basket_id"]
    added = await call("add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 2})
    assert not added.is_error, added.text
    first = await call("checkout", {"basket_id": basket_id})
    again = await call("checkout", {"basket_id": basket_id})
    later = await call("get_basket", {"basket_id": basket_id})
    return [first, again, later]


@pytest.mark.parametrize("framework", ["fastmcp", "sdk"])
async def test_on_accept_the_checkout_logs_asks_orders_and_closes(framework: str) -> None:
    user = User("accept")
    orders: list[dict[str, int]] = []
    first, again, later = await _shop_with(framework, user, orders)

    assert any(
        level == "info" and "checking out 1 line(s)" in str(data) for level, data in user.logs
    )
    assert user.questions == ["Place the order for 2 x tea?"]
    assert not first.is_error, first.text
    assert first.structured == {"order": 1, "items": {"tea": 2}}
    assert orders == [{"tea": 2}]
    assert again.is_error and "was checked out" in again.text
    assert later.is_error and "was checked out" in later.text
    assert user.questions == ["Place the order for 2 x tea?"]  # the closed handle asked nothing


@pytest.mark.parametrize("framework", ["fastmcp", "sdk"])
@pytest.mark.parametrize("answer", ["decline", "cancel"])
async def test_without_accept_nothing_is_ordered_and_the_basket_stays_open(
    framework: str, answer: Answer
) -> None:
    user = User(answer)
    orders: list[dict[str, int]] = []
    first, again, later = await _shop_with(framework, user, orders)

    assert any("checking out 1 line(s)" in str(data) for _, data in user.logs)
    assert first.is_error and "not ordered" in first.text
    assert again.is_error and "not ordered" in again.text  # asked again: still open
    assert user.questions == ["Place the order for 2 x tea?"] * 2
    assert orders == []
    assert not later.is_error, later.text
    assert later.structured == {"items": {"tea": 2}}
