"""What a handle tool does, whatever serves it: the one implementation of the verbs.

``creates``, ``reads``, ``edits``, ``closes`` and ``lists`` each turn a handler into a
``Verb``: the tool's signature (the id parameter first, then the handler's own
arguments), its description, its annotations, and ``run(principal, arguments)``,
which checks the handle through the manager and calls the handler with the state:

- ``creates``: the handler returns the initial state; the tool returns
  ``kind.created_model`` and its description ends with the lifetime sentence;
- ``reads``: the handler gets a copy of the state; nothing it does is saved;
- ``edits``: the handler changes the state in place and the change commits
  atomically; it may run more than once, and one that raises or returns a failed
  result (the front end's ``failed``) writes nothing;
- ``closes``: the handler sees the final state, then the handle is closed, but only
  at the version the handler saw; a result the front end's ``leaves_open`` accepts
  (an error, a request for input) leaves it open;
- ``lists``: the handler gets the caller's live handles (a ``list[Handle]``).

A front end (``handles.stateful`` for our core, ``handles.integrations.*`` for
FastMCP and the MCP SDK) only says how to register the tool, who the caller is and
how an error reaches the model. This module imports nothing of any MCP server.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from ._awaitables import maybe_await
from ._docstrings import split_docstring
from .handle import Handle
from .kinds import HandleKind
from .live import Live
from .manager import HandleManager
from .principal import Principal

__all__ = [
    "ANNOTATIONS",
    "Closed",
    "HandleSummary",
    "Verb",
    "closes",
    "creates",
    "edits",
    "lifecycle",
    "lists",
    "reads",
]

Handler = Callable[..., Any]
AnyLive = Live[Any, Any]
Run = Callable[[Principal, dict[str, Any]], Awaitable[Any]]
Predicate = Callable[[Any], bool]


def _preset(**hints: bool) -> Mapping[str, bool]:
    return MappingProxyType({**hints, "openWorldHint": False})


#: The MCP tool annotations of each verb; a tool's own ``annotations`` override them.
ANNOTATIONS: Mapping[str, Mapping[str, bool]] = MappingProxyType(
    {
        "creates": _preset(readOnlyHint=False, destructiveHint=False),
        "reads": _preset(readOnlyHint=True),
        "edits": _preset(readOnlyHint=False, destructiveHint=False),
        "closes": _preset(readOnlyHint=False, destructiveHint=True),
        "lists": _preset(readOnlyHint=True),
    }
)


@dataclass(frozen=True, slots=True)
class Verb:
    """A handle tool, ready for a front end to register.

    Attributes:
        name: The tool's name (``name=`` option, else the handler's name).
        kind: The kind of handle it works on.
        verb: ``"creates"``, ``"reads"``, ``"edits"``, ``"closes"`` or ``"lists"``.
        run: ``await run(principal, arguments)`` does the call; the arguments are the
            validated tool arguments by parameter name. It raises ``HandleError``
            (or whatever the handler raises).
        signature: The tool's parameters and return annotation, without the caller.
        description: The tool's description.
        annotations: MCP tool annotations: the verb's preset and the tool's own.
        options: The remaining registration options (``title``, ``meta``, ...).
        handler: The handler it wraps.
    """

    name: str
    kind: HandleKind[Any]
    verb: str
    run: Run
    signature: inspect.Signature
    description: str
    annotations: dict[str, Any]
    options: dict[str, Any]
    handler: Handler

    @property
    def tool_annotations(self) -> dict[str, Any]:
        """The signature as ``__annotations__``, for frameworks that read type hints."""
        hints = {p.name: p.annotation for p in self.signature.parameters.values()}
        if self.signature.return_annotation is not inspect.Signature.empty:
            hints["return"] = self.signature.return_annotation
        return hints


def creates(
    manager: HandleManager,
    kind: HandleKind[Any],
    fn: Handler,
    *,
    live: AnyLive | None = None,
    **options: Any,
) -> Verb:
    """The handler returns the initial state (or ``None`` for ``kind.model()``).

    With ``live``, the object is opened first (its ``save`` fills the state), unless
    it opens on first use.
    """
    created = kind.created_model
    id_param = kind.id_param

    async def run(principal: Principal, arguments: dict[str, Any]) -> BaseModel:
        state = await _call(fn, arguments)
        if live is None:
            handle = await manager.create(principal, kind, state)
        else:
            handle = await _create_live(manager, live, principal, kind, state)
        return created(**{id_param: handle.id, "expires_at": handle.expires_at_iso})

    description = _join(_summary(fn, options), kind.lifetime_sentence)
    signature = _signature(fn, kind, with_id=False, returns=created)
    return _verb("creates", kind, fn, run, signature, {**options, "description": description})


def reads(
    manager: HandleManager,
    kind: HandleKind[Any],
    fn: Handler,
    *,
    live: AnyLive | None = None,
    **options: Any,
) -> Verb:
    """The handler gets a copy of the state; nothing it does to it is saved.

    With ``live``, a parameter annotated with its resource type gets the object.
    """
    bind = _Binder(fn, kind, live)
    id_param = kind.id_param

    async def run(principal: Principal, arguments: dict[str, Any]) -> Any:
        handle = await manager.get(principal, kind, arguments[id_param])
        if live is None:
            return await _call(fn, bind(arguments, handle))
        resource = await live.acquire(principal.digest, handle)
        if live.unsaved(principal.digest, handle.id):
            handle = await _first_save(manager, live, principal, handle, resource)
        return await _call(fn, bind(arguments, handle, resource=resource))

    signature = _signature(fn, kind, with_id=True, live=live)
    return _verb("reads", kind, fn, run, signature, options)


def edits(
    manager: HandleManager,
    kind: HandleKind[Any],
    fn: Handler,
    *,
    failed: Predicate,
    live: AnyLive | None = None,
    **options: Any,
) -> Verb:
    """The handler changes the state in place; the change commits atomically.

    It may run more than once if another process wins a race, so it should only
    compute and change the state. A handler that raises, or returns a result for
    which ``failed`` is true, changes nothing; that result is the tool's result.
    With ``live``, the handler changes the object too and ``save`` copies it back.
    """
    bind = _Binder(fn, kind, live)
    if bind.handle:
        raise ValueError(
            f"{fn.__name__}: an edits handler takes the state ({kind.model.__name__}), "
            "not a Handle; use reads or closes for the whole handle"
        )
    id_param = kind.id_param

    async def run(principal: Principal, arguments: dict[str, Any]) -> Any:
        if live is not None:
            return await _edit_live(manager, live, bind, fn, failed, principal, kind, arguments)

        async def apply(state: BaseModel) -> Any:
            result = await _call(fn, bind(arguments, state=state))
            if failed(result):
                raise _Failed(result)
            return result

        try:
            updated = await manager.update(principal, kind, arguments[id_param], apply)
        except _Failed as failure:
            return failure.result
        return updated.result

    signature = _signature(fn, kind, with_id=True, live=live)
    return _verb("edits", kind, fn, run, signature, options)


def closes(
    manager: HandleManager,
    kind: HandleKind[Any],
    fn: Handler,
    *,
    leaves_open: Predicate,
    reason: str = "closed",
    on_commit: Callable[[Any], Awaitable[Any]] | None = None,
    live: AnyLive | None = None,
    **options: Any,
) -> Verb:
    """The handler sees the final state; after it returns, the handle is closed.

    The close only happens if the state is still the one the handler saw; a
    handler that raises, or returns a result for which ``leaves_open`` is true,
    leaves the handle open. Its result is stored with the close: of concurrent
    calls (on any replica) one close commits, and the others return that call's
    result. The handler may run in each of them, so like an ``edits`` handler it
    should only compute; an effect that must happen at most once per handle goes in
    ``on_commit``, awaited with the result only by the call whose close committed
    (see ``HandleManager.close``). With ``live``, the object is released after.
    """
    bind = _Binder(fn, kind, live)
    id_param = kind.id_param

    async def run(principal: Principal, arguments: dict[str, Any]) -> Any:
        handle_id = arguments[id_param]
        handle = await manager.get(principal, kind, handle_id)
        resource = None
        if live is not None and bind.resource:
            resource = await live.acquire(principal.digest, handle)
        result = await _call(fn, bind(arguments, handle, resource=resource))
        if leaves_open(result):
            return result
        result = await manager.close(
            principal,
            kind,
            handle_id,
            reason=reason,
            version=handle.version,
            outcome=result,
            on_commit=on_commit,
        )
        if live is not None:
            await live.closed(principal.digest, handle_id)
        return result

    signature = _signature(fn, kind, with_id=True, live=live)
    return _verb("closes", kind, fn, run, signature, options)


def lists(manager: HandleManager, kind: HandleKind[Any], fn: Handler, **options: Any) -> Verb:
    """The handler gets the caller's live handles (a ``list[Handle]`` parameter)."""
    listed = [n for n, p in _params(fn).items() if _is_handle_list(p.annotation)]

    async def run(principal: Principal, arguments: dict[str, Any]) -> Any:
        handles = await manager.list(principal, kind)
        return await _call(fn, {**arguments, **dict.fromkeys(listed, handles)})

    signature = _signature(fn, kind, with_id=False, skip=set(listed))
    return _verb("lists", kind, fn, run, signature, options)


