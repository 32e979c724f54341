"""``Server.handle`` directly: method dispatch and result shapes in both eras."""

from __future__ import annotations

import base64
import logging
from typing import Any

import anyio
import pytest

from handles.principal import Principal
from handles.server.content import InputRequired, TextContent, ToolResult
from handles.server.context import Context
from handles.server.dispatch import Connection, Server
from handles.server.jsonrpc import Message, dumps, parse
from handles.server.tools import Tool

pytestmark = pytest.mark.anyio

PRINCIPAL = Principal("bob", issuer="local")
VERSION = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
MODERN_META = {VERSION: "2026-07-28", CAPABILITIES: {}}
ALL_VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
INFO = {"name": "unit", "version": "9.9"}
RESULT_META = {"io.modelcontextprotocol/serverInfo": INFO}


def build(**options: Any) -> Server:
    server = Server("unit", "9.9", **options)

    @server.tool
    async def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    @server.tool(name="meta.echo")
    def meta_echo(ctx: Context) -> dict[str, Any]:
        """Echo what the context knows."""
        return {
            "era": ctx.era,
            "version": ctx.meta.version,
            "capabilities": ctx.client_capabilities,
            "id": ctx.request_id,
            "tool": ctx.tool_name,
            "subject": ctx.principal.subject,
        }

    @server.tool
    async def progress(ctx: Context) -> None:
        """Report twice."""
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2, "done")

    @server.tool
    def ask() -> InputRequired:
        """Ask for confirmation."""
        return InputRequired({"ok": {"method": "elicitation/create", "params": {}}}, "s1")

    @server.tool
    def partial() -> ToolResult:
        """A full result."""
        return ToolResult([TextContent("half")], is_error=True)

    return server


async def handle(
    server: Server,
    message: Message,
    connection: Connection | None = None,
    notify: Any = None,
) -> Message | None:
    with anyio.fail_after(5):
        parsed = parse(dumps({"jsonrpc": "2.0", **message}))
        return await server.handle(parsed, connection or Connection(PRINCIPAL), notify)


async def request(
    server: Server,
    method: str,
    params: Message | None = None,
    connection: Connection | None = None,
    notify: Any = None,
) -> Message:
    message: Message = {"id": 1, "method": method}
    if params is not None:
        message["params"] = params
    reply = await handle(server, message, connection, notify)
    assert reply is not None and reply["id"] == 1 and reply["jsonrpc"] == "2.0"
    return reply


def modern(**params: Any) -> Message:
    return {**params, "_meta": {**MODERN_META, **params.pop("_meta", {})}}


# -- notifications and registration -------------------------------------------------------


async def test_notifications_get_no_response() -> None:
    server = build()
    for method in ("notifications/initialized", "tools/call", "nope"):
        message = {"method": method, "params": modern(name="add", arguments={"a": 1})}
        assert await handle(server, message) is None


async def test_tools_keep_registration_order_and_the_decorators_return_the_function() -> None:
    server = Server("s")

    def one() -> None:
        """One."""

    assert server.tool(one) is one
    assert server.tool(name="two")(one) is one
    assert [tool.name for tool in server.tools] == ["one", "two"]
    reply = await request(server, "tools/list")
    assert [tool["name"] for tool in reply["result"]["tools"]] == ["one", "two"]


# -- legacy era ---------------------------------------------------------------------------


async def test_initialize() -> None:
    server = build(instructions="Use add.")
    connection = Connection(PRINCIPAL)
    params = {"protocolVersion": "2025-03-26", "capabilities": {"roots": {}}, "clientInfo": {}}
    reply = await request(server, "initialize", params, connection)
    assert reply["result"] == {
        "protocolVersion": "2025-03-26",
        "capabilities": {"tools": {}, "logging": {}},
        "serverInfo": INFO,
        "instructions": "Use add.",
    }
    assert connection.legacy_version == "2025-03-26"


@pytest.mark.parametrize("version", ["2099-01-01", "2026-07-28", None, 5, ["2025-06-18"]])
async def test_initialize_counter_offers_the_latest_legacy_version(version: Any) -> None:
    connection = Connection(PRINCIPAL)
    reply = await request(build(), "initialize", {"protocolVersion": version}, connection)
    assert reply["result"] == {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "logging": {}},
        "serverInfo": INFO,
    }
    assert connection.legacy_version == "2025-11-25"


