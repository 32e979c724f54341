"""ASGI plumbing for the HTTP transport: reading bodies, plain replies, the JSON-or-SSE reply.

A request's reply starts as JSON. If the handler sends a notification (progress)
before it finishes, the reply commits to ``text/event-stream``: the
notifications go out as SSE events as they come, then the final response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..server.jsonrpc import INVALID_REQUEST, Message, ProtocolError, dumps, error_response

__all__ = [
    "Receive",
    "Reply",
    "RequestHeaders",
    "Scope",
    "Send",
    "lifespan",
    "reject",
    "send_json",
    "send_response",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

_JSON = (b"content-type", b"application/json")
_SSE_HEADERS: Headers = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


async def send_response(
    send: Send, status: int, body: bytes = b"", headers: Headers | None = None
) -> None:
    """Send a whole response; ``headers`` should name the content type of a body."""
    all_headers = [(b"content-length", str(len(body)).encode())]
    if headers:
        all_headers += headers
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def send_json(send: Send, status: int, message: Any, headers: Headers | None = None) -> None:
    """Send ``message`` as a compact JSON body."""
    await send_response(send, status, dumps(message), [_JSON, *(headers or ())])


async def reject(send: Send, status: int, text: str, headers: Headers | None = None) -> None:
    """Refuse a request before it reaches the server: a JSON-RPC error with no id."""
    error = error_response(None, ProtocolError(INVALID_REQUEST, text))
    await send_json(send, status, error, headers)


class RequestHeaders:
    """A request's headers by lower-case name; decoded when read.

    Of a repeated header ``get`` gives the last value; ``repeated`` says which of
    some names came more than once, so the transport can refuse the request.
    """

    __slots__ = ("_raw", "_repeated")

    def __init__(self, scope: Scope) -> None:
        raw: dict[bytes, bytes] = {}
        repeated: set[bytes] = set()
        for name, value in scope["headers"]:
            if name in raw:
                repeated.add(name)
            raw[name] = value
        self._raw, self._repeated = raw, repeated

    def get(self, name: bytes) -> str | None:
        """The value of header ``name`` (lower-case bytes), or ``None``."""
        value = self._raw.get(name)
        return None if value is None else value.decode("latin-1")

    def repeated(self, names: tuple[bytes, ...]) -> bytes | None:
        """The first of ``names`` that the request sent more than once, or ``None``."""
        if self._repeated:
            for name in names:
                if name in self._repeated:
                    return name
        return None

    def may_have_body(self) -> bool:
        """Whether a body may follow the head (a non-zero length, or chunked)."""
        length = self._raw.get(b"content-length")
        return b"transfer-encoding" in self._raw or (length is not None and length != b"0")


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer the ASGI lifespan protocol: nothing to start or stop."""
    while True:
        event = await receive()
        if event["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class Reply:
    """One request's reply: JSON, unless notifications come first, then SSE.

    ``sse`` says whether the client accepts SSE (without it notifications are
    dropped); ``json`` whether it accepts JSON (without it the reply is SSE).
    ``encode`` serializes the final response (``Server.encode`` caps tool results).
    """

    __slots__ = ("_closed", "_encode", "_json", "_send", "_sse", "_streaming")

    def __init__(
        self,
        send: Send,
        *,
        json: bool = True,
        sse: bool = True,
        encode: Callable[[Message], bytes] = dumps,
    ) -> None:
        self._send, self._json, self._sse, self._encode = send, json, sse, encode
        self._streaming = False
        self._closed = False

    @property
    def streaming(self) -> bool:
        """Whether the reply has committed to SSE."""
        return self._streaming

    async def notify(self, message: Message) -> None:
        """Send a notification now, as an SSE event (committing to SSE if needed)."""
        if self._closed or not self._sse:
            return
        if not self._streaming:
            await self._start_stream()
        body = _event(dumps(message))
        await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def finish(self, status: int, response: Message) -> None:
        """Send the final response: as the last SSE event, or as the JSON body."""
        if self._closed:
            return
        self._closed = True
        data = self._encode(response)
        if not self._streaming and self._json:
            await send_response(self._send, status, data, [_JSON])
            return
        if not self._streaming:
            await self._start_stream(status)
        await self._send({"type": "http.response.body", "body": _event(data)})

    async def _start_stream(self, status: int = 200) -> None:
        self._streaming = True
        await self._send({"type": "http.response.start", "status": status, "headers": _SSE_HEADERS})


def _event(data: bytes) -> bytes:
    return b"event: message\ndata: " + data + b"\n\n"
