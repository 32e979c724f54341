"""The pure request rules of the HTTP transport: allow-lists, Accept, header decoding, eras."""

from __future__ import annotations

import pytest

from handles.server.jsonrpc import ProtocolError
from handles.transports._http_checks import (
    DEFAULT_ALLOWED_HOSTS,
    DEFAULT_ALLOWED_ORIGINS,
    Acceptance,
    AllowList,
    accepted,
    decode_header,
    request_era,
    status_for,
)

MODERN_META: dict[str, object] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("localhost", True),
        ("LOCALHOST:8000", True),
        ("127.0.0.1:1", True),
        ("[::1]", True),
        ("[::1]:8000", True),
        ("::1", False),
        ("localhost.evil.com", False),
        ("evil.com:80", False),
        ("127.0.0.1:80:80", False),
        ("", False),
    ],
)
def test_default_hosts(value: str, allowed: bool) -> None:
    assert AllowList(DEFAULT_ALLOWED_HOSTS).allows(value) is allowed


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("http://localhost:5173", True),
        ("http://127.0.0.1", True),
        ("http://[::1]:3000", True),
        ("https://localhost", False),
        ("http://localhost.evil.com", False),
        ("null", False),
    ],
)
def test_default_origins(value: str, allowed: bool) -> None:
    assert AllowList(DEFAULT_ALLOWED_ORIGINS).allows(value) is allowed


def test_entries_with_a_port_match_only_that_port() -> None:
    hosts = AllowList(["mcp.example.com:443", "https://app.example.com/"])
    assert hosts.allows("mcp.example.com:443")
    assert not hosts.allows("mcp.example.com")
    assert not hosts.allows("mcp.example.com:8443")
    assert hosts.allows("https://app.example.com:8443")
    assert AllowList(["*"]).allows("anything")


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, Acceptance(True, True)),
        ("", Acceptance(True, True)),
        ("application/json, text/event-stream", Acceptance(True, True)),
        ("*/*", Acceptance(True, True)),
        ("application/json;q=0.9", Acceptance(True, False)),
        ("application/*", Acceptance(True, False)),
        ("TEXT/EVENT-STREAM", Acceptance(False, True)),
        ("text/*", Acceptance(False, True)),
        ("text/html", Acceptance(False, False)),
    ],
)
def test_accept(header: str | None, expected: Acceptance) -> None:
    assert accepted(header) == expected


@pytest.mark.parametrize(
    ("value", "decoded"),
    [
        (None, None),
        ("add", "add"),
        ("  add\t", "add"),
        ("=?base64?SGVsbG8=?=", "Hello"),
        (" =?base64?w6k=?= ", "é"),
        ("=?base64?SGVsbG8?=", None),
        ("=?base64?SGVs!!!bG8=?=", None),
        ("=?base64?/w==?=", None),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),
        ("SGVsbG8=?=", "SGVsbG8=?="),
    ],
)
def test_decode_header(value: str | None, decoded: str | None) -> None:
    assert decode_header(value) == decoded


def message(meta: dict[str, object] | None = None) -> dict[str, object]:
    params = {"_meta": meta} if meta is not None else {}
    return {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}


@pytest.mark.parametrize(
    ("header", "era", "version"),
    [
        ("2026-07-28", "modern", "2026-07-28"),
        (" 2026-07-28 ", "modern", "2026-07-28"),
        ("2025-11-25", "legacy", "2025-11-25"),
        ("2024-11-05", "legacy", "2024-11-05"),
        (None, "legacy", "2025-03-26"),
    ],
)
def test_request_era(header: str | None, era: str, version: str) -> None:
    assert request_era(header, message()) == (era, version)


def test_unknown_version_names_the_supported_ones() -> None:
    with pytest.raises(ProtocolError) as caught:
        request_era("2099-01-01", message())
    assert (caught.value.code, caught.value.id) == (-32022, 3)
    assert caught.value.data["requested"] == "2099-01-01"


@pytest.mark.parametrize("header", [None, "2025-11-25"])
def test_modern_meta_without_modern_header(header: str | None) -> None:
    with pytest.raises(ProtocolError) as caught:
        request_era(header, message(MODERN_META))
    assert caught.value.code == -32020


@pytest.mark.parametrize(
    ("code", "modern", "legacy"),
    [(-32700, 400, 200), (-32601, 404, 200), (-32602, 400, 200), (-32603, 200, 200)],
)
def test_status_for(code: int, modern: int, legacy: int) -> None:
    response = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x"}}
    assert status_for(response, "modern") == modern
    assert status_for(response, "legacy") == legacy
    assert status_for({"jsonrpc": "2.0", "id": 1, "result": {}}, "modern") == 200