class HandleSummary(BaseModel):
    """One live handle, as the ``lifecycle`` list tool shows it."""

    id: str = Field(description="The handle's id.")
    expires_at: str = Field(description="When it expires unless used (ISO 8601, UTC).")


class Closed(BaseModel):
    """What the ``lifecycle`` close tool answers."""

    closed: str = Field(description="The id of the handle just closed.")


def lifecycle(
    manager: HandleManager, kind: HandleKind[Any], *, leaves_open: Predicate
) -> list[Verb]:
    """``create_<kind>``, ``list_<kinds>`` and ``close_<kind>``, with no handler code.

    They are named as the kind says (``create_tool``, ``list_tool``, and
    ``close_tool`` or ``close_<kind>``); the created state is ``kind.model()``.
    """
    label, plural = kind.label, kind.plural

    def create() -> None:
        return None

    def list_handles(handles: list[Handle[Any]]) -> list[HandleSummary]:
        return [HandleSummary(id=h.id, expires_at=h.expires_at_iso) for h in handles]

    def close(handle: Handle[Any]) -> Closed:
        return Closed(closed=handle.id)

    return [
        creates(manager, kind, create, name=kind.create_tool, description=f"Start a new {label}."),
        lists(
            manager,
            kind,
            list_handles,
            name=kind.list_tool,
            description=f"Your open {plural}, oldest first.",
        ),
        closes(
            manager,
            kind,
            close,
            leaves_open=leaves_open,
            name=kind.close_tool or f"close_{kind.name}",
            description=f"Close a {label} you no longer need; it cannot be used afterwards.",
        ),
    ]


