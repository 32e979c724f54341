"""From a tool's return annotation to its ``outputSchema`` and ``structuredContent``.

Objects (pydantic models, TypedDicts, dataclasses, ``dict``) are the structured
content as they are. Anything else (``int``, ``list[str]``, ...) is wrapped as
``{"result": value}``, because the 2025-11-25 era requires an object at the root.
Every result also carries the JSON as a text block, for clients that only read text.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from .content import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    InputRequired,
    ResourceLink,
    TextContent,
    ToolResult,
)
from .jsonrpc import encode

__all__ = ["Output", "output_for"]

_UNSTRUCTURED = {
    type(None),
    ToolResult,
    InputRequired,
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
}


@dataclass(frozen=True, slots=True)
class Output:
    """How to turn a tool's return value into a result."""

    schema: dict[str, Any] | None
    adapter: TypeAdapter[Any] | None
    wrapped: bool = False

    def to_wire(self, value: Any) -> dict[str, Any]:
        if self.adapter is None:
            return _unstructured(value)
        if isinstance(value, BaseModel) and not self.wrapped:
            structured = value.model_dump(mode="json", by_alias=True)
        else:
            value = self.adapter.validate_python(value)
            structured = self.adapter.dump_python(value, mode="json", by_alias=True)
        if self.wrapped:
            text = structured if isinstance(structured, str) else encode(structured)
            structured = {"result": structured}
        else:
            text = encode(structured)
        content = [{"type": "text", "text": text}]
        return {"content": content, "structuredContent": structured, "isError": False}


def output_for(tool: str, annotation: Any) -> Output:
    """The ``Output`` for a return annotation (``inspect.Signature.empty`` if none)."""
    if annotation is inspect.Signature.empty or _is_unstructured(annotation):
        return Output(None, None)
    annotation = _without_passthrough(annotation)
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    schema = adapter.json_schema(mode="serialization")
    if schema.get("type") == "object":
        schema.pop("title", None)
        return Output(schema, adapter)
    wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    defs = schema.pop("$defs", None)
    if defs:
        wrapped["$defs"] = defs
    return Output(wrapped, adapter, wrapped=True)


def _without_passthrough(annotation: Any) -> Any:
    """``Order | InputRequired`` -> ``Order``: those results bypass the output schema."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return annotation
    kept = [a for a in typing.get_args(annotation) if a not in (InputRequired, ToolResult)]
    return functools.reduce(operator.or_, kept)


def _is_unstructured(annotation: Any) -> bool:
    if annotation is None or annotation in _UNSTRUCTURED:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return all(_is_unstructured(arg) for arg in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        return _is_unstructured(item)
    return False


def error_result(text: str) -> dict[str, Any]:
    """The ``isError`` result that shows the model ``text``."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _unstructured(value: Any) -> dict[str, Any]:
    """A value with no declared type: text only, no ``structuredContent``."""
    if value is None:
        return {"content": [], "isError": False}
    if isinstance(value, list) and all(hasattr(v, "to_wire") for v in value):
        return {"content": [v.to_wire() for v in value], "isError": False}
    text = value if isinstance(value, str) else encode(to_jsonable_python(value))
    return {"content": [{"type": "text", "text": text}], "isError": False}
