"""Tools from typed functions: registration errors, schemas, and calls."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel, Field

from handles.principal import Principal
from handles.server.content import ImageContent, InputRequired, TextContent, ToolResult
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.server.protocol import RequestMeta
from handles.server.tools import Tool, ToolError

PRINCIPAL = Principal("alice", issuer="https://issuer.example")


def context(tool: str = "t", meta: RequestMeta | None = None) -> Context:
    return Context(PRINCIPAL, tool, 7, meta or RequestMeta("2026-07-28", {"x": {}}, "tok"))


async def call(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(5):
        return await tool.call(arguments, context(tool.name))


def text_result(text: str, *, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


class Point(BaseModel):
    x: int
    y: int


# -- registration errors ------------------------------------------------------------------


def noop() -> None:
    """Do nothing."""


@pytest.mark.parametrize(
    "name", ["", "x" * 129, "has space", "slash/name", "ünïcode", "tab\t", "new\nline"]
)
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"^invalid tool name .*use 1 to 128 characters"):
        Tool.from_function(noop, name=name)


@pytest.mark.parametrize("name", ["a", "x" * 128, "A-b_c.d9", "noop"])
def test_valid_names(name: str) -> None:
    assert Tool.from_function(noop, name=name).definition["name"] == name


def test_the_function_name_is_the_default_name() -> None:
    assert Tool.from_function(noop).name == "noop"


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError, match="invalid tool name '<lambda>'"):
        Tool.from_function(lambda: None)


def test_duplicates_are_refused() -> None:
    server = Server("s")
    server.tool(noop)
    with pytest.raises(ValueError, match=r"^a tool named 'noop' is already registered$"):
        server.tool(noop)
    with pytest.raises(ValueError, match="already registered"):
        server.tool(name="noop")(lambda: None)
    assert [tool.name for tool in server.tools] == ["noop"]


def test_missing_annotation_is_refused() -> None:
    def f(a: int, b) -> None:  # type: ignore[no-untyped-def]
        """F."""

    with pytest.raises(ValueError, match=r"^tool 'f': parameter 'b' needs a type annotation$"):
        Tool.from_function(f)


def test_var_positional_is_refused() -> None:
    def f(*args: int) -> None:
        """F."""

    with pytest.raises(
        ValueError, match=r"^tool 'f': \*args and \*\*kwargs cannot become a schema"
    ):
        Tool.from_function(f)


def test_var_keyword_is_refused() -> None:
    def f(**kwargs: int) -> None:
        """F."""

    with pytest.raises(ValueError, match=r"\*args and \*\*kwargs cannot become a schema"):
        Tool.from_function(f)


def test_unknown_annotation_keys_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown tool annotation\(s\) \['readonly'\]"):
        Tool.from_function(noop, annotations={"readonly": True})


# -- schemas ------------------------------------------------------------------------------


def documented(
    query: str,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    mode: Literal["fast", "exact"] = "fast",
    tags: list[str] | None = None,
    weight: Annotated[float, Field(gt=0, description="Explicit wins.")] = 1.0,
) -> None:
    """Search the catalogue.

    Longer explanation that stays in the description.

    Args:
        query: What to look for.
        limit: How many results, at most; the server
            caps this at fifty.
        mode (str): How to match.
        weight: Docstring loses to the explicit Field description.

    Returns:
        Nothing.
    """


def test_input_schema_has_defaults_bounds_and_descriptions() -> None:
    definition = Tool.from_function(documented).definition
    assert definition["description"] == (
        "Search the catalogue.\n\nLonger explanation that stays in the description."
    )
    assert definition["inputSchema"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "query": {"type": "string", "title": "Query", "description": "What to look for."},
            "limit": {
                "type": "integer",
                "title": "Limit",
                "default": 10,
                "minimum": 1,
                "maximum": 50,
                "description": "How many results, at most; the server caps this at fifty.",
            },
            "mode": {
                "enum": ["fast", "exact"],
                "type": "string",
                "title": "Mode",
                "default": "fast",
                "description": "How to match.",
            },
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "title": "Tags",
                "default": None,
            },
            "weight": {
                "type": "number",
                "title": "Weight",
                "default": 1.0,
                "exclusiveMinimum": 0,
                "description": "Explicit wins.",
            },
        },
        "required": ["query"],
    }
    assert "outputSchema" not in definition


def test_field_default_keeps_its_own_description() -> None:
    def f(a: int = Field(3, description="From Field.", le=9)) -> None:
        """F.

        Args:
            a: From the docstring.
        """

    schema = Tool.from_function(f).definition["inputSchema"]
    assert schema["properties"]["a"] == {
        "type": "integer",
        "title": "A",
        "default": 3,
        "maximum": 9,
        "description": "From Field.",
    }
    assert "required" not in schema


def test_injected_parameters_are_not_in_the_schema() -> None:
    def f(ctx: Context, a: int, who: Principal) -> None:
        """F."""

    tool = Tool.from_function(f)
    assert tool.injected == {"ctx": Context, "who": Principal}
    assert tool.definition["inputSchema"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"a": {"type": "integer", "title": "A"}},
        "required": ["a"],
    }


def test_a_tool_without_parameters_has_an_empty_object_schema() -> None:
    assert Tool.from_function(noop).definition == {
        "name": "noop",
        "description": "Do nothing.",
        "inputSchema": {"type": "object", "additionalProperties": False, "properties": {}},
    }


def test_title_description_annotations_icons_and_meta() -> None:
    icons = [{"src": "data:image/png;base64,AA==", "mimeType": "image/png", "sizes": ["16x16"]}]
    tool = Tool.from_function(
        noop,
        name="renamed",
        title="A title",
        description="Explicit description.",
        annotations={"title": "Ann", "readOnlyHint": True, "openWorldHint": False},
        icons=icons,
        meta={"com.example/flag": 1},
    )
    assert tool.definition == {
        "name": "renamed",
        "title": "A title",
        "description": "Explicit description.",
        "inputSchema": {"type": "object", "additionalProperties": False, "properties": {}},
        "annotations": {"title": "Ann", "readOnlyHint": True, "openWorldHint": False},
        "icons": icons,
        "_meta": {"com.example/flag": 1},
    }


def test_no_docstring_means_no_description() -> None:
    def f() -> None:
        pass

    assert "description" not in Tool.from_function(f).definition


def test_output_schema_of_a_model() -> None:
    def f() -> Point:
        """F."""
        return Point(x=1, y=2)

    assert Tool.from_function(f).definition["outputSchema"] == {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "title": "X"},
            "y": {"type": "integer", "title": "Y"},
        },
        "required": ["x", "y"],
    }


def test_output_schema_of_a_wrapped_primitive() -> None:
    def f() -> list[int]:
        """F."""
        return [1]

    assert Tool.from_function(f).definition["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }


def shadowing(_private: int, schema: str, model_config: int = 0, json: bool = False) -> str:
    """Parameters whose names pydantic reserves.

    Args:
        _private: A private-looking name.
        schema: A database schema.
    """
    return f"{_private}|{schema}|{model_config}|{json}"


def test_reserved_parameter_names_keep_their_names_on_the_wire() -> None:
    schema = Tool.from_function(shadowing).definition["inputSchema"]
    assert list(schema["properties"]) == ["_private", "schema", "model_config", "json"]
    assert schema["required"] == ["_private", "schema"]
    assert schema["properties"]["_private"]["description"] == "A private-looking name."
    assert schema["properties"]["schema"]["description"] == "A database schema."


@pytest.mark.anyio
async def test_reserved_parameter_names_reach_the_function() -> None:
    tool = Tool.from_function(shadowing)
    result = await call(tool, {"_private": 1, "schema": "s", "model_config": 2, "json": True})
    assert result["structuredContent"] == {"result": "1|s|2|True"}
    bad = await call(tool, {"_private": "x", "field_0_": 1})
    assert bad == text_result(
        'Input validation error in shadowing: _private: must be an integer, got "x"; '
        "schema: is required; field_0_: is not a parameter of this tool.",
        error=True,
    )


# -- calls --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_tools_run_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        """F."""
        return threading.get_ident() != loop_thread

    tool = Tool.from_function(where)
    assert tool.in_thread is True
    assert (await call(tool, {}))["structuredContent"] == {"result": True}


@pytest.mark.anyio
async def test_sync_tools_can_run_inline() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        """F."""
        return threading.get_ident() == loop_thread

    tool = Tool.from_function(where, in_thread=False)
    assert tool.in_thread is False
    assert (await call(tool, {}))["structuredContent"] == {"result": True}


@pytest.mark.anyio
async def test_async_tools_run_on_the_loop() -> None:
    async def f(a: int, b: int = 2) -> int:
        """F."""
        await anyio.lowlevel.checkpoint()
        return a * b

    tool = Tool.from_function(f, in_thread=True)  # ignored for async functions
    assert tool.in_thread is False
    assert await call(tool, {"a": 21}) == {
        "content": [{"type": "text", "text": "42"}],
        "structuredContent": {"result": 42},
        "isError": False,
    }


@pytest.mark.anyio
async def test_context_and_principal_are_injected() -> None:
    seen: list[Any] = []

    async def f(ctx: Context, who: Principal) -> None:
        """F."""
        seen.extend([ctx.tool_name, ctx.request_id, ctx.era, ctx.client_capabilities, who])

    assert await call(Tool.from_function(f), {}) == {"content": [], "isError": False}
    assert seen == ["f", 7, "modern", {"x": {}}, PRINCIPAL]


@pytest.mark.anyio
async def test_arguments_are_validated_before_the_call() -> None:
    calls: list[int] = []

    def f(n: Annotated[int, Field(le=5)]) -> int:
        """F."""
        calls.append(n)
        return n

    tool = Tool.from_function(f)
    assert await call(tool, {"n": 6}) == text_result(
        "Input validation error in f: n: must be at most 5, got 6.", error=True
    )
    assert await call(tool, {}) == text_result(
        "Input validation error in f: n: is required.", error=True
    )
    assert await call(tool, {"n": 1, "m": 2}) == text_result(
        "Input validation error in f: m: is not a parameter of this tool.", error=True
    )
    assert calls == []


@pytest.mark.anyio
async def test_validated_values_have_their_python_types() -> None:
    def f(point: Point, when: Literal["now", "later"]) -> str:
        """F."""
        assert isinstance(point, Point)
        return f"{point.x},{point.y} {when}"

    result = await call(Tool.from_function(f), {"point": {"x": 1, "y": 2}, "when": "now"})
    assert result["structuredContent"] == {"result": "1,2 now"}


@pytest.mark.anyio
async def test_tool_error_is_shown_as_is() -> None:
    def f() -> int:
        """F."""
        raise ToolError("The basket is closed; open a new one with basket_open.")

    assert await call(Tool.from_function(f), {}) == text_result(
        "The basket is closed; open a new one with basket_open.", error=True
    )


@pytest.mark.anyio
async def test_unexpected_errors_are_generic_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def f() -> int:
        """F."""
        raise KeyError("secret detail")

    result = await call(Tool.from_function(f), {})
    assert result == text_result(
        "f failed because of an internal error in the server. "
        "The details are in the server's log; try again later.",
        error=True,
    )
    assert "secret" not in str(result)
    (record,) = [r for r in caplog.records if r.name == "handles.server.tools"]
    assert record.getMessage() == "tool f failed"
    assert record.exc_info is not None and "secret detail" in str(record.exc_info[1])


@pytest.mark.anyio
async def test_a_return_value_that_breaks_the_declared_type_is_an_internal_error() -> None:
    def f() -> int:
        """F."""
        return "not a number"  # type: ignore[return-value]

    result = await call(Tool.from_function(f), {})
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("f failed because of an internal error")


@pytest.mark.anyio
async def test_returning_tool_result_content_or_input_required() -> None:
    def full() -> ToolResult:
        """F."""
        return ToolResult([TextContent("partial")], structured={"n": 1}, is_error=True)

    def one_block() -> ImageContent:
        """F."""
        return ImageContent(b"\x00", "image/png")

    def ask() -> InputRequired:
        """F."""
        return InputRequired({"confirm": {"method": "elicitation/create"}}, "state")

    assert await call(Tool.from_function(full), {}) == {
        "content": [{"type": "text", "text": "partial"}],
        "structuredContent": {"n": 1},
        "isError": True,
    }
    assert await call(Tool.from_function(one_block), {}) == {
        "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        "isError": False,
    }
    assert await call(Tool.from_function(ask), {}) == {
        "resultType": "input_required",
        "inputRequests": {"confirm": {"method": "elicitation/create"}},
        "requestState": "state",
    }


@dataclass
class Pair:
    left: int
    right: int


@pytest.mark.anyio
async def test_dataclass_results_are_structured() -> None:
    def f() -> Pair:
        """F."""
        return Pair(1, 2)

    tool = Tool.from_function(f)
    assert tool.definition["outputSchema"]["properties"] == {
        "left": {"type": "integer", "title": "Left"},
        "right": {"type": "integer", "title": "Right"},
    }
    assert await call(tool, {}) == {
        "content": [{"type": "text", "text": '{"left":1,"right":2}'}],
        "structuredContent": {"left": 1, "right": 2},
        "isError": False,
    }
