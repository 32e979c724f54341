"""Fuzzing Streamable HTTP: every request gets a valid status and, on /mcp, valid JSON-RPC.

Hostile frames (see ``tests.fuzzing``) go out with fuzzed methods, paths and
headers (bearer token, protocol version, ``Mcp-Method``/``Mcp-Name``, ``Accept``,
``Origin``, ``Host``) to the basket demo behind bearer auth: in process through
the ASGI app, then a smaller run over a real socket (uvicorn). ``FUZZ_EXAMPLES=10000``
is the dedicated run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from example_basket.app import build_server
from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import http_app
from stores.memory import MemoryStore
from tests.fuzzing import (
    FORBIDDEN,
    FUZZ_EXAMPLES,
    NO_RESPONSE,
    SECRET,
    bind,
    check_response,
    expected_id,
    frames,
    fuzz_settings,
    weighted,
)
from tests.transports.http_support import serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TOKEN = "fuzz-token-a"
BASE = "http://127.0.0.1:8000"
STATUSES = {200, 202, 400, 401, 403, 404, 405, 406, 413}
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20).map(
    lambda value: value.strip() or "x"
)


@dataclass
class Request:
    """A fuzzed HTTP request: method, path, how to set each header, and the body."""

    method: str
    path: str
    auth: str | None
    version: str
    method_header: str
    name_header: str
    accept: str | None
    origin: str | None
    host: str | None
    frame: bytes

    def headers(self, frame: bytes) -> dict[str, str]:
        message = _loads(frame)
        params = _object(message.get("params"))
        meta = _object(params.get("_meta"))
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        headers = {
            "authorization": self.auth,
            "mcp-protocol-version": _header(self.version, version),
            "mcp-method": _header(self.method_header, message.get("method")),
            "mcp-name": _header(self.name_header, params.get("name")),
            "accept": self.accept,
            "origin": self.origin,
            "content-type": "application/json",
        }
        if self.host is not None:
            headers["host"] = self.host
        return {name: value for name, value in headers.items() if value is not None}

    @property
    def to_endpoint(self) -> bool:
        return self.method == "POST" and self.path == "/mcp"


def _loads(frame: bytes) -> dict[str, Any]:
    try:
        message = json.loads(frame)
    except (ValueError, RecursionError):
        return {}
    return message if isinstance(message, dict) else {}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _header(mode: str, value: Any) -> str | None:
    if mode == "match":
        return value if isinstance(value, str) and value.isascii() and value.isprintable() else None
    return None if mode == "none" else mode


def _mostly(*good: Any, other: st.SearchStrategy[Any] = header_text) -> st.SearchStrategy[Any]:
    """One of ``good`` four times in five, else ``other``."""
    return weighted((4, st.sampled_from(good)), (1, other))


fuzzed = st.builds(
    Request,
    method=st.sampled_from(["POST"] * 8 + ["GET", "DELETE", "PUT", "OPTIONS"]),
    path=st.sampled_from(
        ["/mcp"] * 12
        + ["/", "/mcp/", "/.well-known/oauth-protected-resource", "/.well-known/x", "/%00"]
        + ["/.well-known/oauth-protected-resource/mcp"]
    ),
    auth=st.sampled_from([f"Bearer {TOKEN}"] * 6 + [None, "Bearer nope", "Basic eDp5", "Bearer"]),
    version=_mostly("match", "match", "none", "2025-11-25", "2025-06-18", "2026-07-28"),
    method_header=_mostly(*["match"] * 9, "none"),
    name_header=_mostly(*["match"] * 9, "none"),
    accept=st.sampled_from(
        ["application/json, text/event-stream"] * 3
        + [None, "application/json", "text/event-stream", "text/html", "*/*"]
    ),
    origin=st.sampled_from([None] * 6 + ["http://127.0.0.1:8000", "https://evil.example"]),
    host=st.sampled_from([None] * 8 + ["evil.example", "127.0.0.1:9"]),
    frame=frames(),
)
well_formed = st.builds(
    Request,
    method=st.just("POST"),
    path=st.just("/mcp"),
    auth=st.just(f"Bearer {TOKEN}"),
    version=st.just("match"),
    method_header=st.just("match"),
    name_header=st.just("match"),
    accept=st.just("application/json, text/event-stream"),
    origin=st.none(),
    host=st.none(),
    frame=frames(),
)
requests = st.one_of(well_formed, fuzzed)
"""Half with every header right (so frames reach the tools), half fuzzed throughout."""


def check(reply: httpx.Response, request: Request, frame: bytes) -> None:
    """The oracle: an allowed status, nothing leaked, and JSON-RPC where JSON-RPC is due."""
    assert reply.status_code in STATUSES, (reply.status_code, reply.text[:300])
    event(f"HTTP {reply.status_code}")
    shown = reply.text + json.dumps(dict(reply.headers))
    for word in FORBIDDEN:
        assert word not in shown, (word, shown[:500])
    expected = expected_id(frame)
    if reply.status_code == 202:
        assert request.to_endpoint and expected is NO_RESPONSE and reply.content == b""
        return
    kind = reply.headers.get("content-type", "")
    if not request.to_endpoint or reply.status_code == 401 or kind.startswith("text/plain"):
        return  # metadata, 404 pages and auth challenges: checked for leaks above
    body = _last_event(reply.text) if kind.startswith("text/event-stream") else reply.text
    got = json.loads(body).get("id")
    assert got is None or got == expected, (got, expected, body[:300])
    response = check_response(body, got)
    if reply.status_code == 200 and expected not in (None, NO_RESPONSE):
        assert response["id"] == expected


def _last_event(text: str) -> str:
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert data, text[:300]
    return data[-1]


@dataclass
class Endpoint:
    client: httpx.AsyncClient
    basket_ids: list[str]

    async def send(self, request: Request) -> None:
        frame = bind(request.frame, self.basket_ids)
        reply = await self.client.request(
            request.method, request.path, content=frame, headers=request.headers(frame)
        )
        check(reply, request, frame)


async def _created(client: httpx.AsyncClient) -> str:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "create_basket", "arguments": {}},
    }
    reply = await client.post("/mcp", json=message, headers={"authorization": f"Bearer {TOKEN}"})
    basket_id: str = reply.json()["result"]["structuredContent"]["basket_id"]
    return basket_id


def _app() -> Any:
    server = build_server(MemoryStore(), secret_keys=SECRET)
    verifier = StaticTokenVerifier({TOKEN: "fuzzer"})
    return http_app(server, verifier=verifier, resource_url=f"{BASE}/mcp")


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    transport = httpx.ASGITransport(app=_app())
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
        yield Endpoint(client, [await _created(client), await _created(client)])


@fuzz_settings()
@given(request=requests)
async def test_every_request_gets_a_valid_answer(endpoint: Endpoint, request: Request) -> None:
    await endpoint.send(request)


@pytest.fixture
async def socket_endpoint() -> AsyncIterator[Endpoint]:
    async with serving(_app()) as url, httpx.AsyncClient(base_url=url[: -len("/mcp")]) as client:
        yield Endpoint(client, [await _created(client), await _created(client)])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn runs on asyncio
@fuzz_settings(FUZZ_EXAMPLES // 10)
@given(request=requests)
async def test_every_request_gets_a_valid_answer_over_a_socket(
    socket_endpoint: Endpoint, request: Request
) -> None:
    await socket_endpoint.send(request)
