"""Every status and header rule of the HTTP transport, through its ASGI app (no sockets)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import HttpApp, http_app

from .http_support import ALICE, BOB, SECRET, build_server

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
URL = "http://127.0.0.1:8000/mcp"


def body(method: str, params: dict[str, Any] | None = None, id: int | None = 7) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


def modern(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method, **extra}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def call(name: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return body("tools/call", {"name": name, "arguments": arguments or {}, "_meta": META | meta})


def sse_events(text: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.startswith("data: ")]
        events.extend(json.loads(line[6:]) for line in lines)
    return events


def client_for(app: HttpApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000"
    )


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(http_app(build_server(), principal=ALICE)) as client:
        yield client


async def test_modern_list_is_json_with_the_modern_fields(client: httpx.AsyncClient) -> None:
    reply = await client.post(
        "/mcp", json=body("tools/list", {"_meta": META}), headers=modern("tools/list")
    )
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in reply.headers
    result = reply.json()["result"]
    assert result["resultType"] == "complete"
    assert [t["name"] for t in result["tools"]] == ["add", "whoami"]
    assert {"ttlMs", "cacheScope", "nextCursor", "_meta"} <= result.keys()


async def test_no_header_is_legacy_and_a_sent_session_id_is_ignored(
    client: httpx.AsyncClient,
) -> None:
    reply = await client.post("/mcp", json=body("tools/list"), headers={"mcp-session-id": "abc"})
    assert reply.status_code == 200
    assert "mcp-session-id" not in reply.headers
    result = reply.json()["result"]
    assert "resultType" not in result and "_meta" not in result


async def test_legacy_initialize_then_call(client: httpx.AsyncClient) -> None:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    reply = await client.post("/mcp", json=body("initialize", params))
    assert reply.json()["result"]["protocolVersion"] == "2025-06-18"
    headers = {"mcp-protocol-version": "2025-06-18"}
    reply = await client.post(
        "/mcp", json=body("tools/call", {"name": "add", "arguments": {"a": 2}}), headers=headers
    )
    assert reply.json()["result"]["structuredContent"] == {"result": 3}


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        (modern("tools/call", "whoami"), "name mismatch"),
        (modern("tools/call"), "name missing"),
        (modern("tools/list", "add"), "method mismatch"),
        ({"mcp-protocol-version": MODERN, "mcp-name": "add"}, "method missing"),
        (modern("TOOLS/CALL", "add"), "method values are case-sensitive"),
        (modern("tools/call", "=?base64?YWRk?"), "base64 without its suffix is literal"),
        (modern("tools/call", "=?base64?YWR!?="), "base64 with a bad character"),
        (modern("tools/call", "=?base64?YWQ?="), "base64 with bad padding"),
    ],
)
async def test_header_mismatch_is_400_with_32020(
    client: httpx.AsyncClient, headers: dict[str, str], why: str
) -> None:
    reply = await client.post("/mcp", json=call("add", {"a": 1}), headers=headers)
    assert reply.status_code == 400, why
    assert reply.json()["id"] == 7
    assert reply.json()["error"]["code"] == -32020


@pytest.mark.parametrize(
    "headers",
    [
        modern("tools/call", "=?base64?YWRk?="),
        modern("  tools/call\t", "  add  "),
        {"MCP-PROTOCOL-VERSION": MODERN, "MCP-METHOD": "tools/call", "MCP-NAME": "add"},
    ],
    ids=["base64-name", "whitespace", "upper-case-names"],
)
async def test_headers_accepted(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    reply = await client.post("/mcp", json=call("add", {"a": 1}), headers=headers)
    assert reply.status_code == 200
    assert reply.json()["result"]["structuredContent"] == {"result": 2}


async def test_body_version_must_equal_header(client: httpx.AsyncClient) -> None:
    message = body(
        "tools/list", {"_meta": META | {"io.modelcontextprotocol/protocolVersion": "v9"}}
    )
    reply = await client.post("/mcp", json=message, headers=modern("tools/list"))
    assert (reply.status_code, reply.json()["error"]["code"]) == (400, -32020)


@pytest.mark.parametrize("header", [None, "2025-11-25"])
async def test_modern_body_without_modern_header_is_32020(
    client: httpx.AsyncClient, header: str | None
) -> None:
    headers = {"mcp-protocol-version": header} if header else {}
    reply = await client.post("/mcp", json=body("tools/list", {"_meta": META}), headers=headers)
    assert (reply.status_code, reply.json()["error"]["code"]) == (400, -32020)


async def test_unknown_version_header_is_32022(client: httpx.AsyncClient) -> None:
    headers = modern("tools/list") | {"mcp-protocol-version": "1900-01-01"}
    reply = await client.post("/mcp", json=body("tools/list", {"_meta": META}), headers=headers)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (reply.json()["id"], error["code"]) == (7, -32022)
    assert error["data"]["requested"] == "1900-01-01"
    assert error["data"]["supported"][:2] == [MODERN, "2025-11-25"]


@pytest.mark.parametrize(
    "params",
    [{}, {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}],
    ids=["no-meta", "no-capabilities"],
)
async def test_modern_header_without_meta_is_32602(
    client: httpx.AsyncClient, params: dict[str, Any]
) -> None:
    reply = await client.post(
        "/mcp", json=body("server/discover", params), headers=modern("server/discover")
    )
    assert (reply.status_code, reply.json()["error"]["code"]) == (400, -32602)


@pytest.mark.parametrize("method", ["initialize", "ping", "prompts/list"])
async def test_modern_unknown_method_is_404(client: httpx.AsyncClient, method: str) -> None:
    reply = await client.post("/mcp", json=body(method, {"_meta": META}), headers=modern(method))
    assert (reply.status_code, reply.json()["error"]["code"]) == (404, -32601)


async def test_legacy_errors_stay_200(client: httpx.AsyncClient) -> None:
    reply = await client.post("/mcp", json=body("prompts/list"))
    assert (reply.status_code, reply.json()["error"]["code"]) == (200, -32601)
    reply = await client.post("/mcp", json=body("tools/call", {"name": "nope"}))
    assert (reply.status_code, reply.json()["error"]["code"]) == (200, -32602)


async def test_modern_unknown_tool_and_bad_args(client: httpx.AsyncClient) -> None:
    reply = await client.post("/mcp", json=call("nope"), headers=modern("tools/call", "nope"))
    assert (reply.status_code, reply.json()["error"]["code"]) == (400, -32602)
    reply = await client.post(
        "/mcp", json=call("add", {"a": "x"}), headers=modern("tools/call", "add")
    )
    result = reply.json()["result"]
    assert reply.status_code == 200 and result["isError"] is True
    assert result["content"][0]["text"].startswith("Input validation error")


async def test_a_crashing_tool_leaks_nothing(client: httpx.AsyncClient) -> None:
    reply = await client.post("/mcp", json=call("crash"), headers=modern("tools/call", "crash"))
    assert reply.status_code == 200
    assert reply.json()["result"]["isError"] is True
    assert SECRET not in reply.text and "Traceback" not in reply.text


@pytest.mark.parametrize(
    ("message", "headers"),
    [
        (body("notifications/initialized", id=None), {}),
        (body("notifications/initialized", id=None), {"mcp-protocol-version": "2025-11-25"}),
        (
            body("notifications/cancelled", {"requestId": 1, "_meta": META}, id=None),
            modern("notifications/cancelled"),
        ),
    ],
    ids=["legacy-no-header", "legacy", "modern"],
)
async def test_notifications_get_202_and_no_body(
    client: httpx.AsyncClient, message: dict[str, Any], headers: dict[str, str]
) -> None:
    reply = await client.post("/mcp", json=message, headers=headers)
    assert (reply.status_code, reply.content) == (202, b"")


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"x"}', -32600),
    ],
)
async def test_malformed_bodies_are_400(client: httpx.AsyncClient, data: bytes, code: int) -> None:
    reply = await client.post("/mcp", content=data, headers={"content-type": "application/json"})
    assert reply.status_code == 400
    assert reply.json() == {"jsonrpc": "2.0", "id": None, "error": reply.json()["error"]}
    assert reply.json()["error"]["code"] == code


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH"])
async def test_other_methods_are_405_with_allow(client: httpx.AsyncClient, method: str) -> None:
    reply = await client.request(method, "/mcp", headers={"accept": "text/event-stream"})
    assert reply.status_code == 405
    assert reply.headers["allow"] == "POST"


async def test_other_paths_are_404(client: httpx.AsyncClient) -> None:
    reply = await client.post("/other", json=body("tools/list"))
    assert reply.status_code == 404
    reply = await client.get("/.well-known/oauth-protected-resource/mcp")
    assert reply.status_code == 404


@pytest.mark.parametrize(
    "headers",
    [
        {"host": "evil.example.com"},
        {"host": "evil.example.com:8000"},
        {"origin": "http://evil.example.com"},
        {"origin": "null"},
        {"origin": "https://localhost"},
    ],
)
async def test_foreign_host_or_origin_is_403(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    reply = await client.post("/mcp", json=body("tools/list"), headers=headers)
    assert reply.status_code == 403


@pytest.mark.parametrize(
    "headers",
    [
        {"host": "localhost"},
        {"host": "[::1]:9999"},
        {"origin": "http://localhost:5173"},
        {"origin": "http://127.0.0.1"},
    ],
)
async def test_loopback_host_and_origin_are_served(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    reply = await client.post("/mcp", json=body("tools/list"), headers=headers)
    assert reply.status_code == 200


async def test_allow_lists_are_configurable() -> None:
    app = http_app(
        build_server(),
        principal=ALICE,
        allowed_hosts=["mcp.example.com:443", "*.nothing"],
        allowed_origins=["*"],
    )
    async with client_for(app) as client:
        ok = {"host": "mcp.example.com:443", "origin": "https://anything.example"}
        assert (await client.post("/mcp", json=body("tools/list"), headers=ok)).status_code == 200
        wrong_port = {"host": "mcp.example.com:8443"}
        assert (
            await client.post("/mcp", json=body("tools/list"), headers=wrong_port)
        ).status_code == 403


async def test_body_over_the_limit_is_413() -> None:
    app = http_app(build_server(), principal=ALICE, max_body_bytes=64)
    async with client_for(app) as client:
        small = await client.post("/mcp", json=body("tools/list"))
        big = await client.post("/mcp", json=body("tools/list", {"pad": "x" * 100}))
    assert small.status_code == 200
    assert big.status_code == 413


@pytest.mark.parametrize("accept", ["text/html", "image/png, text/plain"])
async def test_unacceptable_accept_is_406(client: httpx.AsyncClient, accept: str) -> None:
    reply = await client.post("/mcp", json=body("tools/list"), headers={"accept": accept})
    assert reply.status_code == 406


async def test_progress_switches_the_reply_to_sse(client: httpx.AsyncClient) -> None:
    message = call("progress", {"steps": 2}, progressToken="tok")
    reply = await client.post("/mcp", json=message, headers=modern("tools/call", "progress"))
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.headers["cache-control"] == "no-cache"
    assert reply.headers["x-accel-buffering"] == "no"
    events = sse_events(reply.text)
    assert [e.get("method") for e in events] == ["notifications/progress"] * 2 + [None]
    assert events[0]["params"] == {
        "progressToken": "tok",
        "progress": 1,
        "total": 2,
        "message": "step 1",
    }
    assert events[-1]["result"]["content"][0]["text"] == "done after 2 steps"


async def test_legacy_progress_is_sse_too(client: httpx.AsyncClient) -> None:
    params = {"name": "progress", "arguments": {"steps": 1}, "_meta": {"progressToken": 5}}
    reply = await client.post("/mcp", json=body("tools/call", params))
    assert reply.headers["content-type"] == "text/event-stream"
    assert len(sse_events(reply.text)) == 2


async def test_no_progress_token_means_json(client: httpx.AsyncClient) -> None:
    reply = await client.post(
        "/mcp", json=call("progress", {"steps": 2}), headers=modern("tools/call", "progress")
    )
    assert reply.headers["content-type"] == "application/json"


async def test_json_only_client_gets_no_notifications(client: httpx.AsyncClient) -> None:
    headers = modern("tools/call", "progress", accept="application/json")
    reply = await client.post(
        "/mcp", json=call("progress", {"steps": 2}, progressToken=1), headers=headers
    )
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["result"]["content"][0]["text"] == "done after 2 steps"


async def test_sse_only_client_gets_sse(client: httpx.AsyncClient) -> None:
    headers = modern("tools/list", accept="text/event-stream")
    reply = await client.post("/mcp", json=body("tools/list", {"_meta": META}), headers=headers)
    assert reply.headers["content-type"] == "text/event-stream"
    assert sse_events(reply.text)[0]["result"]["resultType"] == "complete"


async def test_without_a_verifier_everyone_is_the_configured_principal(
    client: httpx.AsyncClient,
) -> None:
    reply = await client.post("/mcp", json=call("whoami"), headers=modern("tools/call", "whoami"))
    assert reply.json()["result"]["structuredContent"] == {"result": "alice"}


def authed_app(**options: Any) -> HttpApp:
    verifier = StaticTokenVerifier({"tok-alice": ALICE, "tok-bob": BOB})
    return http_app(
        build_server(),
        verifier=verifier,
        resource_url=URL,
        authorization_servers=["https://id.example"],
        **options,
    )


async def test_each_token_is_served_as_its_principal() -> None:
    async with client_for(authed_app()) as client:
        for token, subject in [("tok-alice", "alice"), ("tok-bob", "bob")]:
            headers = modern("tools/call", "whoami", authorization=f"Bearer {token}")
            reply = await client.post("/mcp", json=call("whoami"), headers=headers)
            assert reply.json()["result"]["structuredContent"] == {"result": subject}


@pytest.mark.parametrize("authorization", ["Bearer nope", "Bearer tok-alicex"])
async def test_bad_token_is_401_with_a_challenge(authorization: str) -> None:
    async with client_for(authed_app()) as client:
        reply = await client.post(
            "/mcp", json=body("tools/list"), headers={"authorization": authorization}
        )
    assert reply.status_code == 401
    challenge = reply.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="')
    metadata = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
    assert challenge.endswith(f'resource_metadata="{metadata}"')
    assert reply.json()["error"] == "invalid_token"
    assert "tok-alice" not in reply.text


@pytest.mark.parametrize("authorization", [None, "Basic dG9rLWFsaWNl", "Bearer "])
async def test_no_bearer_token_is_401_without_an_error_code(authorization: str | None) -> None:
    """RFC 6750 §3.1: a request without credentials gets a challenge with no error code."""
    headers = {"authorization": authorization} if authorization is not None else {}
    async with client_for(authed_app()) as client:
        reply = await client.post("/mcp", json=body("tools/list"), headers=headers)
    assert reply.status_code == 401
    metadata = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"
    assert reply.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata}"'
    assert "error" not in reply.json()
    assert "Authorization: Bearer" in reply.json()["error_description"]


async def test_missing_scope_is_403_insufficient_scope() -> None:
    async with client_for(authed_app(required_scopes=["mcp"])) as client:
        alice = await client.post(
            "/mcp", json=body("tools/list"), headers={"authorization": "Bearer tok-alice"}
        )
        bob = await client.post(
            "/mcp", json=body("tools/list"), headers={"authorization": "Bearer tok-bob"}
        )
        anonymous = await client.post("/mcp", json=body("tools/list"))
    assert alice.status_code == 200
    assert bob.status_code == 403
    assert bob.headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')
    assert 'scope="mcp"' in bob.headers["www-authenticate"]
    assert 'scope="mcp"' in anonymous.headers["www-authenticate"]


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
async def test_protected_resource_metadata(path: str) -> None:
    async with client_for(authed_app(required_scopes=["mcp"])) as client:
        reply = await client.get(f"http://127.0.0.1:8000{path}")
        post = await client.post(f"http://127.0.0.1:8000{path}")
    assert reply.status_code == 200
    assert reply.headers["cache-control"].startswith("public")
    assert reply.json() == {
        "resource": URL,
        "authorization_servers": ["https://id.example"],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    }
    assert (post.status_code, post.headers["allow"]) == (405, "GET")


async def test_a_verifier_needs_a_resource_url() -> None:
    with pytest.raises(ValueError, match="resource_url"):
        http_app(build_server(), verifier=StaticTokenVerifier({}))
