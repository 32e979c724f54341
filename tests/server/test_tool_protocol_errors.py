"""A tool may answer with a JSON-RPC error by raising ``ProtocolError``.

Every other failure of a tool is an ``isError`` result the model reads; a
``ProtocolError`` (a missing client capability, a tampered ``requestState``) is
for the client, so ``Tool.call`` lets it through and ``Server.handle`` sends it
as the request's JSON-RPC error, in both eras, without logging a tool failure.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from handles.principal import Principal
from handles.server.context import Context
from handles.server.dispatch import Connection, Server
from handles.server.jsonrpc import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    Message,
    ProtocolError,
    dumps,
    parse,
)
from handles.server.protocol import RequestMeta
from handles.server.tools import Tool, ToolError

pytestmark = pytest.mark.anyio

PRINCIPAL = Principal("carol", issuer="local")
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
NEEDS_SAMPLING: dict[str, Any] = {"requiredCapabilities": {"sampling": {}}}


def build() -> Server:
    server = Server("protocol-errors")

    @server.tool
    async def needs_sampling(ctx: Context) -> str:
        """Refuse unless the client declared sampling."""
        if "sampling" not in ctx.client_capabilities:
            raise ProtocolError(
                MISSING_REQUIRED_CLIENT_CAPABILITY, "This tool needs sampling", NEEDS_SAMPLING
            )
        return "sampled"

    @server.tool
    def check_state(ctx: Context) -> str:
        """Refuse a requestState it did not sign (runs in a worker thread)."""
        if ctx.request_state != "signed":
            raise ProtocolError(INVALID_PARAMS, "Invalid requestState")
        return "state ok"

    @server.tool
    def refuse() -> str:
        """A domain error: still a tool result."""
        raise ToolError("Refused.")

    return server


async def call(
    server: Server, name: str, params: dict[str, Any] | None = None, *, modern: bool = True
) -> Message | None:
    body: dict[str, Any] = {"name": name, "arguments": {}, **(params or {})}
    if modern:
        body.setdefault("_meta", MODERN_META)
    message = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": body}
    with anyio.fail_after(5):
        return await server.handle(parse(dumps(message)), Connection(PRINCIPAL))


async def test_tool_call_lets_a_protocol_error_through() -> None:
    tool = Tool.from_function(build().tools[0].fn)
    context = Context(PRINCIPAL, tool.name, 1, RequestMeta("2026-07-28", {}, None))
    with pytest.raises(ProtocolError) as raised:
        await tool.call({}, context)
    assert raised.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_a_missing_capability_is_a_json_rpc_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert await call(build(), "needs_sampling") == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {
            "code": MISSING_REQUIRED_CLIENT_CAPABILITY,
            "message": "This tool needs sampling",
            "data": NEEDS_SAMPLING,
        },
    }
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_with_the_capability_the_tool_answers() -> None:
    meta = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
    response = await call(build(), "needs_sampling", {"_meta": meta})
    assert response is not None
    assert response["result"]["content"] == [{"type": "text", "text": "sampled"}]


@pytest.mark.parametrize("modern", [True, False], ids=["modern", "legacy"])
async def test_a_tampered_state_is_invalid_params_from_a_thread_tool(modern: bool) -> None:
    response = await call(build(), "check_state", {"requestState": "forged"}, modern=modern)
    assert response == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": INVALID_PARAMS, "message": "Invalid requestState"},
    }


async def test_a_tool_error_is_still_a_tool_result() -> None:
    response = await call(build(), "refuse")
    assert response is not None
    assert response["result"]["isError"] is True
    assert response["result"]["content"] == [{"type": "text", "text": "Refused."}]
