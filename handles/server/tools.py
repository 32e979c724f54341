"""Tools from typed Python functions.

The signature becomes the ``inputSchema`` (JSON Schema 2020-12 through pydantic),
the docstring the description (its ``Args:`` section describes the parameters),
and the return annotation the ``outputSchema``. Parameters annotated ``Context``
or ``Principal`` are filled in by the server and never appear in the schema.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from stores.base import Store

from .._awaitables import maybe_await
from ..errors import ToolError
from ..principal import Principal
from ._docstrings import split_docstring
from ._outputs import Output, error_result, output_for
from ._validation import describe_errors
from .content import Content, InputRequired, ToolResult
from .context import Context, InputNeeded
from .jsonrpc import ProtocolError

__all__ = ["X_MCP_HEADER", "Tool", "ToolError", "ToolFunction", "param_headers"]

ToolFunction = Callable[..., Any]
logger = logging.getLogger("handles.server.tools")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
X_MCP_HEADER = "x-mcp-header"
"""The ``inputSchema`` property annotation that mirrors an argument into ``Mcp-Param-<Name>``."""
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 field-name token
_HEADER_TYPES = ("string", "integer", "boolean")


@dataclass(slots=True)
class Tool:
    """A registered tool: its wire definition and how to call it."""

    name: str
    fn: ToolFunction
    definition: dict[str, Any]
    arguments: type[BaseModel]
    output: Output
    injected: dict[str, type] = field(default_factory=dict)
    in_thread: bool = False
    #: Argument-model field name -> parameter name, for parameters pydantic cannot
    #: hold under their own name (``_private``, ``schema``, ``model_config``...).
    renamed: dict[str, str] = field(default_factory=dict)
    #: ``fn`` is a coroutine function: awaited directly, with no awaitable check.
    is_async: bool = False
    #: Arguments mirrored into ``Mcp-Param-<Name>`` headers (SEP-2243): argument name
    #: -> (the ``x-mcp-header`` name, its JSON Schema type). Read from ``inputSchema``.
    headers: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The store whose operation is this tool's first effect, if any: a rate limiter
    #: counting in that same store folds the call's count into that operation (one
    #: round trip, see ``handles.server.ratelimit``). ``HandleTools`` sets it for its
    #: reads, edits and closes; ``None`` counts before the tool runs.
    store_first: Store | None = None

    @classmethod
    def from_function(
        cls,
        fn: ToolFunction,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        in_thread: bool | None = None,
    ) -> Tool:
        """Build a tool from ``fn``; raise ``ValueError`` at once if it cannot be one."""
        name = name if name is not None else fn.__name__
        _check_name(name)
        signature = inspect.signature(fn, eval_str=True)
        summary, arg_docs = split_docstring(inspect.getdoc(fn) or "")
        arguments, injected, renamed = _arguments_model(name, signature, arg_docs)
        output = output_for(name, signature.return_annotation)
        definition = _definition(name, title, description or summary, arguments, output)
        _add_optional(definition, annotations, icons, meta)
        is_async = inspect.iscoroutinefunction(fn)
        return cls(
            name,
            fn,
            definition,
            arguments,
            output,
            injected,
            not is_async and in_thread is not False,
            renamed,
            is_async,
            param_headers(name, definition["inputSchema"]),
        )

    async def call(self, arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        """Validate, run and convert; every failure becomes an ``isError`` result.

        Except ``ProtocolError``: a tool raises it to answer with a JSON-RPC error
        instead (a missing client capability, a tampered ``requestState``), and it
        propagates to ``Server.handle``.
        """
        try:
            parsed = self.arguments.__pydantic_validator__.validate_python(arguments)
        except ValidationError as exc:
            return error_result(f"Input validation error in {self.name}: {describe_errors(exc)}.")
        values = parsed.__dict__
        renamed = self.renamed
        kwargs = {renamed.get(k, k): v for k, v in values.items()} if renamed else dict(values)
        for param, kind in self.injected.items():
            kwargs[param] = context if kind is Context else context.principal
        try:
            value = await self.fn(**kwargs) if self.is_async else await self._run(kwargs)
            return self._convert(value)
        except InputNeeded as needed:  # Context.confirm asks a 2026-07-28 client
            return needed.result.to_wire()
        except ToolError as exc:
            return error_result(str(exc))
        except ProtocolError:
            raise  # a JSON-RPC error the tool chose (-32021, -32602): Server.handle sends it
        except Exception:
            logger.exception("tool %s failed", self.name)
            return error_result(
                f"{self.name} failed because of an internal error in the server. "
                "The details are in the server's log; try again later."
            )

    async def _run(self, kwargs: dict[str, Any]) -> Any:
        if self.in_thread:
            return await anyio.to_thread.run_sync(lambda: self.fn(**kwargs))
        return await maybe_await(self.fn(**kwargs))

    def _convert(self, value: Any) -> dict[str, Any]:
        if isinstance(value, ToolResult | InputRequired):
            return value.to_wire()
        if isinstance(value, Content):
            return {"content": [value.to_wire()], "isError": False}
        return self.output.to_wire(value)


def param_headers(tool: str, schema: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The ``x-mcp-header`` declarations of an ``inputSchema``, checked as SEP-2243 asks.

    Clients drop a tool whose declarations break a rule, so a bad one is refused
    here, at registration: a name must be an RFC 9110 token, unique ignoring case,
    on a top-level ``string``, ``integer`` or ``boolean`` property (``number`` is
    not allowed; the core does not mirror nested properties).

    Raises:
        ValueError: A declaration breaks one of these rules.
    """
    declared: dict[str, tuple[str, str]] = {}
    seen: dict[str, str] = {}
    for argument, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict) or X_MCP_HEADER not in prop:
            continue
        header, kind = prop[X_MCP_HEADER], prop.get("type")
        where = f"tool {tool!r}, argument {argument!r}"
        if not isinstance(header, str) or not _TOKEN.fullmatch(header):
            raise ValueError(
                f"{where}: x-mcp-header {str(header)[:60]!r} is not an HTTP token "
                "(letters, digits and !#$%&'*+-.^_`|~, no spaces or colons)"
            )
        if kind not in _HEADER_TYPES:
            raise ValueError(
                f"{where}: x-mcp-header is allowed on a string, integer or boolean property "
                f"only, and this one's type is {kind!r} (an Optional[...] is not allowed: "
                "give it a default instead)"
            )
        if header.lower() in seen:
            raise ValueError(
                f"{where}: x-mcp-header {header!r} is already used by argument "
                f"{seen[header.lower()]!r} (names are compared ignoring case)"
            )
        seen[header.lower()] = argument
        declared[argument] = (header, kind)
    _check_nested(tool, schema)
    return declared


