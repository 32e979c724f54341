"""Handles in a FastMCP 4.x server: the verbs of ``handles.HandleTools`` on ``FastMCP``.

::

    mcp = FastMCP("shop")
    tools = HandleTools(mcp, HandleManager(MemoryStore(), [basket]))

    @tools.edits(basket)
    async def add_item(state: Basket, sku: str, quantity: int = 1) -> BasketView: ...

The caller is the principal of FastMCP's access token (``get_access_token()``), or
``Principal.from_environment()`` without one (stdio). Every failure the model caused
reaches it as our text, also under ``mask_error_details=True``, as a FastMCP
``ToolError`` logged at INFO: no ERROR line, no traceback. Hints name a tool only if
the serving server has it, under the name the client sees (mount namespaces
included). ``HandleProvider`` contributes ``create_<kind>``, ``list_<kinds>`` and
``close_<kind>`` for servers that need no handler code for them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError as FastMCPToolError
from fastmcp.server.dependencies import get_access_token, get_context
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool
from mcp_types import ToolAnnotations

from .. import verbs
from ..kinds import HandleKind
from ..manager import HandleManager
from ..principal import Principal
from ._common import ToolNames, local_principal, tool_function

__all__ = ["HandleProvider", "HandleTools", "current_principal", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
_MODEL_MISTAKE = logging.INFO


def current_principal() -> Principal:
    """The caller: its access token's principal, else ``Principal.from_environment()``."""
    token = get_access_token()
    return local_principal() if token is None else Principal.from_access_token(token)


def _refuse(text: str) -> NoReturn:
    raise FastMCPToolError(text, log_level=_MODEL_MISTAKE)


def _failed(result: Any) -> bool:
    return bool(getattr(result, "is_error", False))


async def _tool_names(local: str) -> ToolNames:
    """The names the client sees, found from the server answering this call.

    A mounted server's tools carry the parent's namespace: the name the client called
    (``shop_add_item``) less this tool's own (``add_item``) is the prefix, so a hint
    names ``shop_create_basket`` if this server has ``create_basket``, and no tool it
    lacks. (A ``tool_names=`` rename at mount time is not followed: the hint then
    names the tool as this server does.)
    """
    context = get_context()
    here = {tool.name for tool in await context.fastmcp.list_tools()}
    called = _called_name(context)
    prefix = called[: -len(local)] if called and called.endswith(local) else ""
    return lambda name: f"{prefix}{name}" if name in here else None


def _called_name(context: Any) -> str | None:
    """The tool name of this ``tools/call`` as the client sent it."""
    request = context.request_context
    params = getattr(getattr(request, "_srctx", None), "params", None) or {}
    name = params.get("name") if isinstance(params, Mapping) else None
    return name if isinstance(name, str) else None


class HandleTools(verbs.Front):
    """Registers FastMCP tools that create, read, edit, close and list handles.

    Args:
        server: The FastMCP server (or the one you will mount).
        manager: The handle manager.
        principal: Who is calling; defaults to ``current_principal``.
    """

    def __init__(
        self,
        server: FastMCP[Any],
        manager: HandleManager,
        *,
        principal: Callable[[], Principal] = current_principal,
    ) -> None:
        self.server = server
        self.manager = manager
        self._principal = principal

    _failed = staticmethod(_failed)
    _leaves_open = staticmethod(_failed)

    def lifecycle(self, kind: HandleKind[Any]) -> None:
        """Add ``create_<kind>``, ``list_<kinds>`` and ``close_<kind>`` (see ``HandleProvider``)."""
        for verb in verbs.lifecycle(self.manager, kind, leaves_open=_failed):
            self.server.add_tool(tool(verb, self._principal))

    def _register(
        self, build: Callable[..., verbs.Verb], kind: HandleKind[Any], options: dict[str, Any]
    ) -> Callable[[F], F]:
        def register(fn: F) -> F:
            self.server.add_tool(tool(build(self.manager, kind, fn, **options), self._principal))
            return fn

        return register


def tool(verb: verbs.Verb, principal: Callable[[], Principal] = current_principal) -> Tool:
    """The FastMCP ``Tool`` of a verb, for ``server.add_tool`` or a provider."""
    fn = tool_function(verb, principal, _refuse, _tool_names)
    return Tool.from_function(
        fn,
        name=verb.name,
        description=verb.description,
        annotations=ToolAnnotations(**verb.annotations),
        **verb.options,
    )


class HandleProvider(Provider):
    """Contributes ``create_<kind>``, ``list_<kinds>`` and ``close_<kind>`` for a kind.

    In the spirit of FastMCP's ``SessionProvider``, for tools that only need the
    handle to exist: ``mcp.add_provider(HandleProvider(manager, basket))``; your own
    tools use ``HandleTools(mcp, manager).reads/edits`` on the same kind. The tools
    are named as the kind says (``kind.create_tool``, ``kind.list_tool``,
    ``kind.close_tool`` or ``close_<kind>``).
    """

    def __init__(
        self,
        manager: HandleManager,
        kind: HandleKind[Any],
        *,
        principal: Callable[[], Principal] = current_principal,
    ) -> None:
        super().__init__()
        verbs_ = verbs.lifecycle(manager, kind, leaves_open=_failed)
        self._tools = [tool(verb, principal) for verb in verbs_]

    async def _list_tools(self) -> Sequence[Tool]:
        return self._tools
