"""Stateful tools in a few lines: ``HandleTools`` wires tool functions to a manager.

Write the handler as if the state were a local variable; the decorator adds the
handle parameter to the tool's schema, checks tag, kind, owner and expiry before
the handler runs, commits edits atomically and turns every ``HandleError`` into
the ``isError`` text the model needs::

    tools = HandleTools(server, manager)

    @tools.creates(basket)
    async def create_basket() -> Basket:
        "Start an empty basket."
        return Basket()

    @tools.edits(basket)
    async def add_item(state: Basket, sku: str, quantity: int = 1) -> BasketView:
        state.items[sku] = state.items.get(sku, 0) + quantity
        return BasketView.of(state)

A handler's parameter annotated with the kind's state model receives the state;
one named like the kind's id parameter (``basket_id``) receives the id; one
annotated ``Handle`` receives the whole handle (``reads`` and ``closes``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from types import CoroutineType
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field, create_model

from .errors import HandleError
from .handle import Handle
from .kinds import HandleKind
from .manager import HandleManager
from .principal import Principal
from .server._docstrings import split_docstring
from .server.content import InputRequired, ToolResult
from .server.dispatch import Server
from .server.tools import X_MCP_HEADER, Tool, ToolFunction

__all__ = ["HandleTools"]

F = TypeVar("F", bound=ToolFunction)
_PRINCIPAL = "_handles_principal"
_MAX_ID_CHARS = 256


class HandleTools:
    """Registers tools that create, read, edit, close and list handles."""

    def __init__(self, server: Server, manager: HandleManager) -> None:
        self.server = server
        self.manager = manager

    def creates(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler returns the initial state (or ``None`` for ``kind.model()``).

        The tool returns ``{"<kind>_id": ..., "expires_at": ...}`` and its description
        ends with the kind's lifetime sentence.
        """
        created = _created_model(kind)

        def register(fn: F) -> F:
            async def create(**kwargs: Any) -> BaseModel:
                principal = kwargs.pop(_PRINCIPAL)
                state = await _call(fn, kwargs)
                handle = await self.manager.create(principal, kind, state)
                return created(**{kind.id_param: handle.id, "expires_at": handle.expires_at_iso})

            signature = _signature(fn, kind, with_id=False, returns=created)
            hints = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
            description = _join(_summary(fn, options), kind.lifetime_sentence)
            self._add(create, signature, fn, hints, {**options, "description": description})
            return fn

        return register

    def reads(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler gets a copy of the state; nothing it does to it is saved."""

        def register(fn: F) -> F:
            bind = _Binder(fn, kind)

            async def read(**kwargs: Any) -> Any:
                principal, handle_id = kwargs.pop(_PRINCIPAL), kwargs[kind.id_param]
                handle = await self.manager.get(principal, kind, handle_id)
                return await _call(fn, bind(kwargs, handle))

            hints = {"readOnlyHint": True, "openWorldHint": False}
            self._add(read, _signature(fn, kind, with_id=True), fn, hints, options, kind)
            return fn

        return register

    def edits(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler changes the state in place; the change commits atomically.

        It may run more than once if another process wins a race, so it should
        only compute and change the state. A handler that raises, or returns an
        ``is_error`` ``ToolResult``, changes nothing.
        """

        def register(fn: F) -> F:
            bind = _Binder(fn, kind)
            if bind.handle:
                raise ValueError(
                    f"{fn.__name__}: an edits handler takes the state ({kind.model.__name__}), "
                    "not a Handle; use reads or closes for the whole handle"
                )

            async def edit(**kwargs: Any) -> Any:
                principal, handle_id = kwargs.pop(_PRINCIPAL), kwargs[kind.id_param]

                async def apply(state: BaseModel) -> Any:
                    result = await _call(fn, bind(kwargs, state=state))
                    if isinstance(result, ToolResult) and result.is_error:
                        raise _Failed(result)
                    return result

                try:
                    updated = await self.manager.update(principal, kind, handle_id, apply)
                except _Failed as failed:
                    return failed.result
                return updated.result

            hints = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
            self._add(edit, _signature(fn, kind, with_id=True), fn, hints, options, kind)
            return fn

        return register

    def closes(
        self, kind: HandleKind[Any], *, reason: str = "closed", **options: Any
    ) -> Callable[[F], F]:
        """The handler sees the final state; after it returns, the handle is closed.

        The close only happens if the state is still the one the handler saw; a
        handler that raises, or returns ``InputRequired`` or an ``is_error``
        ``ToolResult``, leaves the handle open.
        """

        def register(fn: F) -> F:
            bind = _Binder(fn, kind)

            async def close(**kwargs: Any) -> Any:
                principal, handle_id = kwargs.pop(_PRINCIPAL), kwargs[kind.id_param]
                handle = await self.manager.get(principal, kind, handle_id)
                result = await _call(fn, bind(kwargs, handle))
                if not _leaves_open(result):
                    await self.manager.close(
                        principal, kind, handle_id, reason=reason, version=handle.version
                    )
                return result

            hints = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False}
            self._add(close, _signature(fn, kind, with_id=True), fn, hints, options, kind)
            return fn

        return register

    def lists(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler gets the caller's live handles (a ``list[Handle]`` parameter)."""

        def register(fn: F) -> F:
            listed = [n for n, p in _params(fn).items() if _is_handle_list(p.annotation)]

            async def list_handles(**kwargs: Any) -> Any:
                handles = await self.manager.list(kwargs.pop(_PRINCIPAL), kind)
                return await _call(fn, {**kwargs, **dict.fromkeys(listed, handles)})

            hints = {"readOnlyHint": True, "openWorldHint": False}
            signature = _signature(fn, kind, with_id=False, skip=set(listed))
            self._add(list_handles, signature, fn, hints, options)
            return fn

        return register

    def _add(
        self,
        wrapper: Callable[..., Any],
        signature: inspect.Signature,
        fn: ToolFunction,
        hints: dict[str, bool],
        options: dict[str, Any],
        takes_id: HandleKind[Any] | None = None,
    ) -> None:
        wrapper.__signature__ = signature  # type: ignore[attr-defined]
        wrapper.__doc__ = fn.__doc__
        annotations = {**hints, **options.pop("annotations", {})}
        options.setdefault("name", fn.__name__)
        self.server.add_tool(Tool.from_function(wrapper, annotations=annotations, **options))
        if takes_id is not None and takes_id.header is not None:
            self.server.screen_header(takes_id.header, _Screen(self.manager, takes_id))


@dataclass(frozen=True, slots=True)
class _Screen:
    """Refuses an id in ``Mcp-Param-<header>`` that cannot be the caller's: one HMAC.

    A value with no registered kind's prefix is not an id at all (a mistake, not a
    forgery): it goes on to the tool, which says what a valid id looks like. The
    conformance suite requires that such literal values pass the header stage.
    """

    manager: HandleManager
    kind: HandleKind[Any]

    def __call__(self, principal: Principal, value: str) -> str | None:
        head = value.partition("_")[0]
        if not any(kind.prefix == head for kind in self.manager.kinds):
            return None
        try:
            self.manager.check(principal, self.kind, value)
        except HandleError as exc:
            return str(exc)
        return None


class _Failed(Exception):
    """Carries an ``is_error`` result out of an update, so that nothing is written."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__("the handler returned an error result")
        self.result = result


def _leaves_open(result: Any) -> bool:
    """Whether a close handler's result says not to close: it asks for input or failed."""
    return isinstance(result, InputRequired) or (isinstance(result, ToolResult) and result.is_error)


async def _call(fn: ToolFunction, kwargs: dict[str, Any]) -> Any:
    result = fn(**kwargs)
    if type(result) is CoroutineType or inspect.isawaitable(result):
        return await result
    return result


def _params(fn: ToolFunction) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn, eval_str=True).parameters)