async def test_legacy_ping_and_unknown_methods() -> None:
    server = build()
    assert (await request(server, "ping"))["result"] == {}
    for method in ("server/discover", "resources/list", "x" * 300):
        assert (await request(server, method))["error"] == {
            "code": -32601,
            "message": f"Method not found: {method[:128]}",
        }


async def test_legacy_results_have_no_modern_fields() -> None:
    server = build()
    listing = (await request(server, "tools/list"))["result"]
    assert set(listing) == {"tools"}
    assert (await request(server, "tools/call", {"name": "add", "arguments": {"a": 1}}))[
        "result"
    ] == {
        "content": [{"type": "text", "text": "2"}],
        "structuredContent": {"result": 2},
        "isError": False,
    }
    partial = (await request(server, "tools/call", {"name": "partial"}))["result"]
    assert partial == {"content": [{"type": "text", "text": "half"}], "isError": True}


async def test_modern_requests_do_not_leak_fields_into_legacy_results() -> None:
    server = build(page_size=2)
    await request(server, "tools/list", modern())
    await request(server, "tools/list", modern(cursor=_cursor_after("meta.echo")))
    first = (await request(server, "tools/list"))["result"]
    assert set(first) == {"tools", "nextCursor"}
    second = (await request(server, "tools/list", {"cursor": first["nextCursor"]}))["result"]
    assert set(second) == {"tools", "nextCursor"}


async def test_legacy_input_required_becomes_a_tool_error() -> None:
    reply = await request(build(), "tools/call", {"name": "ask"})
    assert reply["result"] == {
        "content": [
            {
                "type": "text",
                "text": "This tool needs to ask the user for input, which needs protocol "
                "2026-07-28; call it again with the confirmation in its arguments instead.",
            }
        ],
        "isError": True,
    }


async def test_legacy_context() -> None:
    server = build()
    connection = Connection(PRINCIPAL)
    await request(server, "initialize", {"protocolVersion": "2025-06-18"}, connection)
    reply = await request(server, "tools/call", {"name": "meta.echo"}, connection)
    assert reply["result"]["structuredContent"] == {
        "era": "legacy",
        "version": "2025-06-18",
        "capabilities": {},
        "id": 1,
        "tool": "meta.echo",
        "subject": "bob",
    }


# -- modern era ---------------------------------------------------------------------------


async def test_discover() -> None:
    reply = await request(build(list_ttl_ms=0, cache_scope="private"), "server/discover", modern())
    assert reply["result"] == {
        "supportedVersions": ALL_VERSIONS,
        "capabilities": {"tools": {}, "logging": {}},
        "ttlMs": 0,
        "cacheScope": "private",
        "resultType": "complete",
        "_meta": RESULT_META,
    }


async def test_discover_carries_the_instructions() -> None:
    reply = await request(build(instructions="Hi."), "server/discover", modern())
    assert reply["result"]["instructions"] == "Hi."


async def test_modern_tools_list() -> None:
    reply = await request(build(page_size=4), "tools/list", modern())
    result = reply["result"]
    assert [tool["name"] for tool in result.pop("tools")] == ["add", "meta.echo", "progress", "ask"]
    assert result == {
        "nextCursor": _cursor_after("ask"),
        "ttlMs": 60_000,
        "cacheScope": "public",
        "resultType": "complete",
        "_meta": RESULT_META,
    }


async def test_modern_tools_call_and_context() -> None:
    server = build()
    params = modern(name="meta.echo", _meta={CAPABILITIES: {"elicitation": {"form": {}}}})
    reply = await request(server, "tools/call", params)
    assert reply["result"] == {
        "content": [{"type": "text", "text": reply["result"]["content"][0]["text"]}],
        "structuredContent": {
            "era": "modern",
            "version": "2026-07-28",
            "capabilities": {"elicitation": {"form": {}}},
            "id": 1,
            "tool": "meta.echo",
            "subject": "bob",
        },
        "isError": False,
        "resultType": "complete",
        "_meta": RESULT_META,
    }


async def test_modern_input_required() -> None:
    reply = await request(build(), "tools/call", modern(name="ask"))
    assert reply["result"] == {
        "resultType": "input_required",
        "inputRequests": {"ok": {"method": "elicitation/create", "params": {}}},
        "requestState": "s1",
        "_meta": RESULT_META,
    }


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "subscriptions/listen"]
)
async def test_removed_methods_are_not_found(method: str) -> None:
    reply = await request(build(), method, modern())
    expected: Message = {"code": -32601, "message": f"Method not found: {method}"}
    if method == "initialize":
        expected["data"] = {"supported": ALL_VERSIONS}
    assert reply["error"] == expected


