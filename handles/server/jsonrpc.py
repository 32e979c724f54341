"""JSON-RPC 2.0 envelopes: error codes, parsing one message, building responses.

Transports move bytes; this module turns one line or body into a message dict
(or a ready error response) and back. Nothing here knows about MCP methods.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

import orjson

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "ProtocolError",
    "as_id",
    "dumps",
    "encode",
    "error_response",
    "parse",
    "request_id",
    "result_response",
]

PARSE_ERROR = -32700
"""The bytes are not JSON."""
INVALID_REQUEST = -32600
"""JSON, but not a JSON-RPC 2.0 request or notification (a batch, no method, a null id)."""
METHOD_NOT_FOUND = -32601
"""No such method (or one removed in the request's protocol era)."""
INVALID_PARAMS = -32602
"""The params do not fit the method (missing ``_meta``, unknown tool, bad cursor)."""
INTERNAL_ERROR = -32603
"""The server failed; the details are in its log, never in the response."""
HEADER_MISMATCH = -32020
"""An HTTP ``Mcp-*`` header disagrees with the body, or is missing."""
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
"""Processing needs a client capability that the request did not declare."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""The request's protocol version is not one this server speaks."""

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a message may have; deeper is -32600."""

Id = str | int
Message = dict[str, Any]
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_NINETEEN_DIGITS = b"0" * 19
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


class ProtocolError(Exception):
    """A failure that becomes a JSON-RPC ``error`` object rather than a result."""

    def __init__(self, code: int, message: str, data: Any = None, *, id: Id | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        #: The id of the request it answers, when one could be read.
        self.id = id

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def encode(value: Any) -> str:
    """Compact JSON text, as ``dumps`` writes it."""
    return dumps(value).decode()


def dumps(message: Any) -> bytes:
    """Compact UTF-8 JSON with no embedded newline, as stdio framing needs.

    orjson writes it (much faster than the stdlib encoder; see benchmarks/RESULTS.md).
    What orjson refuses, the stdlib writes: keys that are not strings (made
    strings), integers beyond 64 bits, and lone surrogates. A client can send one
    of those (as a ``\\ud800`` escape) and errors echo what clients send: such a
    message is written with ASCII escapes, which is valid JSON and reads back the same.
    """
    try:
        return orjson.dumps(message)
    except orjson.JSONEncodeError:
        pass
    try:
        return _STDLIB_ENCODE(message).encode()
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode()


_STDLIB_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def result_response(id: Id, result: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: Id | None, error: ProtocolError) -> Message:
    return {"jsonrpc": "2.0", "id": id, "error": error.to_error()}


def parse(data: bytes | str, *, responses: bool = False) -> Message:
    """Parse one message; raise ``ProtocolError`` for anything that is not one.

    The result has a string ``method``, a dict ``params`` (``{}`` when absent)
    and, for requests, an ``id`` that is a string or an integer. Responses sent
    to us (a ``result`` or ``error`` without ``method``) are refused too, unless
    ``responses``: then one with a string id is returned as it is (it answers a
    request the server sent; the caller tells them apart by the missing ``method``).
    JSON nested deeper than ``MAX_DEPTH`` is refused before it is parsed (its id is not read), so
    neither the parser nor anything after it recurses deep. Bytes must be
    strict UTF-8: ``json.loads`` alone would also take UTF-16 and UTF-8-encoded
    surrogates.
    """
    if _too_deep(data):
        raise ProtocolError(
            INVALID_REQUEST, f"Invalid Request: JSON nested more than {MAX_DEPTH} levels deep"
        )
    message = _loads(data)
    if responses and _is_response(message):
        return message  # type: ignore[no-any-return]
    if not isinstance(message, dict):
        kind = "a batch (JSON array)" if isinstance(message, list) else type(message).__name__
        raise ProtocolError(
            INVALID_REQUEST, f"Invalid Request: expected one JSON object, got {kind}"
        )
    _check_envelope(message)
    return message


def _loads(data: bytes | str) -> Any:
    """orjson's parse, or the stdlib's for what orjson refuses (lone surrogate escapes,
    ``NaN``) or would change: it reads integers beyond 64 bits as floats, so a message
    with a run of 19 digits or more goes to the stdlib, which keeps them exact.
    """
    raw = data if isinstance(data, bytes) else data.encode(errors="replace")
    # Digits become "0" and all else " ": two C-speed passes, no regex.
    if _NINETEEN_DIGITS not in raw.translate(_DIGITS_ONLY):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(data.decode() if isinstance(data, bytes) else data)
    except (ValueError, RecursionError):
        raise ProtocolError(PARSE_ERROR, "Parse error: the message is not valid JSON") from None


def _too_deep(data: bytes | str) -> bool:
    """Whether balanced arrays and objects nest deeper than ``MAX_DEPTH``, outside strings.

    Counting brackets is all most messages cost; only one with more brackets than
    ``MAX_DEPTH`` is scanned, at C speed: strings removed, brackets kept as +1/-1,
    and the running sum's peak is the depth. Unbalanced brackets are not JSON:
    those are left to the parser to refuse.
    """
    raw = data.encode(errors="replace") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS).translate(_SIGNS)
    depths = list(accumulate(array("b", brackets), initial=0))
    return depths[-1] == 0 and max(depths) > MAX_DEPTH


def _check_envelope(message: Message) -> None:
    if message.get("jsonrpc") != "2.0":
        raise _invalid(message, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str):
        raise _invalid(message, 'Invalid Request: "method" must be a string')
    if "id" in message and as_id(message["id"]) is None:
        raise _invalid(message, 'Invalid Request: "id" must be a string or an integer')
    params = message.setdefault("params", {})
    if params is None:
        message["params"] = {}
    elif not isinstance(params, dict):
        raise _invalid(message, 'Invalid Request: "params" must be an object')


def _is_response(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and "method" not in message
        and isinstance(message.get("id"), str)
        and ("result" in message) != ("error" in message)
    )


def _invalid(message: Message, text: str) -> ProtocolError:
    return ProtocolError(INVALID_REQUEST, text, id=request_id(message))


def request_id(message: Any) -> Id | None:
    """The id to echo in an error about ``message``, when one can be read."""
    return as_id(message.get("id")) if isinstance(message, dict) else None


def as_id(value: Any) -> Id | None:
    """``value`` if it can be a JSON-RPC id (a string or an integer, not a bool), else ``None``.

    Progress tokens and the ``requestId`` of a cancellation follow the same rule;
    ``True`` is never taken for ``1``.
    """
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None