def _verb(
    verb: str,
    kind: HandleKind[Any],
    fn: Handler,
    run: Run,
    signature: inspect.Signature,
    options: dict[str, Any],
) -> Verb:
    options = dict(options)
    name = options.pop("name", None) or fn.__name__
    description = options.pop("description", None) or _summary(fn, {})
    annotations = {**ANNOTATIONS[verb], **(options.pop("annotations", None) or {})}
    return Verb(name, kind, verb, run, signature, description, annotations, options, fn)


async def _edit_live(
    manager: HandleManager,
    live: AnyLive,
    bind: _Binder,
    fn: Handler,
    failed: Predicate,
    principal: Principal,
    kind: HandleKind[Any],
    arguments: dict[str, Any],
) -> Any:
    """An edit with a live object: the handler changes both, ``save`` copies it back.

    If the handler fails and the object no longer matches the stored state (as
    ``save`` reads it), it is dropped; the next call reopens it from what was stored.
    """
    handle_id, owner = arguments[kind.id_param], principal.digest
    handle = await manager.get(principal, kind, handle_id)
    resource = await live.acquire(owner, handle)

    async def apply(state: BaseModel) -> Any:
        result = await _call(fn, bind(arguments, state=state, resource=resource))
        if failed(result):
            raise _Failed(result)
        await live.save(resource, state)
        return result

    try:
        updated = await manager.update(principal, kind, handle_id, apply)
    except _Failed as failure:
        await live.failed(owner, handle)
        return failure.result
    except Exception:
        await live.failed(owner, handle)
        raise
    except BaseException:  # cancelled mid-change: nothing can be told
        with anyio.CancelScope(shield=True):
            await live.forget(owner, handle_id)
        raise
    live.saw(owner, updated.handle)
    return updated.result


async def _create_live(
    manager: HandleManager,
    live: AnyLive,
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
    live: AnyLive,
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


class _Failed(Exception):
    """Carries a failed result out of an update, so that nothing is written."""

    def __init__(self, result: Any) -> None:
        super().__init__("the handler returned an error result")
        self.result = result


async def _call(fn: Handler, kwargs: dict[str, Any]) -> Any:
    return await maybe_await(fn(**kwargs))


def _params(fn: Handler) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn, eval_str=True).parameters)


