"""JSON-RPC envelopes: parsing one message, and building responses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handles.server import jsonrpc
from handles.server.jsonrpc import (
    ProtocolError,
    dumps,
    error_response,
    parse,
    request_id,
    result_response,
)

ID_MESSAGE = '"id" must be a string or an integer'


def test_the_error_codes() -> None:
    assert (
        jsonrpc.PARSE_ERROR,
        jsonrpc.INVALID_REQUEST,
        jsonrpc.METHOD_NOT_FOUND,
        jsonrpc.INVALID_PARAMS,
        jsonrpc.INTERNAL_ERROR,
        jsonrpc.HEADER_MISMATCH,
        jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
        jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
    ) == (-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022)


def test_dumps_is_compact_utf8_on_one_line() -> None:
    data = dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": "a\nb é \u2028"}})
    assert data == '{"jsonrpc":"2.0","id":1,"result":{"text":"a\\nb é \u2028"}}'.encode()
    assert b"\n" not in data


def test_responses() -> None:
    assert result_response("x", {}) == {"jsonrpc": "2.0", "id": "x", "result": {}}
    error = ProtocolError(-32602, "bad", {"k": 1})
    assert error_response(3, error) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "bad", "data": {"k": 1}},
    }
    assert error_response(None, ProtocolError(-32700, "p")) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "p"},
    }


def test_falsy_data_is_kept() -> None:
    assert ProtocolError(1, "m", 0).to_error() == {"code": 1, "message": "m", "data": 0}
    assert ProtocolError(1, "m", "").to_error() == {"code": 1, "message": "m", "data": ""}


def test_a_request() -> None:
    message = parse(b'{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"c"}}')
    assert message == {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "tools/list",
        "params": {"cursor": "c"},
    }


@pytest.mark.parametrize("params", ["", ',"params":null', ',"params":{}'])
def test_absent_or_null_params_become_an_empty_object(params: str) -> None:
    message = parse(f'{{"jsonrpc":"2.0","id":1,"method":"ping"{params}}}')
    assert message == {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}


def test_a_notification_has_no_id() -> None:
    message = parse('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert "id" not in message and message["params"] == {}


@pytest.mark.parametrize(
    "data", [b"", b"{", b"not json", b'{"a":1}}', b"\xff", "{'single': 1}", b"[" * 100_000]
)
def test_parse_errors(data: bytes | str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse(data)
    assert caught.value.code == -32700
    assert caught.value.message == "Parse error: the message is not valid JSON"
    assert caught.value.id is None


@pytest.mark.parametrize(
    ("data", "id", "message"),
    [
        ("[]", None, "expected one JSON object, got a batch (JSON array)"),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', None, "got a batch (JSON array)"),
        ("1", None, "expected one JSON object, got int"),
        ("null", None, "expected one JSON object, got NoneType"),
        ('{"id":1,"method":"ping"}', 1, '"jsonrpc" must be "2.0"'),
        ('{"jsonrpc":2.0,"id":1,"method":"ping"}', 1, '"jsonrpc" must be "2.0"'),
        ('{"jsonrpc":"2.0","id":"s"}', "s", '"method" must be a string'),
        ('{"jsonrpc":"2.0","id":"s","method":null}', "s", '"method" must be a string'),
        ('{"jsonrpc":"2.0","id":2,"result":{}}', 2, '"method" must be a string'),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', None, ID_MESSAGE),
        ('{"jsonrpc":"2.0","id":false,"method":"ping"}', None, ID_MESSAGE),
        ('{"jsonrpc":"2.0","id":1.0,"method":"ping"}', None, ID_MESSAGE),
        ('{"jsonrpc":"2.0","id":{},"method":"ping"}', None, ID_MESSAGE),
        ('{"jsonrpc":"2.0","id":4,"method":"ping","params":[]}', 4, '"params" must be an object'),
        ('{"jsonrpc":"2.0","method":"n","params":3}', None, '"params" must be an object'),
    ],
)
def test_invalid_requests(data: str, id: str | int | None, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse(data)
    assert caught.value.code == -32600
    assert caught.value.message.startswith("Invalid Request: ")
    assert caught.value.message.endswith(message)
    assert caught.value.id == id and type(caught.value.id) is type(id)


@pytest.mark.parametrize(
    ("message", "id"),
    [
        ({"id": 1}, 1),
        ({"id": "1"}, "1"),
        ({"id": 0}, 0),
        ({"id": True}, None),
        ({"id": None}, None),
        ({"id": 1.5}, None),
        ({}, None),
        ([1], None),
        ("x", None),
    ],
)
def test_request_id(message: Any, id: str | int | None) -> None:
    assert request_id(message) == id and type(request_id(message)) is type(id)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=10,
)
envelope_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])


@settings(deadline=None, max_examples=60)
@given(st.dictionaries(envelope_keys, json_values | st.just("2.0")) | json_values)
def test_any_json_is_a_valid_message_or_a_protocol_error(value: Any) -> None:
    try:
        message = parse(json.dumps(value))
    except ProtocolError as exc:
        assert exc.code == -32600
        assert exc.id == request_id(value)
        return
    assert message["jsonrpc"] == "2.0" and isinstance(message["method"], str)
    assert isinstance(message["params"], dict)
    if "id" in message:
        assert type(message["id"]) in (str, int)


@settings(deadline=None, max_examples=60)
@given(st.binary())
def test_any_bytes_parse_or_raise_a_protocol_error(data: bytes) -> None:
    try:
        parse(data)
    except ProtocolError as exc:
        assert exc.code in (-32700, -32600)
