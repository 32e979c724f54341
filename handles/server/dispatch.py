"""``Server``: the tool registry and the MCP method dispatch, for both protocol eras.

Transport-agnostic: ``handle()`` takes one parsed message and returns the
response (or ``None`` for a notification). Transports decide the era when they
can (HTTP, from its header) and otherwise it is read from each message (stdio).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from .._charges import PENDING, Pending
from ..principal import Principal
from ._listing import ToolPages
from ._outputs import error_result
from ._validation import shorten
from .client_requests import PendingRequests
from .context import DEFAULT_MAX_LOG_BYTES, Context, Notify, Peer
from .jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Message,
    ProtocolError,
    dumps,
    error_response,
    result_response,
)
from .protocol import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    LOG_LEVELS,
    SERVER_INFO,
    SUPPORTED_VERSIONS,
    Era,
    RequestMeta,
    is_modern,
    legacy_meta,
    read_modern_meta,
)
from .ratelimit import RateCharge, RateLimiter
from .tools import Tool, ToolError, ToolFunction

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "Connection", "HeaderScreen", "Server"]

HeaderScreen = Callable[[Principal, str], str | None]
"""Looks at one ``Mcp-Param-*`` header value before the body is read: ``None`` lets the
request through, a text refuses it (what was wrong and what to do next)."""

logger = logging.getLogger("handles.server")
CacheScope = Literal["public", "private"]
_PLAIN = re.compile(r"[A-Za-z0-9_./-]+")
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024
"""The largest ``tools/call`` response sent; bigger results are withheld (see ``encode``)."""


@dataclass(slots=True)
class Connection:
    """What a transport knows about its peer: who it is and which era it speaks.

    ``era`` is fixed by the transport when it can tell (HTTP routes by header);
    ``None`` means each message says (stdio). The rest is what the 2025-era
    handshake set up: the capabilities ``initialize`` declared, the level
    ``logging/setLevel`` asked for, and ``pending``, where the transport takes the
    answers to requests sent to the client (``None``: it cannot carry them).
    """

    principal: Principal
    era: Era | None = None
    legacy_version: str = field(default=LATEST_LEGACY_VERSION)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None
    pending: PendingRequests | None = None
    #: Set by a transport that refused the call from its headers alone (an
    #: ``Mcp-Param-*`` screen): ``tools/call`` answers with this ``isError`` text
    #: and neither validates the arguments nor runs the tool.
    refusal: str | None = None


class Server:
    """An MCP server that serves tools; add them with ``@server.tool()``.

    Args:
        name: The server's name, in ``serverInfo``.
        version: The server's version, in ``serverInfo``; set your own (the default is
            the mcp-handles version).
        instructions: Guidance for the model, sent at discovery and initialization.
        page_size: Tools per ``tools/list`` page.
        list_ttl_ms: How long clients may cache ``tools/list`` (modern era).
        cache_scope: ``"private"`` if the tool list varies by caller.
        rate_limit: Counts each ``tools/call`` and refuses calls over its limits,
            before the tool runs (for a handle tool on the limiter's store, in the
            tool's first store operation: see ``handles.server.ratelimit``);
            ``None`` (the default) costs nothing.
        max_result_bytes: The largest ``tools/call`` response sent, in bytes of
            JSON; a bigger result is replaced by an error saying so. ``None``
            sends any size.
        max_log_bytes: The largest ``data`` of a log message sent to a client
            (``Context.log``); bigger data is cut, with a note saying so.
    """

    def __init__(
        self,
        name: str,
        version: str | None = None,
        *,
        instructions: str | None = None,
        page_size: int = 100,
        list_ttl_ms: int = 60_000,
        cache_scope: CacheScope = "public",
        rate_limit: RateLimiter | None = None,
        max_result_bytes: int | None = DEFAULT_MAX_RESULT_BYTES,
        max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    ) -> None:
        self.info: dict[str, Any] = {"name": name, "version": version or _package_version()}
        self.rate_limit = rate_limit
        self.max_result_bytes = max_result_bytes
        self.max_log_bytes = max_log_bytes
        self.instructions = instructions
        self._tools: dict[str, Tool] = {}
        self._pages = ToolPages(page_size)
        self._cache: dict[str, Any] = {"ttlMs": list_ttl_ms, "cacheScope": cache_scope}
        self._result_meta = {SERVER_INFO: self.info}
        self._screens: dict[str, HeaderScreen] = {}

    @property
    def tools(self) -> list[Tool]:
        """The registered tools, in registration order (the ``tools/list`` order)."""
        return list(self._tools.values())

    def get_tool(self, name: str) -> Tool | None:
        """The tool called ``name``, if one is registered."""
        return self._tools.get(name)

    @property
    def header_screens(self) -> dict[str, HeaderScreen]:
        """The ``Mcp-Param-*`` screens by lower-case header name (``mcp-param-basket-id``)."""
        return self._screens

    def screen_header(self, name: str, screen: HeaderScreen) -> None:
        """Have HTTP check header ``Mcp-Param-<name>`` with ``screen`` before reading a body.

        The screen sees the caller and the decoded value and must be cheap (no I/O):
        it runs on every request that carries the header. Registering the same
        screen again is a no-op; a different one for the same name is an error.
        """
        key = f"mcp-param-{name.lower()}"
        known = self._screens.get(key)
        if known is not None and known != screen:
            raise ValueError(f"header Mcp-Param-{name} already has another screen")
        self._screens[key] = screen

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

    def encode(self, message: Message) -> bytes:
        """A message as compact JSON, with an oversized tool result withheld.

        Transports serialize what they send through this, so the cap costs one
        length check: a ``tools/call`` result whose response exceeds
        ``max_result_bytes`` is replaced by an ``isError`` result that says so
        (cutting the JSON would break it, and cutting ``structuredContent``
        would break its schema).
        """
        data = dumps(message)
        limit = self.max_result_bytes
        if limit is None or len(data) <= limit:
            return data
        result = message.get("result")
        if not isinstance(result, dict) or not _is_tool_result(result):
            return data
        logger.warning("tools/call result withheld: %d bytes, over %d", len(data), limit)
        return dumps(result_response(message["id"], _withheld(result, len(data), limit)))

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
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                levels = ", ".join(LOG_LEVELS)
                text = f'logging/setLevel "level" must be one of {levels}'
                raise ProtocolError(INVALID_PARAMS, text)
            connection.log_level = level
            return {}
        raise _not_found(method, "legacy")

    def _initialize(self, params: dict[str, Any], connection: Connection) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        connection.legacy_version = version
        capabilities = params.get("capabilities")
        connection.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": self.info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def _discover(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": {"tools": {}, "logging": {}},
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
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {_shown(name)}")
        if connection.refusal is not None:
            result = {"content": [{"type": "text", "text": connection.refusal}], "isError": True}
            _log_call(name, connection.principal, result, 0.0)
            return result
        pending: Pending | None = None
        if self.rate_limit is not None:
            charge = self.rate_limit.charge(connection.principal, name)
            pending = self._deferred(tool, charge)
            if pending is None:
                refused = await self._refusal(connection.principal, name, charge)
                if refused is not None:
                    return refused
        legacy = meta.era == "legacy"
        context = Context(
            connection.principal,
            name,
            id,
            meta,
            params.get("inputResponses"),
            params.get("requestState"),
            notify,
            connection.log_level if legacy else meta.log_level,
            Peer(connection.client_capabilities, connection.pending) if legacy else None,
            self.max_log_bytes,
        )
        started = time.perf_counter()
        if pending is None:
            result = await tool.call(arguments, context)
        else:
            token = PENDING.set(pending)
            try:
                result = await tool.call(arguments, context)
            except ProtocolError:  # a JSON-RPC error the tool chose: counted all the same
                if pending.spent:
                    raise
                refused = await self._refusal(connection.principal, name, charge)
                if refused is None:
                    raise
                return refused
            finally:
                PENDING.reset(token)
            if pending.refused is not None:
                _log_refusal(name, connection.principal, pending.refused)
                return result
            if not pending.spent:  # it never reached the store: count it now, on its own
                refused = await self._refusal(connection.principal, name, charge)
                if refused is not None:
                    return refused
        if logger.isEnabledFor(logging.INFO):
            _log_call(name, connection.principal, result, time.perf_counter() - started)
        return result

    def _deferred(self, tool: Tool, charge: RateCharge) -> Pending | None:
        """The charge for the tool's first store operation to count, if it can.

        Only a tool whose first effect is an operation on the limiter's own store
        (``Tool.store_first``) defers; the others pay before they run.
        """
        assert self.rate_limit is not None
        store = self.rate_limit.store
        if tool.store_first is not store or not charge.counters:
            return None
        return Pending(store, charge.owner, charge.counters, charge.refusal)

    async def _refusal(
        self, principal: Principal, name: str, charge: RateCharge
    ) -> dict[str, Any] | None:
        """Count ``charge``: the ``isError`` result for a call over a limit, else ``None``."""
        assert self.rate_limit is not None
        try:
            await self.rate_limit.pay(charge)
        except ToolError as exc:
            _log_refusal(name, principal, exc)
            return error_result(str(exc))
        return None


def _is_tool_result(result: dict[str, Any]) -> bool:
    return "content" in result or result.get("resultType") == "input_required"


def _withheld(result: dict[str, Any], size: int, limit: int) -> dict[str, Any]:
    """What replaces a tool result too big to send: an error the model can act on."""
    text = (
        f"The tool's result was {size} bytes, more than this server sends ({limit} bytes), "
        "so it was withheld. Call the tool again asking for less (a narrower query, a "
        "smaller limit, fewer items)."
    )
    withheld = error_result(text)
    if "resultType" in result:
        withheld["resultType"] = "complete"
    if "_meta" in result:
        withheld["_meta"] = result["_meta"]
    return withheld


def _shown(name: str) -> str:
    """A tool or method name for an error: plain ones cut to 128, others quoted and cut."""
    return name[:128] if _PLAIN.fullmatch(name) else shorten(name)


def _legacy_call_result(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("resultType") != "input_required":
        return result
    text = (
        "This tool needs to ask the user for input, which needs protocol 2026-07-28; "
        "call it again with the confirmation in its arguments instead."
    )
    return error_result(text)


def _not_found(method: str, era: Era) -> ProtocolError:
    data = None
    if method == "initialize" and era == "modern":
        data = {"supported": list(SUPPORTED_VERSIONS)}
    return ProtocolError(METHOD_NOT_FOUND, f"Method not found: {_shown(method)}", data)


def _log_refusal(name: str, principal: Principal, refusal: BaseException) -> None:
    logger.info(
        "tools/call %s principal=%s outcome=refused (%s)",
        name,
        principal.digest[:12],
        type(refusal).__name__,
    )


def _log_call(name: str, principal: Principal, result: dict[str, Any], seconds: float) -> None:
    outcome = "error" if result.get("isError") else result.get("resultType", "ok")
    logger.info(
        "tools/call %s principal=%s outcome=%s duration_ms=%.2f",
        name,
        principal.digest[:12],
        outcome,
        seconds * 1000,
    )


def _package_version() -> str:
    from .._version import __version__

    return __version__
