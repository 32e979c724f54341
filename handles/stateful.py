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
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import anyio
from pydantic import BaseModel, Field, create_model

from ._awaitables import maybe_await
from .errors import HandleError
from .handle import Handle
from .kinds import HandleKind
from .live import Live
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

    def __init__(
        self, server: Server, manager: HandleManager, *, live: Iterable[Live[Any, Any]] = ()
    ) -> None:
        self.server = server
        self.manager = manager
        self.live: dict[str, Live[Any, Any]] = {resource.kind.name: resource for resource in live}

    def creates(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler returns the initial state (or ``None`` for ``kind.model()``).

        The tool returns ``{"<kind>_id": ..., "expires_at": ...}`` and its description
        ends with the kind's lifetime sentence.
        """
        created = _created_model(kind)

        def register(fn: F) -> F:
            live = self.live.get(kind.name)

            async def create(**kwargs: Any) -> BaseModel:
                principal = kwargs.pop(_PRINCIPAL)
                state = await _call(fn, kwargs)
                if live is None:
                    handle = await self.manager.create(principal, kind, state)
                else:
                    handle = await _create_live(self.manager, live, principal, kind, state)
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
            live = self.live.get(kind.name)
            bind = _Binder(fn, kind, live)

            async def read(**kwargs: Any) -> Any:
                principal, handle_id = kwargs.pop(_PRINCIPAL), kwargs[kind.id_param]
                handle = await self.manager.get(principal, kind, handle_id)
                if live is None:
                    return await _call(fn, bind(kwargs, handle))
                resource = await live.acquire(principal.digest, handle)
                if live.unsaved(principal.digest, handle_id):
                    handle = await _first_save(self.manager, live, principal, handle, resource)
                return await _call(fn, bind(kwargs, handle, resource=resource))

            hints = {"readOnlyHint": True, "openWorldHint": False}
            signature = _signature(fn, kind, with_id=True, live=live)
            self._add(read, signature, fn, hints, options, kind)
            return fn

        return register

    def edits(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler changes the state in place; the change commits atomically.

        It may run more than once if another process wins a race, so it should
        only compute and change the state. A handler that raises, or returns an
        ``is_error`` ``ToolResult``, changes nothing.
        """

        def register(fn: F) -> F:
            live = self.live.get(kind.name)
            bind = _Binder(fn, kind, live)
            if bind.handle:
                raise ValueError(
                    f"{fn.__name__}: an edits handler takes the state ({kind.model.__name__}), "
                    "not a Handle; use reads or closes for the whole handle"
                )

            async def edit(**kwargs: Any) -> Any:
                principal, handle_id = kwargs.pop(_PRINCIPAL), kwargs[kind.id_param]
                if live is not None:
                    return await self._edit_live(live, bind, fn, principal, kind, kwargs)

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
            signature = _signature(fn, kind, with_id=True, live=live)
            self._add(edit, signature, fn, hints, options, kind)
            return fn

        return register

    def closes(
        self,
        kind: HandleKind[Any],
        *,
        reason: str = "closed",
        on_commit: Callable[[Any], Awaitable[Any]] | None = None,
        **options: Any,
    ) -> Callable[[F], F]:
        """The handler sees the final state; after it returns, the handle is closed.

        The close only happens if the state is still the one the handler saw; a
        handler that raises, or returns ``InputRequired`` or an ``is_error``
        ``ToolResult``, leaves the handle open. Its result is stored with the
        close: of concurrent calls (on any replica) one close commits, and the
        others return that call's result. The handler may run in each of them,
        so like an ``edits`` handler it should only compute its result; an effect
        that must happen at most once per handle (placing the order) goes in
        ``on_commit``, awaited with the result only by the call whose close
        committed (see ``HandleManager.close``).
        """

        def register(fn: F) -> F:
            live = self.live.get(kind.name)
            bind = _Binder(fn, kind, live)

            async def close(**kwargs: Any) -> Any:
                principal, handle_id = kwargs.pop(_PRINCIPAL), kwargs[kind.id_param]
                handle = await self.manager.get(principal, kind, handle_id)
                resource = None
                if live is not None and bind.resource:
                    resource = await live.acquire(principal.digest, handle)
                result = await _call(fn, bind(kwargs, handle, resource=resource))
                if not _leaves_open(result):
                    version = handle.version
                    result = await self.manager.close(
                        principal,
                        kind,
                        handle_id,
                        reason=reason,
                        version=version,
                        outcome=result,
                        on_commit=on_commit,
                    )
                    if live is not None:
                        await live.closed(principal.digest, handle_id)
                return result

            hints = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False}
            signature = _signature(fn, kind, with_id=True, live=live)
            self._add(close, signature, fn, hints, options, kind)
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

    async def _edit_live(
        self,
        live: Live[Any, Any],
        bind: _Binder,
        fn: ToolFunction,
        principal: Principal,
        kind: HandleKind[Any],
        kwargs: dict[str, Any],
    ) -> Any:
        """An edit with a live object: the handler changes both, ``save`` copies it back.

        If the handler fails and the object no longer matches the stored state (as
        ``save`` reads it), it is dropped; the next call reopens it from what was stored.
        """
        handle_id, owner = kwargs[kind.id_param], principal.digest
        handle = await self.manager.get(principal, kind, handle_id)
        resource = await live.acquire(owner, handle)

        async def apply(state: BaseModel) -> Any:
            result = await _call(fn, bind(kwargs, state=state, resource=resource))
            if isinstance(result, ToolResult) and result.is_error:
                raise _Failed(result)
            await live.save(resource, state)
            return result

        try:
            updated = await self.manager.update(principal, kind, handle_id, apply)
        except _Failed as failed:
            await live.failed(owner, handle)
            return failed.result
        except Exception:
            await live.failed(owner, handle)
            raise
        except BaseException:  # cancelled mid-change: nothing can be told
            with anyio.CancelScope(shield=True):
                await live.forget(owner, handle_id)
            raise
        live.saw(owner, updated.handle)
        return updated.result

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
    prefixes: frozenset[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        prefixes = frozenset(kind.prefix for kind in self.manager.kinds)
        object.__setattr__(self, "prefixes", prefixes)

    def __call__(self, principal: Principal, value: str) -> str | None:
        if value.partition("_")[0] not in self.prefixes:
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


async def _create_live(
    manager: HandleManager,
    live: Live[Any, Any],
    principal: Principal,
    kind: HandleKind[Any],
    state: BaseModel | None,
) -> Handle[Any]:
    """Open the object first (``save`` fills the state), then create the handle holding it."""
    state = kind.model() if state is None else state
    if not live.open_on_create:
        return await manager.create(principal, kind, state)  # opened on first use
    resource = await live.create(state)
    try:
        handle = await manager.create(principal, kind, state)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await live.release(resource, "failed")
        raise
    live.adopt(principal.digest, handle, resource)
    return handle


async def _first_save(
    manager: HandleManager,
    live: Live[Any, Any],
    principal: Principal,
    handle: Handle[Any],
    resource: Any,
) -> Handle[Any]:
    """Store what ``save`` copies from an object just opened for the first time."""

    async def apply(state: BaseModel) -> None:
        await live.save(resource, state)

    updated = await manager.update(principal, handle.kind, handle.id, apply)
    live.saw(principal.digest, updated.handle)
    return updated.handle


def _leaves_open(result: Any) -> bool:
    """Whether a close handler's result says not to close: it asks for input or failed."""
    return isinstance(result, InputRequired) or (isinstance(result, ToolResult) and result.is_error)


async def _call(fn: ToolFunction, kwargs: dict[str, Any]) -> Any:
    return await maybe_await(fn(**kwargs))


def _params(fn: ToolFunction) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn, eval_str=True).parameters)


