"""``Context``: what a tool may know about the request it serves, and what it may send back.

Declare a parameter annotated ``Context`` (or ``Principal``) and the server
passes it in; such parameters are never part of the tool's input schema.

Besides progress, a tool can log to the client (``ctx.info(...)``: sent only at
the levels the client asked for), ask the user (``ctx.elicit``), ask the
client's model (``ctx.sample``) and ask for a yes or no (``ctx.confirm``, which
works in both protocol eras). See ``docs/context.md``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from pydantic_core import to_jsonable_python

from ..errors import cut
from ..principal import Principal
from ._validation import shorten
from .client_requests import (
    ClientCancelled,
    ClientRequestError,
    ClientTimeout,
    ClientUnsupported,
    NotSupported,
    PendingRequests,
)
from .content import InputRequired
from .jsonrpc import METHOD_NOT_FOUND, dumps
from .protocol import LOG_LEVELS, Era, RequestMeta

__all__ = [
    "DEFAULT_MAX_LOG_BYTES",
    "Confirmation",
    "Context",
    "Elicited",
    "InputNeeded",
    "LogLevel",
    "Peer",
    "Sampled",
]

Notify = Callable[[dict[str, Any]], Awaitable[None]]
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
Confirmation = Literal["accept", "decline", "cancel", "unavailable"]
"""``unavailable``: the client cannot be asked; fall back (a ``confirm`` argument)."""
DEFAULT_MAX_LOG_BYTES = 16 * 1024
"""The largest ``data`` of one log message sent to a client, in bytes of JSON."""
ELICIT_SECONDS = 300.0
SAMPLE_SECONDS = 120.0
_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}
logger = logging.getLogger("handles.server.context")


class InputNeeded(Exception):
    """Raised by ``Context.confirm`` on 2026-07-28: the tool's result is ``result``.

    ``Tool.call`` turns it into the input-required result, so a tool that calls
    ``confirm`` before its side effects needs no second return path.
    """

    def __init__(self, result: InputRequired) -> None:
        super().__init__("input required")
        self.result = result


@dataclass(frozen=True, slots=True)
class Peer:
    """A 2025-era client as its ``initialize`` declared it, and how to send it requests.

    ``pending`` is ``None`` where the transport cannot carry a request to the
    client (an HTTP client that does not accept SSE).
    """

    capabilities: dict[str, Any]
    pending: PendingRequests | None


@dataclass(frozen=True, slots=True)
class Elicited:
    """The user's answer to ``elicit``: ``accept`` (with ``content``), ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Sampled:
    """The client's model's answer to ``sample``: the whole result, and its text if any."""

    result: dict[str, Any]

    @property
    def text(self) -> str | None:
        content = self.result.get("content")
        if isinstance(content, list):  # sampling with tools may answer several blocks
            content = next((c for c in content if isinstance(c, dict)), None)
        if isinstance(content, dict) and content.get("type") == "text":
            text = content.get("text")
            return text if isinstance(text, str) else None
        return None

    @property
    def model(self) -> str | None:
        model = self.result.get("model")
        return model if isinstance(model, str) else None


