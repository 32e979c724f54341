"""Handles in an official MCP SDK server: the verbs of ``handles.HandleTools`` on
``mcp.server.mcpserver.MCPServer`` (mcp 2.x).

::

    mcp = MCPServer("shop")
    tools = HandleTools(mcp, HandleManager(MemoryStore(), [basket]))

    @tools.edits(basket)
    async def add_item(state: Basket, sku: str, quantity: int = 1) -> BasketView: ...

The caller is the principal of the SDK's access token (``get_access_token()``), or
``Principal.from_environment()`` without one (stdio). A failure the model caused is
returned as an ``isError`` ``CallToolResult`` holding our text alone: not raised, so
the SDK adds no "Error executing tool x:" prefix and logs nothing. Hints name only
tools the server has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations

from .. import verbs
from ..kinds import HandleKind
from ..manager import HandleManager
from ..principal import Principal
from ._common import ToolNames, local_principal, tool_function

__all__ = ["HandleTools", "current_principal"]

F = TypeVar("F", bound=Callable[..., Any])


def current_principal() -> Principal:
    """The caller: its access token's principal, else ``Principal.from_environment()``."""
    token = get_access_token()
    return local_principal() if token is None else Principal.from_access_token(token)


def _refuse(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _failed(result: Any) -> bool:
    return isinstance(result, CallToolResult) and bool(result.is_error)


def _leaves_open(result: Any) -> bool:
    return isinstance(result, InputRequiredResult) or _failed(result)


class HandleTools(verbs.Front):
    """Registers ``MCPServer`` tools that create, read, edit, close and list handles.

    Args:
        server: The SDK server.
        manager: The handle manager.
        principal: Who is calling; defaults to ``current_principal``.
    """

    def __init__(
        self,
        server: MCPServer[Any],
        manager: HandleManager,
        *,
        principal: Callable[[], Principal] = current_principal,
    ) -> None:
        self.server = server
        self.manager = manager
        self._principal = principal

    _failed = staticmethod(_failed)
    _leaves_open = staticmethod(_leaves_open)

    def lifecycle(self, kind: HandleKind[Any]) -> None:
        """Add ``create_<kind>``, ``list_<kinds>`` and ``close_<kind>``, with no handler code."""
        for verb in verbs.lifecycle(self.manager, kind, leaves_open=_leaves_open):
            self._add(verb)

    def _register(
        self, build: Callable[..., verbs.Verb], kind: HandleKind[Any], options: dict[str, Any]
    ) -> Callable[[F], F]:
        def register(fn: F) -> F:
            self._add(build(self.manager, kind, fn, **options))
            return fn

        return register

    def _add(self, verb: verbs.Verb) -> None:
        self.server.add_tool(
            tool_function(verb, self._principal, _refuse, self._tool_names),
            name=verb.name,
            description=verb.description,
            annotations=ToolAnnotations(**verb.annotations),
            **verb.options,
        )

    async def _tool_names(self, local: str) -> ToolNames:
        """The server's tools now: a hint never names one it lacks."""
        here = {tool.name for tool in await self.server.list_tools()}
        return lambda name: name if name in here else None
