"""The official ``mcp`` 2.3.0 client against the demo server as a real stdio subprocess.

One server process per client mode (``auto``, ``legacy``, ``2026-07-28``) serves the
module. The client runs on asyncio only: that is what it supports.
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from .demo_server import PNG, TOOL_NAMES, WAV

ROOT = Path(__file__).resolve().parents[2]
WAIT = 10.0
"""Upper bound for each test's exchange with the server (a bound, not a timing assertion)."""
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "1.2.3"}}
ALL_TOOLS = TOOL_NAMES
pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=["auto", "legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
async def client(mode: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.transports.demo_server"],
        cwd=ROOT,
        env={"HANDLES_PRINCIPAL": "interop-tester", "PATH": os.environ.get("PATH", "")},
    )
    # Every request is bounded by read_timeout_seconds; the client's task group must be
    # entered and left in this one task, so no fail_after around the whole block.
    async with Client(params, mode=mode, read_timeout_seconds=WAIT) as client:
        yield client


def modern(mode: str) -> bool:
    return mode != "legacy"


def result_meta(mode: str) -> dict[str, Any] | None:
    return SERVER_INFO if modern(mode) else None


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


async def test_negotiates_the_era_of_its_mode(client: Client, mode: str) -> None:
    assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    if mode != "2026-07-28":  # a pinned mode never asks the server who it is
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("demo", "1.2.3")
        assert client.instructions == "Demo tools for tests."


async def test_lists_every_page(client: Client) -> None:
    names: list[str] = []
    cursors: list[str] = []
    with anyio.fail_after(WAIT):
        page = await client.list_tools()
        while True:
            assert 1 <= len(page.tools) <= 2
            names += [tool.name for tool in page.tools]
            if page.next_cursor is None:
                break
            cursors.append(page.next_cursor)
            page = await client.list_tools(cursor=page.next_cursor)
    assert names == ALL_TOOLS
    assert len(cursors) == 5 and len(set(cursors)) == 5


async def test_tool_definitions_survive_the_client_models(client: Client) -> None:
    with anyio.fail_after(WAIT):
        tools = (await client.list_tools()).tools
    add, point = tools
    assert add.description == "Add two small numbers."
    assert add.input_schema == {
        "additionalProperties": False,
        "properties": {
            "a": {
                "description": "The first number.",
                "maximum": 50,
                "minimum": 0,
                "title": "A",
                "type": "integer",
            },
            "b": {
                "default": 1,
                "description": "The second number.",
                "maximum": 50,
                "minimum": 0,
                "title": "B",
                "type": "integer",
            },
        },
        "required": ["a"],
        "type": "object",
    }
    assert add.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert point.title == "Make a point"
    assert point.annotations is not None
    assert point.annotations.read_only_hint is True
    assert point.annotations.idempotent_hint is True
    assert point.annotations.destructive_hint is None
    assert point.icons is not None
    assert [(icon.src, icon.mime_type) for icon in point.icons] == [
        ("https://example.com/point.png", "image/png")
    ]


async def test_call(client: Client, mode: str) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result == CallToolResult(
        content=[text("3")],
        structured_content={"result": 3},
        is_error=False,
        _meta=result_meta(mode),
    )


async def test_call_returning_a_model(client: Client, mode: str) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("make_point", {"x": 3, "y": -4})
    assert result == CallToolResult(
        content=[text('{"x":3,"y":-4}')],
        structured_content={"x": 3, "y": -4},
        is_error=False,
        _meta=result_meta(mode),
    )


async def test_bad_arguments_are_a_tool_error(client: Client, mode: str) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("add", {"a": 1, "b": 200})
    assert result == CallToolResult(
        content=[text("Input validation error in add: b: must be at most 50, got 200.")],
        is_error=True,
        _meta=result_meta(mode),
    )


async def test_several_argument_errors_in_one_sentence(client: Client) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("add", {"a": "x", "c": 3})
    assert result.is_error is True
    assert result.content == [
        text(
            'Input validation error in add: a: must be an integer, got "x"; '
            "c: is not a parameter of this tool."
        )
    ]


async def test_unknown_tool_raises_mcp_error(client: Client) -> None:
    with anyio.fail_after(WAIT), pytest.raises(MCPError) as caught:
        await client.call_tool("nope", {})
    assert (caught.value.error.code, caught.value.error.message) == (-32602, "Unknown tool: nope")


async def test_domain_error_is_a_tool_error(client: Client, mode: str) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("fail", {"reason": "the moon is full"})
    assert result == CallToolResult(
        content=[text("Cannot do that: the moon is full. Try another reason.")],
        is_error=True,
        _meta=result_meta(mode),
    )


async def test_crash_is_generic_and_hides_the_detail(client: Client, mode: str) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("crash", {})
    assert result == CallToolResult(
        content=[
            text(
                "crash failed because of an internal error in the server. "
                "The details are in the server's log; try again later."
            )
        ],
        is_error=True,
        _meta=result_meta(mode),
    )
    assert "secret" not in result.model_dump_json()


async def test_every_content_type(client: Client) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("media", {})
    assert result.structured_content is None and result.is_error is False
    assert result.content == [
        text("hello"),
        ImageContent(type="image", data=_b64(PNG), mime_type="image/png"),
        AudioContent(type="audio", data=_b64(WAV), mime_type="audio/wav"),
        ResourceLink(
            type="resource_link", uri="file:///demo.txt", name="demo.txt", mime_type="text/plain"
        ),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///inline.txt", mime_type="text/plain", text="inline text"
            ),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///blob.bin", mime_type="application/data", blob=_b64(b"\x00\x01")
            ),
        ),
    ]


async def test_principal_from_the_environment(client: Client) -> None:
    with anyio.fail_after(WAIT):
        result = await client.call_tool("whoami", {})
    assert result.structured_content == {"result": "interop-tester"}


async def test_progress_reaches_the_callback(client: Client) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(WAIT):
        result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    assert result.structured_content == {"result": "done after 3 steps"}
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_cancelling_the_call_cancels_the_tool(client: Client) -> None:
    running = anyio.Event()
    scope = anyio.CancelScope()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    async def call_slow() -> None:
        with scope:
            await client.call_tool("slow", {"steps": 1}, progress_callback=on_progress)
            raise AssertionError("slow returned instead of being cancelled")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call_slow)
            await running.wait()  # the tool is running: its first progress arrived
            scope.cancel()
        assert scope.cancelled_caught
        # The client sent notifications/cancelled, and the tool saw it.
        counted = await client.call_tool("cancelled", {"at_least": 1})
        assert counted.structured_content == {"result": 1}
        # The connection still works.
        assert (await client.call_tool("add", {"a": 2})).structured_content == {"result": 3}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
