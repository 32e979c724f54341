"""Requests from the server to the client (2025 era): sent, awaited, answered by id.

A tool awaits ``Context.elicit`` or ``Context.sample``; the transport sends the
request through the path it sends notifications on (the stdio writer, the POST's
SSE stream) and hands every JSON-RPC response it receives to ``PendingRequests.answer``.
Ids are unguessable and carry the table's ``replica`` tag; an answer is taken only
from the principal the request was sent to. Whatever ends the wait (the answer, the
timeout, the tool call's cancellation) removes the entry, so nothing is left behind.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import anyio

from ..errors import ToolError
from ..principal import Principal
from .jsonrpc import Message

__all__ = [
    "ClientCancelled",
    "ClientRequestError",
    "ClientTimeout",
    "ClientUnsupported",
    "NotSupported",
    "PendingRequests",
]


class ClientRequestError(ToolError):
    """A request to the client failed; the message says what to do (a ``ToolError``)."""


class NotSupported(ClientRequestError):
    """The client cannot be asked this: it did not declare the capability, or the
    protocol era or transport has no way to send the request. Fall back (ask the
    model to pass the answer as an argument, for example)."""


class ClientTimeout(ClientRequestError):
    """The client did not answer in time; the request was cancelled."""


class ClientCancelled(ClientRequestError):
    """The client cancelled the request (``notifications/cancelled``) instead of answering."""


class ClientUnsupported(ClientRequestError):
    """The client answered with a JSON-RPC error (it refused or failed the request)."""

    def __init__(self, text: str, code: int | None = None) -> None:
        super().__init__(text)
        self.code = code


@dataclass(slots=True)
class _Waiter:
    owner: str
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: Message | None = None
    cancelled: bool = False


class PendingRequests:
    """The server's requests that await a client's answer, by id.

    One table serves a stdio connection, or a whole HTTP app (answers arrive as
    separate POSTs). ``replica`` prefixes each id so that an answer sent to the
    wrong replica can be recognised as such.
    """

    def __init__(self, replica: str | None = None) -> None:
        self.replica = replica or secrets.token_hex(4)
        self._waiting: dict[str, _Waiter] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def open(self, principal: Principal) -> tuple[str, _Waiter]:
        """A new id and its waiter (call ``close`` in a ``finally``)."""
        id = f"{self.replica}-{secrets.token_urlsafe(12)}"
        waiter = _Waiter(principal.digest)
        self._waiting[id] = waiter
        return id, waiter

    def close(self, id: str) -> None:
        self._waiting.pop(id, None)

    def answer(self, message: Message, principal: Principal) -> bool:
        """Deliver a JSON-RPC response; ``False`` if no request of ``principal`` has its id."""
        id = message.get("id")
        waiter = self._waiting.get(id) if isinstance(id, str) else None
        if waiter is None or waiter.owner != principal.digest or waiter.done.is_set():
            return False
        waiter.answer = message
        waiter.done.set()
        return True

    def cancel(self, id: object, principal: Principal) -> bool:
        """The client's ``notifications/cancelled`` for one of our requests: end its wait."""
        waiter = self._waiting.get(id) if isinstance(id, str) else None
        if waiter is None or waiter.owner != principal.digest or waiter.done.is_set():
            return False
        waiter.cancelled = True
        waiter.done.set()
        return True

    def is_ours(self, message: Message) -> bool:
        """Whether a response's id names one of this table's requests (waiting or not)."""
        id = message.get("id")
        return isinstance(id, str) and id.startswith(f"{self.replica}-")
