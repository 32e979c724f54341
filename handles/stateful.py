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

The semantics live in ``handles.verbs``, shared with the FastMCP and MCP SDK
adapters (``handles.integrations``); this module joins them to our core. An error's
hints name only tools the server has.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import verbs
from .errors import HandleError, ToolError
from .kinds import HandleKind
from .live import Live
from .manager import HandleManager
from .principal import Principal
from .server.content import InputRequired, ToolResult
from .server.dispatch import Server
from .server.tools import Tool, ToolFunction

__all__ = ["HandleTools"]

F = TypeVar("F", bound=ToolFunction)
_PRINCIPAL = "_handles_principal"


def _failed(result: Any) -> bool:
    return isinstance(result, ToolResult) and result.is_error


def _leaves_open(result: Any) -> bool:
    """Whether a close handler's result says not to close: it asks for input or failed."""
    return isinstance(result, InputRequired) or _failed(result)


class HandleTools(verbs.Front):
    """Registers tools that create, read, edit, close and list handles."""

    def __init__(
        self, server: Server, manager: HandleManager, *, live: Iterable[Live[Any, Any]] = ()
    ) -> None:
        self.server = server
        self.manager = manager
        self.live: dict[str, Live[Any, Any]] = {resource.kind.name: resource for resource in live}

    _failed = staticmethod(_failed)
    _leaves_open = staticmethod(_leaves_open)

    def _register(
        self, build: Callable[..., verbs.Verb], kind: HandleKind[Any], options: dict[str, Any]
    ) -> Callable[[F], F]:
        def register(fn: F) -> F:
            live = self.live.get(kind.name)
            extra = {} if live is None or build is verbs.lists else {"live": live}
            self._add(build(self.manager, kind, fn, **options, **extra))
            return fn

        return register

    def _add(self, verb: verbs.Verb) -> None:
        run, tool_names = verb.run, self._tool_names

        async def call(**kwargs: Any) -> Any:
            principal = kwargs.pop(_PRINCIPAL)
            try:
                return await run(principal, kwargs)
            except HandleError as error:
                raise ToolError(error.text(tool_names())) from error

        principal = inspect.Parameter(
            _PRINCIPAL, inspect.Parameter.KEYWORD_ONLY, annotation=Principal
        )
        params = [*verb.signature.parameters.values(), principal]
        call.__signature__ = verb.signature.replace(parameters=params)  # type: ignore[attr-defined]
        call.__doc__ = verb.handler.__doc__
        tool = Tool.from_function(
            call,
            name=verb.name,
            description=verb.description,
            annotations=verb.annotations,
            **verb.options,
        )
        if verb.verb in ("reads", "edits", "closes"):  # the first effect: manager.get/update
            tool.store_first = self.manager.store
        self.server.add_tool(tool)
        takes_id = verb.verb in ("reads", "edits", "closes")
        if takes_id and verb.kind.header is not None:
            self.server.screen_header(verb.kind.header, _Screen(self.manager, verb.kind))

    def _tool_names(self) -> Callable[[str], str | None]:
        """Names the server has now: a hint never names a tool that is not there."""
        names = {tool.name for tool in self.server.tools}
        return lambda name: name if name in names else None


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
