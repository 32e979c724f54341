"""``Server``: the tool registry and the MCP method dispatch, for both protocol eras.

Transport-agnostic: ``handle()`` takes one parsed message and returns the
response (or ``None`` for a notification). Transports decide the era when they
can (HTTP, from its header) and otherwise it is read from each message (stdio).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from .context import Context, Notify
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Message,
    ProtocolError,
    error_response,
    result_response,
)
from .listing import ToolPages
from .principal import Principal
from .protocol import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    SERVER_INFO,
    SUPPORTED_VERSIONS,
    Era,
    RequestMeta,
    is_modern,
    legacy_meta,
    read_modern_meta,
)
from .tools import Tool, ToolFunction

__all__ = ["Connection", "Server"]

logger = logging.getLogger("handles.server")
CacheScope = Literal["public", "private"]


@dataclass(slots=True)
class Connection:
    """What a transport knows about its peer: who it is and which era it speaks.

    ``era`` is fixed by the transport when it can tell (HTTP routes by header);
    ``None`` means each message says (stdio).
    """

    principal: Principal
    era: Era | None = None
    legacy_version: str = field(default=LATEST_LEGACY_VERSION)


class Server:
    """An MCP server that serves tools; add them with ``@server.tool()``."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        instructions: str | None = None,
        page_size: int = 100,
        list_ttl_ms: int = 60_000,
        cache_scope: CacheScope = "public",
    ) -> None:
        self.info: dict[str, Any] = {"name": name, "version": version}
        self.instructions = instructions
        self._tools: dict[str, Tool] = {}
        self._pages = ToolPages(page_size)
        self._cache: dict[str, Any] = {"ttlMs": list_ttl_ms, "cacheScope": cache_scope}
        self._result_meta = {SERVER_INFO: self.info}

    @property
    def tools(self) -> list[Tool]:
        """The registered tools, in registration order (the ``tools/list`` order)."""
        return list(self._tools.values())

    def add_tool(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._pages.rebuild([t.definition for t in self._tools.values()])
        return tool

    @overload
    def tool(self, fn: ToolFunction, /) -> ToolFunction: ...
    @overload
    def tool(
        self, fn: None = None, /, **options: Any
    ) -> Callable[[ToolFunction], ToolFunction]: ...

    def tool(self, fn: ToolFunction | None = None, /, **options: Any) -> Any:
        """Register a function as a tool: ``@server.tool`` or ``@server.tool(name=...)``.

        Options are those of ``Tool.from_function``: ``name``, ``title``,
        ``description``, ``annotations``, ``icons``, ``meta``, ``in_thread``.
        """

        def register(fn: ToolFunction) -> ToolFunction:
            self.add_tool(Tool.from_function(fn, **options))
            return fn

        return register if fn is None else register(fn)

    async def handle(
        self, message: Message, connection: Connection, notify: Notify | None = None
    ) -> Message | None:
        """Answer one parsed message (see ``jsonrpc.parse``); ``None`` for notifications."""
        if "id" not in message:
            return None
        id = message["id"]
        try:
            return result_response(id, await self._dispatch(message, connection, notify))
        except ProtocolError as exc:
            return error_response(id, exc)
        except Exception:
            logger.exception("internal error in %s", message["method"])
            return error_response(id, ProtocolError(INTERNAL_ERROR, "Internal error"))

    async def _dispatch(
        self, message: Message, connection: Connection, notify: Notify | None
    ) -> dict[str, Any]:
        method, params = message["method"], message["params"]
        era = connection.era or ("modern" if is_modern(params) else "legacy")
        if era == "legacy":
            return await self._legacy(method, params, message["id"], connection, notify)
        meta = read_modern_meta(params)
        if method == "tools/call":
            result = await self._call_tool(params, meta, message["id"], connection, notify)
        elif method == "tools/list":
            result = self._pages.page(params.get("cursor"), modern=self._cache)
        elif method == "server/discover":
            result = self._discover()
        else:
            raise _not_found(method, era)
        result.setdefault("resultType", "complete")
        result["_meta"] = self._result_meta
        return result

    async def _legacy(
        self,
        method: str,
        params: dict[str, Any],
        id: str | int,
        connection: Connection,
        notify: Notify | None,
    ) -> dict[str, Any]:
        if method == "tools/call":
            meta = legacy_meta(params, connection.legacy_version)
            result = await self._call_tool(params, meta, id, connection, notify)
            return _legacy_call_result(result)
        if method == "tools/list":
            return self._pages.page(params.get("cursor"), modern=None)
        if method == "initialize":
            return self._initialize(params, connection)
        if method == "ping":
            return {}
        raise _not_found(method, "legacy")

    def _initialize(self, params: dict[str, Any], connection: Connection) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        connection.legacy_version = version
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": self.info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def _discover(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": {"tools": {}},
            **self._cache,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    async def _call_tool(
        self,
        params: dict[str, Any],
        meta: RequestMeta,
        id: str | int,
        connection: Connection,
        notify: Notify | None,
    ) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise ProtocolError(INVALID_PARAMS, 'tools/call needs "name", a string')
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise ProtocolError(INVALID_PARAMS, 'tools/call "arguments" must be an object')
        tool = self._tools.get(name)
        if tool is None:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name[:128]}")
        context = Context(
            connection.principal,
            name,
            id,
            meta,
            params.get("inputResponses"),
            params.get("requestState"),
            notify,
        )
        started = time.perf_counter()
        result = await tool.call(arguments, context)
        if logger.isEnabledFor(logging.INFO):
            _log_call(name, connection.principal, result, time.perf_counter() - started)
        return result


def _legacy_call_result(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("resultType") != "input_required":
        return result
    text = (
        "This tool needs to ask the user for input, which needs protocol 2026-07-28; "
        "call it again with the confirmation in its arguments instead."
    )
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _not_found(method: str, era: Era) -> ProtocolError:
    data = None
    if method == "initialize" and era == "modern":
        data = {"supported": list(SUPPORTED_VERSIONS)}
    return ProtocolError(METHOD_NOT_FOUND, f"Method not found: {method[:128]}", data)


def _log_call(name: str, principal: Principal, result: dict[str, Any], seconds: float) -> None:
    outcome = "error" if result.get("isError") else result.get("resultType", "ok")
    logger.info(
        "tools/call %s principal=%s outcome=%s duration_ms=%.2f",
        name,
        principal.digest[:12],
        outcome,
        seconds * 1000,
    )
