"""Return annotations to ``outputSchema``, return values to ``structuredContent`` + text."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from handles.server._outputs import output_for
from handles.server.content import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    InputRequired,
    ResourceLink,
    TextContent,
    ToolResult,
)


class Item(BaseModel):
    """One line of a basket."""

    sku: str
    quantity: int = Field(alias="qty")


class Basket(BaseModel):
    items: list[Item]


class Totals(TypedDict):
    count: int
    total: float


@dataclass
class Pair:
    left: int
    right: str


@pytest.mark.parametrize(
    "annotation",
    [
        inspect.Signature.empty,
        None,
        type(None),
        ToolResult,
        InputRequired,
        TextContent,
        ImageContent,
        AudioContent,
        ResourceLink,
        EmbeddedResource,
        Content,
        list[Content],
        list[TextContent],
        TextContent | None,
        ImageContent | AudioContent,
    ],
)
def test_unstructured_annotations_have_no_output_schema(annotation: Any) -> None:
    output = output_for("t", annotation)
    assert output.schema is None and output.adapter is None


def test_a_model_is_its_own_schema_without_the_title() -> None:
    output = output_for("t", Item)
    assert output.wrapped is False
    assert output.schema == {
        "type": "object",
        "description": "One line of a basket.",
        "properties": {
            "sku": {"type": "string", "title": "Sku"},
            "qty": {"type": "integer", "title": "Qty"},
        },
        "required": ["sku", "qty"],
    }


def test_nested_models_keep_their_defs() -> None:
    schema = output_for("t", Basket).schema
    assert schema is not None
    assert schema["properties"] == {
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "title": "Items"}
    }
    assert set(schema["$defs"]) == {"Item"}


def test_typed_dict_and_dataclass_and_dict_are_objects() -> None:
    assert output_for("t", Totals).schema == {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "title": "Count"},
            "total": {"type": "number", "title": "Total"},
        },
        "required": ["count", "total"],
    }
    pair = output_for("t", Pair).schema
    assert (
        pair is not None
        and pair["type"] == "object"
        and list(pair["properties"])
        == [
            "left",
            "right",
        ]
    )
    assert output_for("t", dict[str, int]).schema == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }


@pytest.mark.parametrize(
    ("annotation", "inner"),
    [
        (int, {"type": "integer"}),
        (str, {"type": "string"}),
        (bool, {"type": "boolean"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ],
)
def test_primitives_are_wrapped_in_an_object(annotation: Any, inner: dict[str, Any]) -> None:
    output = output_for("t", annotation)
    assert output.wrapped is True
    assert output.schema == {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    }


def test_a_wrapped_list_of_models_moves_defs_to_the_root() -> None:
    schema = output_for("t", list[Item]).schema
    item = output_for("t", Item).schema
    assert item is not None
    assert schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["result"],
        "$defs": {"Item": item | {"title": "Item"}},
    }


def test_model_values_are_dumped_by_alias_with_a_json_text_block() -> None:
    wire = output_for("t", Item).to_wire(Item(sku="é-1", qty=2))
    assert wire == {
        "content": [{"type": "text", "text": '{"sku":"é-1","qty":2}'}],
        "structuredContent": {"sku": "é-1", "qty": 2},
        "isError": False,
    }


def test_dicts_are_validated_into_the_declared_type() -> None:
    wire = output_for("t", Totals).to_wire({"count": "3", "total": 1})
    assert wire["structuredContent"] == {"count": 3, "total": 1.0}


def test_dataclass_values() -> None:
    assert output_for("t", Pair).to_wire(Pair(1, "r"))["structuredContent"] == {
        "left": 1,
        "right": "r",
    }


@pytest.mark.parametrize(
    ("annotation", "value", "text", "structured"),
    [
        (int, 3, "3", 3),
        (str, "plain text", "plain text", "plain text"),
        (str, "", "", ""),
        (bool, False, "false", False),
        (list[str], ["a"], '["a"]', ["a"]),
        (int | None, None, "null", None),
    ],
)
def test_wrapped_values(annotation: Any, value: Any, text: str, structured: Any) -> None:
    assert output_for("t", annotation).to_wire(value) == {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"result": structured},
        "isError": False,
    }


def test_a_value_of_the_wrong_type_raises() -> None:
    with pytest.raises(ValueError, match="validation error"):
        output_for("t", int).to_wire("nope")


@pytest.mark.parametrize(
    ("value", "content"),
    [
        (None, []),
        ("text", [{"type": "text", "text": "text"}]),
        ({"a": [1, 2]}, [{"type": "text", "text": '{"a":[1,2]}'}]),
        (Item(sku="s", qty=1), [{"type": "text", "text": '{"sku":"s","qty":1}'}]),
        (
            [TextContent("a"), ResourceLink("file:///x", "x")],
            [
                {"type": "text", "text": "a"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
            ],
        ),
    ],
)
def test_undeclared_values_become_text_only(value: Any, content: list[Any]) -> None:
    wire = output_for("t", inspect.Signature.empty).to_wire(value)
    assert wire == {"content": content, "isError": False}


class Holder(TypedDict):
    item: Item


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (Item, Item(sku="a", qty=1)),
        (list[Item], [Item(sku="a", qty=1)]),
        (Item | None, Item(sku="a", qty=1)),
        (Holder, {"item": Item(sku="a", qty=1)}),
        (Basket, Basket(items=[Item(sku="a", qty=1)])),
        (Totals, {"count": 1, "total": 2.5}),
        (Pair, Pair(1, "r")),
        (dict[str, int], {"a": 1}),
        (int, 3),
        (str | None, None),
        (list[str], []),
    ],
)
def test_structured_content_conforms_to_the_output_schema(annotation: Any, value: Any) -> None:
    # The mcp client checks exactly this, and raises when it does not hold.
    output = output_for("t", annotation)
    wire = output.to_wire(value)
    jsonschema.validate(wire["structuredContent"], output.schema)


def test_nested_models_are_dumped_by_alias_like_their_schema() -> None:
    wire = output_for("t", list[Item]).to_wire([Item(sku="a", qty=1)])
    assert wire == {
        "content": [{"type": "text", "text": '[{"sku":"a","qty":1}]'}],
        "structuredContent": {"result": [{"sku": "a", "qty": 1}]},
        "isError": False,
    }