class _Binder:
    """Which handler parameters take the state, the handle, or a tool argument."""

    def __init__(self, fn: Handler, kind: HandleKind[Any], live: AnyLive | None = None) -> None:
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
    fn: Handler,
    kind: HandleKind[Any],
    *,
    with_id: bool,
    returns: Any = inspect.Signature.empty,
    skip: frozenset[str] | set[str] = frozenset(),
    live: AnyLive | None = None,
) -> inspect.Signature:
    """The tool's signature: the id parameter first, then the handler's own arguments.

    Each argument the handler's ``Args:`` section describes carries that text in its
    annotation, so every framework publishes the same schema.
    """
    signature = inspect.signature(fn, eval_str=True)
    docs = split_docstring(inspect.getdoc(fn) or "")[1]
    resource = None if live is None else live.resource
    params = [
        p.replace(
            kind=inspect.Parameter.KEYWORD_ONLY,
            annotation=_described(p.annotation, p.default, docs.get(p.name)),
        )
        for p in signature.parameters.values()
        if p.annotation is not kind.model
        and (resource is None or p.annotation is not resource)
        and not _is_handle(p.annotation)
        and p.name not in skip
        and p.name != kind.id_param
    ]
    if with_id:
        params.insert(
            0,
            inspect.Parameter(
                kind.id_param, inspect.Parameter.KEYWORD_ONLY, annotation=kind.id_annotation
            ),
        )
    return_annotation = (
        signature.return_annotation if returns is inspect.Signature.empty else returns
    )
    return inspect.Signature(params, return_annotation=return_annotation)


def _described(annotation: Any, default: Any, doc: str | None) -> Any:
    """``Annotated[annotation, Field(description=doc)]`` unless already described."""
    if doc is None or annotation is inspect.Parameter.empty or isinstance(default, FieldInfo):
        return annotation
    metadata = getattr(annotation, "__metadata__", ())
    if any(isinstance(item, FieldInfo) and item.description for item in metadata):
        return annotation
    return Annotated[annotation, Field(description=doc)]


def _summary(fn: Handler, options: dict[str, Any]) -> str:
    return str(options.get("description") or split_docstring(inspect.getdoc(fn) or "")[0])


def _join(description: str, sentence: str) -> str:
    return f"{description.rstrip()}\n\n{sentence}" if description else sentence


F = typing.TypeVar("F", bound=Callable[..., Any])


class Front:
    """The verbs as decorators: what every front end's ``HandleTools`` offers.

    A front end subclasses it, sets ``manager``, says how a verb becomes a tool of its
    server (``_register``) and which handler results write nothing: ``_failed`` for an
    edit (an error result) and ``_leaves_open`` for a close (an error result, or a
    request for the user's input).
    """

    manager: HandleManager

    def creates(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler returns the initial state (or ``None`` for ``kind.model()``).

        The tool returns ``{"<kind>_id": ..., "expires_at": ...}`` and its description
        ends with the kind's lifetime sentence.
        """
        return self._register(creates, kind, options)

    def reads(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler gets a copy of the state; nothing it does to it is saved."""
        return self._register(reads, kind, options)

    def edits(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler changes the state in place; the change commits atomically.

        It may run more than once if another process wins a race, so it should only
        compute and change the state. A handler that raises, or returns the
        framework's error result (``is_error``), changes nothing.
        """
        return self._register(edits, kind, {**options, "failed": self._failed})

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
        handler that raises, returns the framework's error result, or asks for the
        user's input leaves the handle open. Its result is stored with the close: of
        concurrent calls (on any replica) one close commits, and the others return
        that call's result. The handler may run in each of them, so like an ``edits``
        handler it should only compute its result; an effect that must happen at most
        once per handle (placing the order) goes in ``on_commit``, awaited with the
        result only by the call whose close committed (see ``HandleManager.close``).
        """
        extra = {"reason": reason, "on_commit": on_commit, "leaves_open": self._leaves_open}
        return self._register(closes, kind, {**options, **extra})

    def lists(self, kind: HandleKind[Any], **options: Any) -> Callable[[F], F]:
        """The handler gets the caller's live handles (a ``list[Handle]`` parameter)."""
        return self._register(lists, kind, options)

    def _register(
        self, build: Callable[..., Verb], kind: HandleKind[Any], options: dict[str, Any]
    ) -> Callable[[F], F]:
        raise NotImplementedError

    @staticmethod
    def _failed(result: Any) -> bool:
        return False

    @staticmethod
    def _leaves_open(result: Any) -> bool:
        return False
