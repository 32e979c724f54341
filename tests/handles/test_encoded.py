"""``dumps`` reuses the text of an ``Encoded`` structuredContent, byte for byte."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from handles.jsonrpc import Encoded, dumps, encode, result_response
from handles.outputs import output_for

texts = st.text(st.characters(exclude_categories=["Cs"]))  # UTF-8 can encode these
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
ids = st.integers() | texts


def plain(message: Any) -> bytes:
    """What ``dumps`` wrote before ``Encoded``: one ``json.dumps`` of plain data."""
    copied = json.loads(json.dumps(message))
    return json.dumps(copied, separators=(",", ":"), ensure_ascii=False).encode()


@settings(max_examples=50)
@given(ids, st.dictionaries(texts, values, max_size=6))
def test_a_dict_result_is_written_as_json_dumps_writes_it(id: Any, value: dict[str, Any]) -> None:
    result = output_for("t", dict[str, Any]).to_wire(value)
    assert type(result["structuredContent"]) is Encoded
    assert result["structuredContent"] == value
    message = result_response(id, result)
    assert dumps(message) == plain(message)


@settings(max_examples=50)
@given(ids, values)
def test_a_wrapped_result_is_written_as_json_dumps_writes_it(id: Any, value: Any) -> None:
    result = output_for("t", Any).to_wire(value)
    assert result["structuredContent"] == {"result": value}
    message = result_response(id, result)
    assert dumps(message) == plain(message)


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
    message = result_response("req-1", result)
    assert dumps(message) == plain(message)
    assert json.loads(dumps(message))["result"]["structuredContent"] == {
        "lines": [{"sku": 'é\n"', "price": 19.9}],
        "note": None,
    }


def test_only_the_encoded_text_is_reused() -> None:
    stale = Encoded({"a": 1}, encode({"a": 2}))  # a broken promise shows on the wire
    assert dumps(result_response(1, {"structuredContent": stale})) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":2}}}'
    )
    # Only a result's structuredContent is spliced, and only when every key is a string.
    assert dumps({"jsonrpc": "2.0", "id": 1, "result": {"other": stale}}) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"other":{"a":1}}}'
    )
    assert dumps({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": stale, 2: 3}}) == (
        b'{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":1},"2":3}}'
    )
