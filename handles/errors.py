"""Every error a caller can see, on its two planes.

MCP reports a failure in one of two ways, and which one decides who reads it:

    protocol errors: a JSON-RPC ``error`` object, read by the client library
        handles.server.jsonrpc.ProtocolError     .code .message .data
            -32700 parse error        -32600 invalid request     -32601 method not found
            -32602 invalid params     -32603 internal error      -32020 header mismatch
            -32021 missing client capability                     -32022 unsupported version

    tool execution errors: a result with ``isError: true``, read by the model
        ToolError                    raise from a tool; its text is what the model sees
        ├── RateLimited              (handles.server.ratelimit) over a call rate limit
        └── HandleError              a handle could not be used; .code .message .hint
            ├── UnknownHandle        "unknown": never issued, mistyped, or another caller's
            ├── WrongKind            "wrong_kind": one of the caller's handles of another kind
            ├── HandleExpired        "expired": its lifetime ran out (.expired_at)
            ├── HandleClosed         "closed": closed or checked out (.reason, .closed_at)
            ├── QuotaExceeded        "quota_exceeded": too many live handles (.limit)
            ├── OutcomeUnknown       "outcome_unknown": no answer came; may have been applied
            └── TransientHandleError retryable: the same call may succeed shortly
                ├── StorageUnavailable  "store_unavailable": wraps stores.StoreUnavailable
                │   └── StorageFull     "store_full": wraps stores.StoreFull
                ├── HandleConflict      "conflict": concurrent changes won every retry
                └── LiveCapReached      (handles.live) "live_cap_reached": too many open here

A retryable error is only raised when nothing was applied; a write whose answer
never came and could not be settled is ``OutcomeUnknown``, whose text says so and
names the tool that shows the current state, never "retry".

A tool that lets a ``ToolError`` escape sends the model an ``isError`` result with its
text, never a JSON-RPC error; any other exception becomes an ``isError`` result that
says only that the call failed, so no traceback reaches a client. Each ``HandleError``
has a stable ``code``, a ``message`` saying what happened and a ``hint`` naming the
tool to call next; ``str(error)`` is both.

``UnknownHandle`` reads the same whatever the real reason, so a foreign handle cannot
be told from an invented one. Values the caller sent are echoed quoted and cut to
60 characters.

This module imports nothing of the MCP core, so the handle layer stands alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .kinds import HandleKind, iso_utc

__all__ = [
    "HandleClosed",
    "HandleConflict",
    "HandleError",
    "HandleExpired",
    "OutcomeUnknown",
    "QuotaExceeded",
    "StorageFull",
    "StorageUnavailable",
    "ToolError",
    "TransientHandleError",
    "UnknownHandle",
    "WrongKind",
    "every_tool",
]

ECHO_LIMIT = 60
"""How many characters of a caller's value a message shows."""

AnyKind = HandleKind[Any]


def cut(text: str, limit: int = ECHO_LIMIT) -> str:
    """The first ``limit`` characters of ``text``, and an ellipsis if there were more.

    Every value a caller sent that goes back into a message or a log passes here.
    """
    return text if len(text) <= limit else f"{text[:limit]}…"


def echo(value: str) -> str:
    """Quote a caller's value for a message, cut to 60 characters with an ellipsis."""
    return repr(cut(value))


class ToolError(Exception):
    """Raise from a tool to send the caller ``isError: true`` with this message.

    Say what went wrong and what to do next: the message is shown to the model.
    """


def _article(word: str) -> str:
    return "an" if word[:1] in ("a", "e", "i", "o") else "a"


def _title(kind: AnyKind) -> str:
    return f"{kind.label[0].upper()}{kind.label[1:]}"


#: Maps a tool's declared name to the name a client sees it under, or ``None`` if the
#: server has no such tool. Hints are written through it, so none names a missing tool.
ToolNames = Callable[[str], str | None]


def every_tool(name: str) -> str:
    """The ``ToolNames`` that assumes every named tool exists under its own name."""
    return name