async def test_modern_envelope_errors() -> None:
    server = build()
    missing = await request(server, "tools/list", {"_meta": {VERSION: "2026-07-28"}})
    assert missing["error"]["code"] == -32602
    unsupported = await request(server, "tools/call", modern(name="add", _meta={VERSION: "1.0"}))
    assert unsupported["error"] == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ALL_VERSIONS, "requested": "1.0"},
    }


async def test_a_transport_can_fix_the_era() -> None:
    server = build()
    modern_only = Connection(PRINCIPAL, era="modern")
    reply = await request(server, "tools/list", {}, modern_only)
    assert reply["error"] == {
        "code": -32602,
        "message": "params._meta is required in protocol 2026-07-28",
    }
    legacy_only = Connection(PRINCIPAL, era="legacy")
    reply = await request(server, "tools/list", modern(), legacy_only)
    assert set(reply["result"]) == {"tools"}


# -- tools/call errors --------------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, 'tools/call needs "name", a string'),
        ({"name": 5}, 'tools/call needs "name", a string'),
        ({"name": None}, 'tools/call needs "name", a string'),
        ({"name": "add", "arguments": [1]}, 'tools/call "arguments" must be an object'),
        ({"name": "add", "arguments": "a=1"}, 'tools/call "arguments" must be an object'),
        ({"name": "nope"}, "Unknown tool: nope"),
        ({"name": "n" * 500}, "Unknown tool: " + "n" * 128),
    ],
)
async def test_malformed_calls_are_invalid_params(
    era: str, params: dict[str, Any], message: str
) -> None:
    reply = await request(build(), "tools/call", modern(**params) if era == "modern" else params)
    assert reply["error"] == {"code": -32602, "message": message}


async def test_null_arguments_mean_none() -> None:
    reply = await request(build(), "tools/call", {"name": "add", "arguments": None})
    assert reply["result"]["content"] == [
        {"type": "text", "text": "Input validation error in add: a: is required."}
    ]


class _BrokenTool(Tool):
    async def call(self, arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        raise RuntimeError("secret detail")


async def test_a_failure_outside_the_tool_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = build()
    template = Tool.from_function(lambda: None, name="broken")
    server.add_tool(_BrokenTool(**{f: getattr(template, f) for f in Tool.__dataclass_fields__}))
    reply = await request(server, "tools/call", modern(name="broken"))
    assert reply["error"] == {"code": -32603, "message": "Internal error"}
    (record,) = [r for r in caplog.records if r.name == "handles.server"]
    assert record.getMessage() == "internal error in tools/call"
    assert record.exc_info is not None and str(record.exc_info[1]) == "secret detail"


# -- progress and logging -----------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_progress_goes_to_notify_with_the_request_token(era: str) -> None:
    sent: list[Message] = []

    async def notify(message: Message) -> None:
        sent.append(message)

    params: Message = {"name": "progress", "_meta": {"progressToken": "t-1"}}
    if era == "modern":
        params = modern(**params)
    reply = await request(build(), "tools/call", params, notify=notify)
    assert reply["result"]["isError"] is False
    assert sent == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t-1", "progress": 1, "total": 2},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t-1", "progress": 2, "total": 2, "message": "done"},
        },
    ]


async def test_no_token_no_progress() -> None:
    sent: list[Message] = []

    async def notify(message: Message) -> None:
        sent.append(message)

    await request(build(), "tools/call", modern(name="progress"), notify=notify)
    await request(build(), "tools/call", {"name": "progress", "_meta": {"progressToken": 1}})
    assert sent == []


async def test_each_call_is_logged_without_its_arguments(caplog: pytest.LogCaptureFixture) -> None:
    server = build()
    with caplog.at_level(logging.INFO, logger="handles.server"):
        await request(server, "tools/call", {"name": "add", "arguments": {"a": 123456}})
        await request(server, "tools/call", {"name": "add", "arguments": {"a": "x"}})
        await request(server, "tools/call", modern(name="ask"))
    messages = [r.getMessage() for r in caplog.records if r.name == "handles.server"]
    prefix = f"tools/call %s principal={PRINCIPAL.digest[:12]} outcome=%s duration_ms="
    assert [m[: m.index("duration_ms=") + 12] for m in messages] == [
        prefix % ("add", "ok"),
        prefix % ("add", "error"),
        prefix % ("ask", "input_required"),
    ]
    assert not any("123456" in m or "bob" in m for m in messages)


def _cursor_after(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
