"""``dumps`` (orjson, with the stdlib for what orjson refuses) against ``json``."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from handles.server._outputs import output_for
from handles.server.jsonrpc import dumps, encode, parse, result_response

texts = st.text()  # lone surrogates included: those take the stdlib's ASCII path
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


@settings(deadline=None, max_examples=200)
@given(st.integers() | texts, values)
def test_any_result_reads_back_the_same_from_one_line(id: Any, value: Any) -> None:
    message = result_response(id, {"structuredContent": {"value": value}})
    data = dumps(message)
    assert b"\n" not in data and b"\r" not in data
    assert json.loads(data.decode()) == json.loads(json.dumps(message))
    assert encode(message) == data.decode()


@settings(deadline=None, max_examples=100)
@given(st.dictionaries(texts, values, max_size=6))
def test_a_tool_result_text_is_its_structured_content(value: dict[str, Any]) -> None:
    result = output_for("t", dict[str, Any]).to_wire(value)
    assert result["structuredContent"] == value
    assert json.loads(result["content"][0]["text"]) == json.loads(json.dumps(value))


def test_what_orjson_refuses_the_stdlib_writes() -> None:
    assert dumps({"a": 2**70}) == b'{"a":1180591620717411303424}'
    assert dumps({1: "x", "b": None}) == b'{"1":"x","b":null}'
    assert dumps({"text": "a\ud800b"}) == b'{"text":"a\\ud800b"}'
    assert dumps({"text": "é\ud800"}) == b'{"text":"\\u00e9\\ud800"}'


def test_non_finite_floats_become_null_as_json_has_no_infinity() -> None:
    assert dumps({"a": float("inf"), "b": float("nan"), "c": -float("inf")}) == (
        b'{"a":null,"b":null,"c":null}'
    )


def test_parse_takes_what_orjson_refuses_but_json_allows() -> None:
    message = parse(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\\ud800","n":1e999}}')
    assert message["params"]["a"] == "\ud800"
    assert message["params"]["n"] == float("inf")
    assert parse(b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}')["id"] == (
        123456789012345678901234567890
    )


class Line(BaseModel):
    sku: str
    price: float


class View(BaseModel):
    lines: list[Line]
    note: str | None = None


def test_a_model_result_with_modern_fields_after_it() -> None:
    result = output_for("t", View).to_wire(View(lines=[Line(sku='é\n"', price=19.9)]))
    result["resultType"] = "complete"
    result["_meta"] = {"io.modelcontextprotocol/serverInfo": {"name": "x", "version": "1"}}
    data = dumps(result_response("req-1", result))
    assert data.startswith(b'{"jsonrpc":"2.0","id":"req-1","result":{"content":[{"type":"text"')
    assert json.loads(data)["result"]["structuredContent"] == {
        "lines": [{"sku": 'é\n"', "price": 19.9}],
        "note": None,
    }
    assert result["content"][0]["text"] == '{"lines":[{"sku":"é\\n\\"","price":19.9}],"note":null}'


@settings(deadline=None, max_examples=200)
@given(values)
def test_parse_reads_what_json_reads_integers_exactly(value: Any) -> None:
    data = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"v": value}})
    assert parse(data.encode())["params"] == json.loads(data)["params"]
    assert parse(data)["params"] == json.loads(data)["params"]