def _either(parts: list[str]) -> str:
    """``"A."``, ``"A, or B."``, ``"A, B, or C."``; an empty hint for no parts."""
    if not parts:
        return ""
    if len(parts) == 1:
        return f"{parts[0]}."
    return f"{', '.join(parts[:-1])}, or {parts[-1]}."


def _start_new(kind: AnyKind, tools: ToolNames) -> str:
    create = tools(kind.create_tool)
    return f"Call {create} to start a new {kind.label}." if create else ""


class HandleError(ToolError):
    """Base class: a handle could not be used; ``str()`` is the text for the model.

    Args:
        message: What happened.
        hint: What to do next, naming the tool to call.
    """

    #: Stable machine-readable code.
    code: ClassVar[str] = "handle_error"
    #: Whether the same call may succeed if retried shortly.
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message, hint)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}" if self.hint else self.message

    def text(self, tools: ToolNames = every_tool) -> str:
        """The text for the model, naming tools as ``tools`` says and leaving out any hint
        whose tool is missing (``tools`` returns ``None``)."""
        hint = self._hint(tools)
        return f"{self.message} {hint}" if hint else self.message

    def _hint(self, tools: ToolNames) -> str:
        return self.hint


class UnknownHandle(HandleError):
    """Never issued to this caller, mistyped, or another caller's: one identical text."""

    code = "unknown"

    def __init__(self, kind: AnyKind, handle_id: str) -> None:
        self.kind = kind
        super().__init__(f"Unknown {kind.label} {echo(handle_id)}.", self._hint(every_tool))

    def _hint(self, tools: ToolNames) -> str:
        kind = self.kind
        create, listing = tools(kind.create_tool), tools(kind.list_tool)
        source = f"as {create} returned it" if create else "as it was given to you"
        parts = [f"Copy the {kind.id_param} exactly {source}"]
        if listing:
            parts.append(f"call {listing} to see your open {kind.plural}")
        if create:
            parts.append(f"call {create} to start a new one")
        return _either(parts)


class WrongKind(HandleError):
    """The caller's own handle of another registered kind, passed where ``kind`` goes."""

    code = "wrong_kind"

    def __init__(self, kind: AnyKind, actual: AnyKind, handle_id: str) -> None:
        self.kind = kind
        super().__init__(
            f"{echo(handle_id)} is {_article(actual.label)} {actual.label} id, "
            f"not {_article(kind.label)} {kind.label} id.",
            self._hint(every_tool),
        )
        self.actual = actual.name

    def _hint(self, tools: ToolNames) -> str:
        kind = self.kind
        create, listing = tools(kind.create_tool), tools(kind.list_tool)
        source = f"as {create} returned it" if create else "as it was given to you"
        parts = [f"Pass a {kind.id_param} exactly {source}"]
        if listing:
            parts.append(f"call {listing} to see your open {kind.plural}")
        return _either(parts)


class HandleExpired(HandleError):
    """The handle's lifetime ran out; ``expired_at`` is ``None`` when not known exactly."""

    code = "expired"

    def __init__(self, kind: AnyKind, handle_id: str, expired_at: float | None) -> None:
        self.kind = kind
        when = "has expired; the exact time is not known"
        if expired_at is not None:
            when = f"expired at {iso_utc(expired_at)}"
        policy = kind.lifetime.describe(kind.plural)
        super().__init__(
            f"{_title(kind)} {echo(handle_id)} {when} ({policy}).", self._hint(every_tool)
        )
        self.expired_at = expired_at

    def _hint(self, tools: ToolNames) -> str:
        return _start_new(self.kind, tools)