def _check_nested(tool: str, schema: dict[str, Any]) -> None:
    """Refuse an ``x-mcp-header`` anywhere but on a top-level property."""
    stack: list[tuple[Any, bool]] = [(schema, False)]
    while stack:
        node, top_property = stack.pop()
        if isinstance(node, dict):
            if X_MCP_HEADER in node and not top_property:
                raise ValueError(
                    f"tool {tool!r}: x-mcp-header is allowed only on a top-level property "
                    "of inputSchema; move it or drop it"
                )
            for key, value in node.items():
                if key == "properties" and node is schema and isinstance(value, dict):
                    stack.extend((sub, True) for sub in value.values())
                elif key not in ("default", "examples", "const", "enum"):
                    stack.append((value, False))
        elif isinstance(node, list):
            stack.extend((item, False) for item in node)


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"invalid tool name {name[:140]!r}: use 1 to 128 characters from A-Z, a-z, 0-9, "
            "'_', '-' and '.'"
        )


def _arguments_model(
    tool: str, signature: inspect.Signature, docs: dict[str, str]
) -> tuple[type[BaseModel], dict[str, type], dict[str, str]]:
    fields: dict[str, Any] = {}
    injected: dict[str, type] = {}
    renamed: dict[str, str] = {}
    for param in signature.parameters.values():
        annotation = param.annotation
        if annotation in (Context, Principal):
            injected[param.name] = annotation
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"tool {tool!r}: *args and **kwargs cannot become a schema")
        if annotation is inspect.Parameter.empty:
            raise ValueError(f"tool {tool!r}: parameter {param.name!r} needs a type annotation")
        default = ... if param.default is inspect.Parameter.empty else param.default
        doc = None if _has_description(annotation) else docs.get(param.name)
        key = param.name
        if key.startswith("_") or hasattr(BaseModel, key):
            # pydantic drops, rejects or warns about these as field names: alias them.
            key = f"field_{len(fields)}_"
            while key in signature.parameters:
                key += "_"
            renamed[key] = param.name
            annotation = Annotated[annotation, Field(alias=param.name)]
        fields[key] = (annotation, _described(default, doc))
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    model = create_model(f"{tool}Arguments", __config__=config, **fields)
    return model, injected, renamed


def _has_description(annotation: Any) -> bool:
    """Whether ``Annotated[..., Field(description=...)]`` already describes the parameter."""
    metadata = getattr(annotation, "__metadata__", ())
    return any(isinstance(item, FieldInfo) and item.description for item in metadata)


def _described(default: Any, doc: str | None) -> Any:
    if doc is None or isinstance(default, FieldInfo):
        return default
    return Field(default, description=doc)


def _definition(
    name: str,
    title: str | None,
    description: str,
    arguments: type[BaseModel],
    output: Output,
) -> dict[str, Any]:
    schema = arguments.model_json_schema()
    schema.pop("title", None)
    definition: dict[str, Any] = {"name": name}
    if title is not None:
        definition["title"] = title
    if description:
        definition["description"] = description
    definition["inputSchema"] = schema
    if output.schema is not None:
        definition["outputSchema"] = output.schema
    return definition


def _add_optional(
    definition: dict[str, Any],
    annotations: dict[str, Any] | None,
    icons: list[dict[str, Any]] | None,
    meta: dict[str, Any] | None,
) -> None:
    if annotations:
        unknown = set(annotations) - set(_ANNOTATION_KEYS)
        if unknown:
            raise ValueError(
                f"unknown tool annotation(s) {sorted(unknown)}; use {_ANNOTATION_KEYS}"
            )
        definition["annotations"] = dict(annotations)
    if icons:
        definition["icons"] = list(icons)
    if meta:
        definition["_meta"] = dict(meta)
