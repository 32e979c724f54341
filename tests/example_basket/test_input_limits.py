"""Hostile input is refused cleanly: deep nesting, unbounded schemas, odd names echoed back."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from example_basket.app import build_server as build_basket
from handles.server.dispatch import Connection, Server
from handles.server.jsonrpc import MAX_DEPTH, ProtocolError, dumps, parse
from handles.transports.http import http_app
from handles.transports.memory import connect_memory
from stores.memory import MemoryStore
from tests.handles.support import ALICE, KEY


def nested(depth: int, id: Any = 1) -> bytes:
    """A request whose params hold arrays nested so that the whole message is ``depth`` deep."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return (
        f'{{"jsonrpc":"2.0","id":{json.dumps(id)},"method":"x","params":{{"a":{inner}}}}}'.encode()
    )


def test_depth_up_to_the_limit_parses() -> None:
    assert parse(nested(MAX_DEPTH))["method"] == "x"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 100_000])
@pytest.mark.parametrize("as_text", [False, True])
def test_deeper_is_an_invalid_request_refused_before_parsing(depth: int, as_text: bool) -> None:
    data = nested(depth, id="deep")
    with pytest.raises(ProtocolError) as caught:
        parse(data.decode() if as_text else data)
    assert caught.value.code == -32600 and caught.value.id is None
    assert caught.value.message == f"Invalid Request: JSON nested more than {MAX_DEPTH} levels deep"


@pytest.mark.parametrize(
    "data",
    [b"[" * 100_000, b"{" * 100_000, b"]" * 100_000, b"[" * 99 + b"}"],
)
def test_unbalanced_brackets_are_a_parse_error(data: bytes) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse(data)
    assert caught.value.code == -32700


def test_a_string_of_brackets_is_just_a_string() -> None:
    with pytest.raises(ProtocolError, match="expected one JSON object, got str"):
        parse(b'"' + b"[" * 99 + b'"')


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"s": "[{" * 500}})
    escaped = text.replace('"s": "', '"s": "\\"')
    assert parse(text)["params"]["s"] == "[{" * 500
    assert parse(escaped)["params"]["s"] == '"' + "[{" * 500


def test_many_shallow_containers_are_fine() -> None:
    data = {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": [[1], {"b": [2]}] * 5000}}
    assert len(parse(json.dumps(data))["params"]["a"]) == 10_000


@pytest.mark.anyio
async def test_the_stream_transport_answers_and_keeps_serving() -> None:
    async with connect_memory(Server("deep"), ALICE) as client:
        await client.send(nested(1000, id=5))
        reply = await client.receive()
        assert reply["id"] is None and reply["error"]["code"] == -32600
        pong = await client.request(6, "ping")
        assert pong == {"jsonrpc": "2.0", "id": 6, "result": {}}


@pytest.mark.anyio
async def test_the_http_transport_answers_400() -> None:
    app = http_app(Server("deep"), principal=ALICE)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000"
    ) as client:
        reply = await client.post("/mcp", content=nested(1000, id=5), headers=JSON)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32600


def _unbounded(schema: dict[str, Any], path: str, defs: dict[str, Any]) -> list[str]:
    """Every string, array, object or number in ``schema`` that has no upper bound."""
    if "$ref" in schema:
        return _unbounded(defs[schema["$ref"].rsplit("/", 1)[1]], path, defs)
    found: list[str] = []
    for option in schema.get("anyOf", []):
        found += _unbounded(option, path, defs)
    kind = schema.get("type")
    if kind == "string" and "maxLength" not in schema and "enum" not in schema:
        found.append(f"{path}: string without maxLength")
    if kind == "array":
        if "maxItems" not in schema:
            found.append(f"{path}: array without maxItems")
        found += _unbounded(schema.get("items", {}), f"{path}[]", defs)
    if kind in ("integer", "number") and not {"maximum", "exclusiveMaximum"} & schema.keys():
        found.append(f"{path}: {kind} without maximum")
    if kind == "object":
        for name, value in schema.get("properties", {}).items():
            found += _unbounded(value, f"{path}.{name}", defs)
        if schema.get("additionalProperties", False) is not False:
            found.append(f"{path}: object open to any property")
    return found


def test_every_basket_tool_bounds_every_input() -> None:
    server = build_basket(MemoryStore(), secret_keys=KEY)
    problems = []
    for tool in server.tools:
        schema = tool.definition["inputSchema"]
        problems += _unbounded(schema, tool.name, schema.get("$defs", {}))
    assert problems == []


@pytest.mark.anyio
async def test_a_huge_argument_is_refused_with_a_short_message() -> None:
    server = build_basket(MemoryStore(), secret_keys=KEY)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_catalog", "arguments": {"query": "m" * 1_000_000}},
    }
    response = await server.handle(message, Connection(ALICE, "legacy"))
    assert response is not None
    text = response["result"]["content"][0]["text"]
    assert response["result"]["isError"] and len(text) < 200
    assert text.startswith("Input validation error in search_catalog: query: must be at most 100")


# A lone surrogate (legal as a JSON escape, with no UTF-8 form) must not break a reply.

JSON = {"content-type": "application/json"}
LONE = b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/call","params":{"name":"x\\udfff"}}'


def test_a_reply_echoing_a_lone_surrogate_is_ascii_escaped() -> None:
    data = dumps({"jsonrpc": "2.0", "id": "\ud800", "result": {}})
    assert data == b'{"jsonrpc":"2.0","id":"\\ud800","result":{}}'
    assert json.loads(data)["id"] == "\ud800"


@pytest.mark.anyio
async def test_the_stream_transport_survives_lone_surrogates() -> None:
    server = build_basket(MemoryStore(), secret_keys=KEY)
    async with connect_memory(server, ALICE) as client:
        await client.send(LONE)
        reply = await client.receive()
        assert reply["id"] == "\ud800" and reply["error"]["code"] == -32602
        query = {"name": "search_catalog", "arguments": {"query": "\udc00"}}
        refused = await client.request("\udbff", "tools/call", query)
        assert refused["id"] == "\udbff" and refused["result"]["isError"] is True
        assert await client.request(6, "ping") == {"jsonrpc": "2.0", "id": 6, "result": {}}


@pytest.mark.anyio
async def test_the_http_transport_survives_lone_surrogates() -> None:
    app = http_app(build_basket(MemoryStore(), secret_keys=KEY), principal=ALICE)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000"
    ) as client:
        reply = await client.post("/mcp", content=LONE, headers=JSON)
    assert reply.status_code == 200 and reply.json()["id"] == "\ud800"


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","id":"\xed\xa0\x80","method":"ping"}',  # a surrogate, UTF-8-encoded
        '{"jsonrpc":"2.0","id":1,"method":"ping"}'.encode("utf-16"),
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}',  # a byte order mark
    ],
    ids=["encoded-surrogate", "utf-16", "bom"],
)
def test_bytes_must_be_strict_utf8(data: bytes) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse(data)
    assert caught.value.code == -32700