@dataclass(slots=True)
class Context:
    """The caller, the request's protocol details, and ways to talk back to the client."""

    principal: Principal
    tool_name: str
    request_id: str | int
    meta: RequestMeta
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    _notify: Notify | None = None
    log_level: str | None = None
    """The least severe level the client asked for (``None``: send no log messages)."""
    _peer: Peer | None = None
    _max_log_bytes: int = DEFAULT_MAX_LOG_BYTES

    @property
    def era(self) -> Era:
        return self.meta.era

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities this request declared (always ``{}`` in the legacy era).

        A 2025-era client declares its capabilities once, at ``initialize``; see
        ``can_elicit`` and ``can_sample``.
        """
        return self.meta.client_capabilities

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress``, if the request asked for progress."""
        token = self.meta.progress_token
        if token is None or self._notify is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    # Logging -----------------------------------------------------------------------

    def logs(self, level: LogLevel) -> bool:
        """Whether a message at ``level`` would be sent (to skip building costly ones)."""
        threshold = self.log_level
        return (
            threshold is not None
            and self._notify is not None
            and _RANK.get(level, -1) >= _RANK[threshold]
        )

    async def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the client asked for ``level`` or below.

        ``data`` is a message or any JSON-able value (a dict of fields). It is sent
        as a result would be: pydantic models as JSON, exceptions as their type
        only (their text may hold secrets; it goes to the server's log), and data
        over ``Server(max_log_bytes=...)`` replaced by a note that says so.
        """
        if level not in _RANK:
            raise ValueError(f"unknown log level {level!r}; use one of {LOG_LEVELS}")
        if not self.logs(level):
            return
        assert self._notify is not None
        params: dict[str, Any] = {"level": level, "data": self._loggable(data)}
        if logger is not None:
            params["logger"] = logger[:128]
        await self._notify({"jsonrpc": "2.0", "method": "notifications/message", "params": params})

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("info", data, logger=logger)

    async def notice(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("notice", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("error", data, logger=logger)

    async def critical(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("critical", data, logger=logger)

    async def alert(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("alert", data, logger=logger)

    async def emergency(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("emergency", data, logger=logger)

    def _loggable(self, data: Any) -> Any:
        if isinstance(data, BaseException):
            name = self.tool_name
            logger.warning("tool %s logged an exception to the client", name, exc_info=data)
            return f"{type(data).__name__} (the details are in the server's log)"
        if isinstance(data, Principal):
            return f"principal {data.digest[:12]}"
        try:
            value = to_jsonable_python(data, fallback=_unloggable)
        except Exception:  # a model's serializer that fails
            value = _unloggable(data)
        size = len(dumps(value))
        if size <= self._max_log_bytes:
            return value
        return (
            f"{_shown(value, 200)} [log data of {size} bytes cut: this server sends at most "
            f"{self._max_log_bytes}]"
        )

    # Asking the client (2025 era) --------------------------------------------------

    @property
    def can_elicit(self) -> bool:
        """Whether ``elicit`` can reach the user: a 2025-era client that declared form
        elicitation, over a transport that can carry the request."""
        caps = self._peer_capability("elicitation")
        return caps is not None and ("form" in caps or "url" not in caps)

    @property
    def can_sample(self) -> bool:
        """Whether ``sample`` can reach the client's model (as ``can_elicit``)."""
        return self._peer_capability("sampling") is not None

    async def elicit(
        self, message: str, schema: dict[str, Any], *, seconds: float = ELICIT_SECONDS
    ) -> Elicited:
        """Ask the user to fill in a form (``elicitation/create``) and wait for the answer.

        ``schema`` is the form's ``requestedSchema``: an object of flat properties
        (strings, numbers, booleans, enums; ``default`` values prefill the form).

        Raises:
            NotSupported: the client cannot be asked (see ``can_elicit``); in the
                2026-07-28 era, ask with an ``InputRequired`` result or ``confirm``.
            ClientTimeout: no answer within ``seconds``.
            ClientCancelled: the client cancelled the request.
            ClientUnsupported: the client answered with an error.
        """
        if not self.can_elicit:
            raise NotSupported(self._unsupported("elicitation", "ask the user"))
        params: dict[str, Any] = {"message": message, "requestedSchema": schema}
        if self.meta.version >= "2025-11-25":
            params = {"mode": "form", **params}
        result = await self._ask("elicitation/create", params, seconds)
        action = result.get("action")
        if action == "accept":
            content = result.get("content")
            return Elicited("accept", content if isinstance(content, dict) else {})
        if action in ("decline", "cancel"):
            return Elicited(action)
        raise ClientRequestError(
            f"The client answered elicitation/create with action {shorten(action)}, "
            "not accept, decline or cancel."
        )

    async def sample(
        self,
        messages: str | list[dict[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        seconds: float = SAMPLE_SECONDS,
        **params: Any,
    ) -> Sampled:
        """Ask the client's model (``sampling/createMessage``) and wait for its answer.

        ``messages`` is a prompt (one user message) or MCP sampling messages;
        other ``params`` (``modelPreferences``, ``stopSequences``...) are sent as they are.

        Raises:
            NotSupported, ClientTimeout, ClientCancelled, ClientUnsupported: as ``elicit``.
        """
        if not self.can_sample:
            raise NotSupported(self._unsupported("sampling", "ask the client's model"))
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        request: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **params}
        if system_prompt is not None:
            request["systemPrompt"] = system_prompt
        if temperature is not None:
            request["temperature"] = temperature
        return Sampled(await self._ask("sampling/createMessage", request, seconds))

    async def confirm(
        self,
        message: str,
        *,
        state: str | None = None,
        label: str = "Confirm",
        key: str = "confirm",
        seconds: float = ELICIT_SECONDS,
    ) -> Confirmation:
        """Ask the user a yes-or-no question, in whichever way this client allows.

        On 2026-07-28 with elicitation declared, the first call ends the tool with
        an input-required result (``InputNeeded``, raised before any side effect of
        yours) and the client calls again with the answer; ``state`` is sent as
        ``requestState`` and an answer counts only if it comes back unchanged (name
        what the user saw, e.g. a version, so a changed order is asked about again).
        On 2025-era clients that declared elicitation it sends ``elicitation/create``
        and waits. Otherwise it returns ``"unavailable"``: fall back, e.g. to a
        ``confirm`` argument the model sets after asking the user itself.

        Returns ``"accept"`` only if the user ticked the box; ``"decline"`` for a
        refusal or an unticked box, ``"cancel"`` for a dismissed dialog or no answer
        within ``seconds``.
        """
        schema = {
            "type": "object",
            "properties": {key: {"type": "boolean", "title": label}},
            "required": [key],
        }
        if self.era == "modern":
            if "elicitation" not in self.client_capabilities:
                return "unavailable"
            answer = (self.input_responses or {}).get(key)
            decided = _confirmation(answer, key)
            if answer is not None and (decided != "accept" or self.request_state == state):
                return decided
            params = {"mode": "form", "message": message, "requestedSchema": schema}
            request = {"method": "elicitation/create", "params": params}
            raise InputNeeded(InputRequired({key: request}, state))
        if not self.can_elicit:
            return "unavailable"
        try:
            elicited = await self.elicit(message, schema, seconds=seconds)
        except (ClientTimeout, ClientCancelled):
            return "cancel"
        except ClientUnsupported:
            return "unavailable"
        return _confirmation({"action": elicited.action, "content": elicited.content}, key)

    def _peer_capability(self, name: str) -> dict[str, Any] | None:
        peer = self._peer
        if self.era != "legacy" or peer is None or peer.pending is None or self._notify is None:
            return None
        caps = peer.capabilities.get(name)
        return caps if isinstance(caps, dict) else None

    def _unsupported(self, capability: str, what: str) -> str:
        if self.era == "modern":
            return (
                f"This tool tried to {what} during the call, which protocol 2026-07-28 does not "
                "allow (it asks through an input-required result instead)."
            )
        peer = self._peer
        declared = peer.capabilities.get(capability) if peer is not None else None
        if not isinstance(declared, dict):
            return (
                f"This tool needs to {what}, but the client did not declare the {capability} "
                "capability."
            )
        if peer is not None and peer.pending is not None and self._notify is not None:
            return (  # elicitation declared for URL mode only
                f"This tool needs to {what} with a form, but the client declared only URL-mode "
                "elicitation."
            )
        return (
            f"This tool needs to {what}, but this connection cannot carry a request to the "
            "client (over HTTP the client must accept text/event-stream)."
        )

    async def _ask(self, method: str, params: dict[str, Any], seconds: float) -> dict[str, Any]:
        peer, notify = self._peer, self._notify
        assert peer is not None and peer.pending is not None and notify is not None
        pending = peer.pending
        id, waiter = pending.open(self.principal)
        try:
            await notify({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            with anyio.move_on_after(seconds):
                await waiter.done.wait()
        except BaseException:  # the tool call was cancelled: tell the client (best effort)
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                await _cancel_sent(notify, id, "the tool call was cancelled")
            raise
        finally:
            pending.close(id)
        if waiter.cancelled:
            raise ClientCancelled(f"The client cancelled the {method} request.")
        answer = waiter.answer
        if answer is None:
            await _cancel_sent(notify, id, "timed out")
            raise ClientTimeout(
                f"The client did not answer the {method} request within {seconds:g} s, "
                "so it was cancelled. Try again when the user is there."
            )
        error = answer.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            word = "does not support" if code == METHOD_NOT_FOUND else "refused"
            raise ClientUnsupported(
                f"The client {word} the {method} request: {_shown(text, 200)}",
                code if isinstance(code, int) else None,
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            raise ClientRequestError(f"The client's answer to {method} is not an object.")
        return result


def _confirmation(answer: Any, key: str) -> Confirmation:
    if not isinstance(answer, dict):
        return "decline"
    action = answer.get("action")
    if action == "cancel":
        return "cancel"
    content = answer.get("content")
    if action == "accept" and isinstance(content, dict) and content.get(key) is True:
        return "accept"
    return "decline"


async def _cancel_sent(notify: Notify, id: str, reason: str) -> None:
    params = {"requestId": id, "reason": reason}
    try:
        await notify({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
    except Exception:  # the stream is gone: nothing more to tell
        logger.debug("could not tell the client that request %s ended", id)


def _shown(value: Any, limit: int) -> str:
    """``value`` as JSON, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, limit)


def _unloggable(value: Any) -> str:
    return f"<{type(value).__name__}>"