class HandleClosed(HandleError):
    """The handle was closed (``reason`` says how, e.g. "checked out") at ``closed_at``."""

    code = "closed"

    def __init__(
        self,
        kind: AnyKind,
        handle_id: str,
        reason: str,
        closed_at: float,
        *,
        outcome: Any = None,
    ) -> None:
        self.kind = kind
        super().__init__(
            f"{_title(kind)} {echo(handle_id)} was {reason} at {iso_utc(closed_at)} "
            "and can no longer be used.",
            self._hint(every_tool),
        )
        self.reason = reason
        self.closed_at = closed_at
        #: What the close returned (JSON), when it stored it; never shown to the model.
        self.outcome = outcome

    def _hint(self, tools: ToolNames) -> str:
        return _start_new(self.kind, tools)


class QuotaExceeded(HandleError):
    """The caller already holds ``limit`` live handles of this kind."""

    code = "quota_exceeded"

    def __init__(self, kind: AnyKind, limit: int) -> None:
        self.kind = kind
        super().__init__(
            f"You already have {limit} open {kind.plural}, the most allowed.",
            self._hint(every_tool),
        )
        self.limit = limit

    def _hint(self, tools: ToolNames) -> str:
        kind = self.kind
        policy = kind.lifetime.describe(kind.plural)
        close = tools(kind.close_tool) if kind.close_tool else None
        listing = tools(kind.list_tool)
        if close:
            lists = f" ({listing} lists them)" if listing else ""
            return (
                f"Call {close} on one you no longer need{lists}, "
                f"or wait for one to expire: {policy}."
            )
        if listing:
            return f"Wait for one to expire ({policy}); {listing} lists them."
        return f"Wait for one to expire ({policy})."


class OutcomeUnknown(HandleError):
    """The store did not answer a write, and reading it back could not tell.

    Not retryable: the write may have been applied, or may still be.

    Args:
        kind: The handle's kind.
        whether: What is not known, e.g. "this change to basket 'bsk_…' was applied".
    """

    code = "outcome_unknown"

    def __init__(self, kind: AnyKind, whether: str) -> None:
        self.kind = kind
        super().__init__(
            f"The {kind.label} store did not answer in time, so it is not known whether {whether}.",
            self._hint(every_tool),
        )

    def _hint(self, tools: ToolNames) -> str:
        listing = tools(self.kind.list_tool)
        if listing:
            return f"Call {listing} to see the current state before repeating this call."
        return "Check the current state before repeating this call."


class TransientHandleError(HandleError):
    """Base of the errors that may go away if the same call is retried shortly."""

    retryable = True


class StorageUnavailable(TransientHandleError):
    """The store could not be reached (wraps ``stores.base.StoreUnavailable``)."""

    code = "store_unavailable"

    def __init__(self, kind: AnyKind) -> None:
        super().__init__(
            f"The {kind.label} store is temporarily unavailable.",
            "Retry this call in a few seconds.",
        )


class StorageFull(StorageUnavailable):
    """The store is out of space and refused the change (wraps ``stores.StoreFull``)."""

    code = "store_full"

    def __init__(self, kind: AnyKind) -> None:
        self.kind = kind
        message = f"The {kind.label} store is full, so nothing was changed."
        HandleError.__init__(self, message, self._hint(every_tool))

    def _hint(self, tools: ToolNames) -> str:
        kind = self.kind
        close = tools(kind.close_tool) if kind.close_tool else None
        if not close:
            return f"This clears when the server frees space or {kind.plural} expire."
        listing = tools(kind.list_tool)
        lists = f" ({listing} lists them)" if listing else ""
        return (
            f"This clears when the server frees space; {close} on "
            f"{kind.plural} you no longer need frees some{lists}."
        )


class HandleConflict(TransientHandleError):
    """Concurrent changes kept winning, or the state changed since it was read.

    Args:
        kind: The handle's kind.
        handle_id: The handle.
        why: What went wrong, e.g. "changed since it was read".
    """

    code = "conflict"

    def __init__(self, kind: AnyKind, handle_id: str, why: str) -> None:
        super().__init__(
            f"{_title(kind)} {echo(handle_id)} {why}; this change was not applied.",
            "Retry this call shortly.",
        )
