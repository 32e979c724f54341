"""The official ``mcp`` 2.3.0 client against the HTTP transport served by uvicorn.

Real sockets, each client mode (``auto``, ``legacy``, ``2026-07-28``), an open
server and one behind ``StaticTokenVerifier``. Plus the socket-level rules an
in-process ASGI client cannot show: a 413 refused from the head that the client
still reads, and a closed SSE stream cancelling its tool. asyncio only (uvicorn and
the client).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import httpx2
import pytest
from anyio.abc import SocketStream
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import http_app

from .http_support import ALICE, BOB, SECRET, Probe, Reader, build_server, raw_post, serving

pytestmark = pytest.mark.anyio
WAIT = 10.0
"""Upper bound for each exchange (a bound, not a timing assertion)."""
TOKENS = {"tok-alice": ALICE, "tok-bob": BOB}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=["auto", "legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
async def url() -> AsyncIterator[str]:
    async with serving(http_app(build_server(), principal=ALICE)) as url:
        yield url


@pytest.fixture(scope="module")
async def authed_url() -> AsyncIterator[str]:
    app = http_app(
        build_server(),
        verifier=StaticTokenVerifier(TOKENS),
        resource_url="http://127.0.0.1/mcp",
        authorization_servers=["https://id.example"],
        required_scopes=["mcp"],
    )
    async with serving(app) as url:
        yield url


@pytest.fixture
async def client(url: str, mode: str) -> AsyncIterator[Client]:
    async with Client(url, mode=mode, read_timeout_seconds=WAIT) as client:
        yield client


async def test_negotiates_its_era(client: Client, mode: str) -> None:
    assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")


async def test_lists_every_page(client: Client) -> None:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        pages.append([tool.name for tool in page.tools])
        if (cursor := page.next_cursor) is None:
            break
    assert pages == [["add", "whoami"], ["crash", "refuse"], ["progress", "wait"]]


async def test_calls_a_tool(client: Client) -> None:
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.is_error is False
    assert result.structured_content == {"result": 5}


async def test_bad_arguments_are_a_tool_error(client: Client) -> None:
    result = await client.call_tool("add", {"a": "two"})
    assert result.is_error is True
    assert result.content[0].text.startswith("Input validation error")  # type: ignore[union-attr]


async def test_unknown_tool_is_a_protocol_error(client: Client) -> None:
    with pytest.raises(MCPError) as caught:
        await client.call_tool("nope", {})
    assert caught.value.error.code == -32602


async def test_a_raising_tool_is_a_generic_tool_error(client: Client) -> None:
    for name, arguments in [("crash", {}), ("refuse", {"reason": "no"})]:
        result = await client.call_tool(name, arguments)
        assert result.is_error is True
        assert SECRET not in str(result)
    assert "Refused: no." in str(result)


async def test_progress_arrives_over_sse(client: Client) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    assert result.structured_content == {"result": "done after 3 steps"}
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_without_a_verifier_the_caller_is_the_configured_principal(client: Client) -> None:
    result = await client.call_tool("whoami", {})
    assert result.structured_content == {"result": "alice"}


async def whoami(url: str, mode: str, token: str | None) -> str:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=WAIT) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        result = await client.call_tool("whoami", {})
    assert isinstance(result.structured_content, dict)
    return str(result.structured_content["result"])


async def test_each_token_is_its_own_principal(authed_url: str, mode: str) -> None:
    assert await whoami(authed_url, mode, "tok-alice") == "alice"


@pytest.mark.parametrize("token", [None, "tok-wrong", "tok-bob"], ids=["none", "wrong", "no-scope"])
async def test_refused_tokens_fail_the_client(
    authed_url: str, mode: str, token: str | None
) -> None:
    with pytest.raises(ExceptionGroup) as caught:
        await whoami(authed_url, mode, token)
    assert caught.group_contains(MCPError, depth=None)


async def test_refusals_on_the_wire(authed_url: str) -> None:
    metadata = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        missing = await http.post(authed_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        scope = await http.post(
            authed_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"authorization": "Bearer tok-bob"},
        )
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == (
        f'Bearer scope="mcp", resource_metadata="{metadata}"'
    )
    assert scope.status_code == 403
    assert scope.headers["www-authenticate"].startswith(
        'Bearer error="insufficient_scope", error_description="The access token lacks'
    )


async def test_protected_resource_metadata_on_both_paths(authed_url: str) -> None:
    base = authed_url.removesuffix("/mcp")
    async with httpx.AsyncClient(timeout=WAIT) as http:
        for path in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ]:
            reply = await http.get(base + path)
            assert reply.status_code == 200
            assert reply.headers["cache-control"] == "public, max-age=3600"
            assert reply.json() == {
                "resource": "http://127.0.0.1/mcp",
                "authorization_servers": ["https://id.example"],
                "scopes_supported": ["mcp"],
                "bearer_methods_supported": ["header"],
            }


async def read_response(stream: SocketStream) -> tuple[int, bytes]:
    """Read one HTTP/1.1 response; its status and body."""
    return await Reader(stream).response()


PARSERS = ["h11", "httptools"]
"""Both of uvicorn's HTTP/1.1 parsers, each held to the same bounds (``guarded_protocol``)."""