class _Binder:
    """Which handler parameters take the state, the handle, or a tool argument."""

    def __init__(self, fn: ToolFunction, kind: HandleKind[Any]) -> None:
        params = _params(fn)
        self.state = [n for n, p in params.items() if p.annotation is kind.model]
        self.handle = [n for n, p in params.items() if _is_handle(p.annotation)]
        self.arguments = [n for n in params if n not in self.state and n not in self.handle]

    def __call__(
        self,
        kwargs: dict[str, Any],
        handle: Handle[Any] | None = None,
        state: BaseModel | None = None,
    ) -> dict[str, Any]:
        bound = {name: kwargs[name] for name in self.arguments if name in kwargs}
        if self.state:
            if state is None and handle is not None:
                state = handle.state.model_copy(deep=True)
            bound.update(dict.fromkeys(self.state, state))
        bound.update(dict.fromkeys(self.handle, handle))
        return bound


def _is_handle(annotation: Any) -> bool:
    return annotation is Handle or typing.get_origin(annotation) is Handle


def _is_handle_list(annotation: Any) -> bool:
    args: tuple[Any, ...] = getattr(annotation, "__args__", ())
    return typing.get_origin(annotation) is list and len(args) == 1 and _is_handle(args[0])


def _signature(
    fn: ToolFunction,
    kind: HandleKind[Any],
    *,
    with_id: bool,
    returns: Any = inspect.Signature.empty,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
) -> inspect.Signature:
    """The tool's signature: the id parameter first, then the handler's own arguments."""
    signature = inspect.signature(fn, eval_str=True)
    params = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in signature.parameters.values()
        if p.annotation is not kind.model
        and not _is_handle(p.annotation)
        and p.name not in skip
        and p.name != kind.id_param
    ]
    if with_id:
        params.insert(0, _id_parameter(kind))
    params.append(
        inspect.Parameter(_PRINCIPAL, inspect.Parameter.KEYWORD_ONLY, annotation=Principal)
    )
    return_annotation = (
        signature.return_annotation if returns is inspect.Signature.empty else returns
    )
    return inspect.Signature(params, return_annotation=return_annotation)


def _id_parameter(kind: HandleKind[Any]) -> inspect.Parameter:
    description = (
        f"The {kind.label} id, exactly as {kind.create_tool} returned it "
        f"(starts with {kind.prefix}_). {kind.lifetime_sentence}"
    )
    extra: dict[str, Any] | None = None if kind.header is None else {X_MCP_HEADER: kind.header}
    field = Field(description=description, max_length=_MAX_ID_CHARS, json_schema_extra=extra)
    annotation = Annotated[str, field]
    return inspect.Parameter(kind.id_param, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)


def _created_model(kind: HandleKind[Any]) -> type[BaseModel]:
    fields: dict[str, Any] = {
        kind.id_param: (str, Field(description=f"The new {kind.label}'s id.")),
        "expires_at": (str, Field(description="When it expires unless used (ISO 8601, UTC).")),
    }
    return create_model(f"{kind.model.__name__}Created", **fields)


def _summary(fn: ToolFunction, options: dict[str, Any]) -> str:
    return str(options.get("description") or split_docstring(inspect.getdoc(fn) or "")[0])


def _join(description: str, sentence: str) -> str:
    return f"{description.rstrip()}\n\n{sentence}" if description else sentence