class _Binder:
    """Which handler parameters take the state, the handle, the live object, or an argument."""

    def __init__(
        self, fn: ToolFunction, kind: HandleKind[Any], live: Live[Any, Any] | None = None
    ) -> None:
        params = _params(fn)
        self.state = [n for n, p in params.items() if p.annotation is kind.model]
        self.handle = [n for n, p in params.items() if _is_handle(p.annotation)]
        resource = None if live is None else live.resource
        self.resource = [n for n, p in params.items() if resource and p.annotation is resource]
        taken = {*self.state, *self.handle, *self.resource}
        self.arguments = [n for n in params if n not in taken]

    def __call__(
        self,
        kwargs: dict[str, Any],
        handle: Handle[Any] | None = None,
        state: BaseModel | None = None,
        resource: Any = None,
    ) -> dict[str, Any]:
        bound = {name: kwargs[name] for name in self.arguments if name in kwargs}
        if self.resource:
            bound.update(dict.fromkeys(self.resource, resource))
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
    live: Live[Any, Any] | None = None,
) -> inspect.Signature:
    """The tool's signature: the id parameter first, then the handler's own arguments."""
    signature = inspect.signature(fn, eval_str=True)
    resource = None if live is None else live.resource
    params = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in signature.parameters.values()
        if p.annotation is not kind.model
        and (resource is None or p.annotation is not resource)
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
    info = Field(description=description, max_length=_MAX_ID_CHARS, json_schema_extra=extra)
    annotation = Annotated[str, info]
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