@pytest.mark.parametrize("parser", PARSERS)
async def test_413_is_read_by_the_client_then_the_connection_closes(parser: str) -> None:
    """An oversized body is refused from its head, unread: the reply still reaches the client
    (the lingering close), the server then closes, and a new connection is served."""
    app = http_app(build_server(), principal=ALICE, max_body_bytes=1024)
    good = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 200_000 + b'"}}'
    async with serving(app, parser=parser) as url:
        host = url.removeprefix("http://").removesuffix("/mcp")
        address, port = host.split(":")
        with anyio.fail_after(WAIT):
            async with await anyio.connect_tcp(address, int(port)) as stream:
                await stream.send(raw_post(host, big))
                status, body = await read_response(stream)
                assert status == 413
                assert b"over the 1024-byte limit" in body
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    while True:
                        await stream.receive()
            async with await anyio.connect_tcp(address, int(port)) as stream:
                await stream.send(raw_post(host, good))
                status, body = await read_response(stream)
    assert status == 200
    assert body == b'{"jsonrpc":"2.0","id":2,"result":{}}'


@pytest.mark.parametrize("parser", PARSERS)
async def test_connections_past_the_cap_get_503_and_a_slow_head_gets_408(
    caplog: pytest.LogCaptureFixture, parser: str
) -> None:
    app = http_app(build_server(), principal=ALICE)
    # A deadline long enough that the slow head cannot lapse before the cap is tested.
    async with serving(app, max_connections=2, header_timeout=3, parser=parser) as url:
        host = url.removeprefix("http://").removesuffix("/mcp")
        address, port = host.split(":")
        with anyio.fail_after(WAIT):
            async with (
                await anyio.connect_tcp(address, int(port)) as first,
                await anyio.connect_tcp(address, int(port)) as second,
            ):
                await first.send(b"POST /mcp HTTP/1.1\r\nHost: " + host.encode())
                await second.send(raw_post(host, b'{"jsonrpc":"2.0","id":2,"method":"ping"}'))
                assert (await read_response(second))[0] == 200  # both are being served
                for _ in range(3):
                    async with await anyio.connect_tcp(address, int(port)) as third:
                        status, body = await read_response(third)
                    assert status == 503
                    assert b"maximum of 2 connections" in body
                refusals = [r for r in caplog.records if "refused" in r.getMessage()]
                assert len(refusals) == 1  # one message for a flood, not one per connection
                status, body = await read_response(first)
                assert status == 408
                assert b"within 3 s" in body


async def test_closing_the_sse_stream_cancels_the_tool() -> None:
    probe = Probe()
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "wait", "arguments": {}, "_meta": META | {"progressToken": "t"}},
    }
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "wait"}
    async with serving(http_app(build_server(probe), principal=ALICE)) as url:
        with anyio.fail_after(WAIT):
            async with (
                httpx.AsyncClient() as http,
                http.stream("POST", url, json=message, headers=headers) as reply,
            ):
                assert reply.headers["content-type"] == "text/event-stream"
                assert await anext(reply.aiter_lines()) == "event: message"
                await probe.started.wait()
            await probe.cancelled.wait()
