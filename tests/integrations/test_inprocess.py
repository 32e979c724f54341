"""The docs/examples baskets in process, each driven by its framework's own client.

A fake clock drives expiry, so the texts are checked word for word.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from fastmcp import Context as FastMCPContext
from fastmcp import FastMCP
from mcp.server.mcpserver import Context as SDKContext
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from handles import HandleKind, HandleManager, HandleTools, Lifetime, Server, ToolError
from handles.integrations import fastmcp as fastmcp_adapter
from handles.integrations import mcp_sdk as sdk_adapter
from stores import MemoryStore

from .examples import fastmcp_example, sdk_example
from .support import Caller, fastmcp_caller, sdk_caller

pytestmark = pytest.mark.anyio
START = 1_800_000_000.0  # 2027-01-15T08:00:00Z
FRAMEWORKS = ["fastmcp", "sdk"]
KEY = "inprocess-test-key-" + "s" * 13


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # FastMCP and the SDK client run on asyncio


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def _serve(framework: str, manager: HandleManager, **options: Any) -> Any:
    module = fastmcp_example() if framework == "fastmcp" else sdk_example()
    return module.build(manager, **options)


def _caller(framework: str, server: Any) -> AbstractAsyncContextManager[Caller]:
    return fastmcp_caller(server) if framework == "fastmcp" else sdk_caller(server)


def _manager(framework: str, clock: Clock) -> HandleManager:
    module = fastmcp_example() if framework == "fastmcp" else sdk_example()
    store = MemoryStore(clock=clock)
    return HandleManager(store, [module.basket], secret_keys=[KEY], clock=clock)


@pytest.fixture(params=FRAMEWORKS)
def framework(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def call(framework: str, clock: Clock) -> AsyncIterator[Caller]:
    async with _caller(framework, _serve(framework, _manager(framework, clock))) as caller:
        yield caller


async def test_the_basket_round_trip(call: Caller) -> None:
    created = await call("create_basket", {})
    assert not created.is_error
    basket_id = created.structured["basket_id"]
    assert created.structured["expires_at"] == "2027-01-15T08:30:00Z"
    added = await call("add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 2})
    assert added.structured == {"items": {"tea": 2}}
    assert (await call("get_basket", {"basket_id": basket_id})).structured == {"items": {"tea": 2}}
    listed = await call("list_baskets", {})
    assert [entry["id"] for entry in listed.structured["result"]] == [basket_id]
    bought = await call("checkout", {"basket_id": basket_id})
    assert bought.structured == {"items": {"tea": 2}}
    assert (await call("list_baskets", {})).structured["result"] == []
    other = (await call("create_basket", {})).structured["basket_id"]
    closed = await call("close_basket", {"basket_id": other})
    assert closed.structured == {"closed": other}


async def test_closed_and_checked_out_texts_are_exact(call: Caller) -> None:
    basket_id = (await call("create_basket", {})).structured["basket_id"]
    await call("checkout", {"basket_id": basket_id})
    again = await call("add_item", {"basket_id": basket_id, "sku": "tea"})
    assert again.is_error
    assert again.text == (
        f"Basket {basket_id!r} was checked out at 2027-01-15T08:00:00Z and can no longer "
        "be used. Call create_basket to start a new basket."
    )
    other = (await call("create_basket", {})).structured["basket_id"]
    await call("close_basket", {"basket_id": other})
    reply = await call("get_basket", {"basket_id": other})
    assert reply.is_error
    assert reply.text == (
        f"Basket {other!r} was closed at 2027-01-15T08:00:00Z and can no longer be used. "
        "Call create_basket to start a new basket."
    )


async def test_expiry_text_is_exact(call: Caller, clock: Clock) -> None:
    basket_id = (await call("create_basket", {})).structured["basket_id"]
    clock.now += 1801
    reply = await call("get_basket", {"basket_id": basket_id})
    assert reply.is_error
    assert reply.text == (
        f"Basket {basket_id!r} has expired; the exact time is not known (baskets expire after "
        "30 minutes without use and 24 hours after creation). "
        "Call create_basket to start a new basket."
    )


async def test_an_invented_id_gets_the_unknown_text(call: Caller) -> None:
    reply = await call("get_basket", {"basket_id": "bsk_made_up"})
    assert reply.is_error
    assert reply.text == (
        "Unknown basket 'bsk_made_up'. Copy the basket_id exactly as create_basket "
        "returned it, call list_baskets to see your open baskets, "
        "or call create_basket to start a new one."
    )


async def test_mask_error_details_still_shows_our_texts(clock: Clock) -> None:
    server = _serve("fastmcp", _manager("fastmcp", clock), mask_error_details=True)
    async with fastmcp_caller(server) as call:
        reply = await call("get_basket", {"basket_id": "bsk_made_up"})
        assert reply.is_error
        assert reply.text.startswith("Unknown basket 'bsk_made_up'. Copy the basket_id")


async def test_model_mistakes_log_no_error(
    framework: str, call: Caller, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        basket_id = (await call("create_basket", {})).structured["basket_id"]
        await call("checkout", {"basket_id": basket_id})
        assert (await call("get_basket", {"basket_id": "bsk_made_up"})).is_error
        assert (await call("get_basket", {"basket_id": basket_id})).is_error
        assert (await call("add_item", {"basket_id": basket_id})).is_error  # no sku
    assert caplog.records, "the frameworks log these calls; a test that sees none proves nothing"
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert loud == []


class Tab(BaseModel):
    pages: list[str] = []


TAB = HandleKind("tab", "tab", Tab, Lifetime(idle=60), close_tool="close_tab")
AnyTools = fastmcp_adapter.HandleTools | sdk_adapter.HandleTools


def _adapter(framework: str, manager: HandleManager) -> tuple[Any, AnyTools]:
    if framework == "fastmcp":
        fast = FastMCP("tabs")
        return fast, fastmcp_adapter.HandleTools(fast, manager)
    sdk = MCPServer("tabs")
    return sdk, sdk_adapter.HandleTools(sdk, manager)


def _tab_server(framework: str, manager: HandleManager) -> Any:
    """Only ``open_tab`` and ``read_tab``: no create_tab, list_tabs or close_tab."""
    server, tools = _adapter(framework, manager)

    @tools.creates(TAB, name="open_tab")
    async def open_tab() -> Tab:
        """Open a tab."""
        return Tab()

    @tools.reads(TAB)
    async def read_tab(state: Tab) -> Tab:
        """Read a tab."""
        return state

    return server


async def test_no_hint_names_a_missing_tool(framework: str) -> None:
    manager = HandleManager(MemoryStore(), [TAB], secret_keys=[KEY])
    async with _caller(framework, _tab_server(framework, manager)) as call:
        reply = await call("read_tab", {"tab_id": "tab_nope"})
    assert reply.is_error
    assert reply.text == "Unknown tab 'tab_nope'. Copy the tab_id exactly as it was given to you."


async def test_quota_hint_without_a_close_tool(framework: str) -> None:
    kind = HandleKind("tab", "tab", Tab, Lifetime(idle=60), quota=1, close_tool="close_tab")
    manager = HandleManager(MemoryStore(), [kind], secret_keys=[KEY])
    server, tools = _adapter(framework, manager)
    tools.lifecycle(kind)
    async with _caller(framework, server) as call:
        await call("create_tab", {})
        reply = await call("create_tab", {})
    assert reply.text == (
        "You already have 1 open tabs, the most allowed. Call close_tab on one you no "
        "longer need (list_tabs lists them), or wait for one to expire: tabs expire "
        "after 1 minute without use."
    )


async def test_hints_under_a_fastmcp_mount_carry_the_namespace(clock: Clock) -> None:
    child = _serve("fastmcp", _manager("fastmcp", clock))
    parent = FastMCP("mall")
    parent.mount(child, namespace="shop")
    async with fastmcp_caller(parent) as call:
        reply = await call("shop_get_basket", {"basket_id": "bsk_made_up"})
    assert reply.text == (
        "Unknown basket 'bsk_made_up'. Copy the basket_id exactly as shop_create_basket "
        "returned it, call shop_list_baskets to see your open baskets, "
        "or call shop_create_basket to start a new one."
    )


def _failing_edit(framework: str, manager: HandleManager) -> Any:
    server, tools = _adapter(framework, manager)
    tools.lifecycle(TAB)

    @tools.edits(TAB)
    async def visit(state: Tab, url: str) -> Tab:
        """Visit a page."""
        state.pages.append(url)
        if url.startswith("bad:"):
            raise ToolError(f"{url} is not a page you can visit.")
        return state

    @tools.reads(TAB)
    async def read_tab(state: Tab) -> Tab:
        """Read a tab."""
        state.pages.append("not saved")
        return state

    return server


async def test_a_failed_edit_writes_nothing_and_a_read_saves_nothing(framework: str) -> None:
    manager = HandleManager(MemoryStore(), [TAB], secret_keys=[KEY])
    async with _caller(framework, _failing_edit(framework, manager)) as call:
        tab_id = (await call("create_tab", {})).structured["tab_id"]
        await call("visit", {"tab_id": tab_id, "url": "a"})
        refused = await call("visit", {"tab_id": tab_id, "url": "bad:b"})
        assert refused.is_error and refused.text == "bad:b is not a page you can visit."
        await call("read_tab", {"tab_id": tab_id})
        assert (await call("read_tab", {"tab_id": tab_id})).structured == {
            "pages": ["a", "not saved"]
        }


def _plain(schema: Any) -> Any:
    """A schema without pydantic's titles and FastMCP's ``additionalProperties: false``."""
    if isinstance(schema, dict):
        return {
            k: _plain(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
            and not (k == "additionalProperties" and v is False)
        }
    return schema


def _visit_server(server: Any, tools: AnyTools | HandleTools) -> Any:
    @tools.edits(TAB)
    async def visit(state: Tab, url: str, times: int = 1) -> Tab:
        """Visit a page.

        Args:
            url: Where to go.
            times: How often.
        """
        return state

    return server


async def test_both_adapters_publish_the_core_schemas_and_annotations() -> None:
    def manager() -> HandleManager:
        return HandleManager(MemoryStore(), [TAB], secret_keys=[KEY])

    core_server = Server("tabs")
    _visit_server(core_server, HandleTools(core_server, manager()))
    core = [
        (d["name"], d["description"], _plain(d["inputSchema"]), d["annotations"])
        for d in (t.definition for t in core_server.tools)
    ]
    fast_server = FastMCP("tabs")
    _visit_server(fast_server, fastmcp_adapter.HandleTools(fast_server, manager()))
    sdk_server = MCPServer("tabs")
    _visit_server(sdk_server, sdk_adapter.HandleTools(sdk_server, manager()))
    fast = [
        (t.name, t.description, _plain(t.parameters), _hints(t.annotations))
        for t in await fast_server.list_tools()
    ]
    sdk = [
        (t.name, t.description, _plain(t.input_schema), _hints(t.annotations))
        for t in await sdk_server.list_tools()
    ]
    assert core[0][2]["properties"]["url"]["description"] == "Where to go."
    assert fast == core
    assert sdk == core


def _hints(annotations: Any) -> dict[str, Any]:
    return dict(annotations.model_dump(by_alias=True, exclude_none=True))


def test_importing_an_adapter_loads_no_core() -> None:
    import subprocess
    import sys

    code = (
        "import sys, handles.integrations.fastmcp, handles.integrations.mcp_sdk\n"
        "bad = [m for m in sys.modules if m.startswith(('handles.server', 'handles.transports'))]\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


async def test_a_handler_gets_the_frameworks_context(framework: str) -> None:
    manager = HandleManager(MemoryStore(), [TAB], secret_keys=[KEY])
    server, tools = _adapter(framework, manager)
    tools.lifecycle(TAB)
    seen: list[object] = []

    if isinstance(tools, fastmcp_adapter.HandleTools):

        @tools.edits(TAB)
        async def visit(state: Tab, url: str, ctx: FastMCPContext) -> Tab:
            """Visit a page."""
            seen.append(ctx)
            state.pages.append(url)
            return state

    else:

        @tools.edits(TAB)
        async def visit(state: Tab, url: str, ctx: SDKContext) -> Tab:  # type: ignore[misc]
            """Visit a page."""
            seen.append(ctx)
            state.pages.append(url)
            return state

    async with _caller(framework, server) as call:
        tab_id = (await call("create_tab", {})).structured["tab_id"]
        reply = await call("visit", {"tab_id": tab_id, "url": "a"})
    assert reply.structured == {"pages": ["a"]}
    expected = FastMCPContext if framework == "fastmcp" else SDKContext
    assert len(seen) == 1 and isinstance(seen[0], expected)


async def test_an_error_result_writes_nothing_and_leaves_the_handle_open(framework: str) -> None:
    from fastmcp.tools import ToolResult
    from mcp_types import CallToolResult, TextContent

    def refusal(text: str) -> Any:
        if framework == "fastmcp":
            return ToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    manager = HandleManager(MemoryStore(), [TAB], secret_keys=[KEY])
    server, tools = _adapter(framework, manager)
    tools.lifecycle(TAB)

    @tools.edits(TAB)
    async def visit(state: Tab, url: str) -> Any:
        """Visit a page."""
        state.pages.append(url)
        return refusal("no such page") if url == "bad" else {"pages": state.pages}

    @tools.closes(TAB, name="finish")
    async def finish(state: Tab) -> Any:
        """Finish, unless the tab is empty."""
        return refusal("nothing to finish") if not state.pages else {"pages": state.pages}

    async with _caller(framework, server) as call:
        tab_id = (await call("create_tab", {})).structured["tab_id"]
        assert (await call("visit", {"tab_id": tab_id, "url": "bad"})).text == "no such page"
        assert (await call("finish", {"tab_id": tab_id})).text == "nothing to finish"
        visited = await call("visit", {"tab_id": tab_id, "url": "a"})
        assert json.loads(visited.text) == {"pages": ["a"]}  # "bad" was not written
        assert not (await call("finish", {"tab_id": tab_id})).is_error
        assert (await call("visit", {"tab_id": tab_id, "url": "b"})).is_error


async def test_concurrent_closes_commit_once_and_share_the_outcome(framework: str) -> None:
    import anyio

    manager = HandleManager(MemoryStore(), [TAB], secret_keys=[KEY])
    server, tools = _adapter(framework, manager)
    tools.lifecycle(TAB)
    placed: list[Any] = []

    async def place(outcome: Any) -> None:
        placed.append(outcome)

    @tools.closes(TAB, name="archive", reason="archived", on_commit=place)
    async def archive(state: Tab) -> dict[str, Any]:
        """Archive the tab."""
        await anyio.sleep(0.01)  # both calls read the tab before either closes it
        return {"pages": state.pages, "order": len(placed) + 1}

    replies: list[Any] = []
    async with _caller(framework, server) as call:
        tab_id = (await call("create_tab", {})).structured["tab_id"]

        async def one() -> None:
            replies.append(await call("archive", {"tab_id": tab_id}))

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)
    assert len(placed) == 1
    assert [json.loads(r.text) for r in replies] == [placed[0], placed[0]]
