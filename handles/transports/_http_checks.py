"""The rules a Streamable HTTP request must pass before it reaches the server.

Pure functions over header values and the parsed body, so they can be tested
without a socket: the Host/Origin allow-lists, the ``Accept`` header, the era a
request belongs to (from ``MCP-Protocol-Version``), the modern ``Mcp-*`` header
checks, and the HTTP status for a JSON-RPC error.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass

from ..server.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    Message,
    ProtocolError,
    request_id,
)
from ..server.protocol import (
    CLIENT_CAPABILITIES,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION,
    Era,
    unsupported_version,
)

__all__ = [
    "DEFAULT_ALLOWED_HOSTS",
    "DEFAULT_ALLOWED_ORIGINS",
    "Acceptance",
    "AllowList",
    "accepted",
    "check_modern_headers",
    "decode_header",
    "request_era",
    "status_for",
]

DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""Loopback names, any port: what a server bound to localhost can be reached as."""
DEFAULT_ALLOWED_ORIGINS = ("http://localhost", "http://127.0.0.1", "http://[::1]")
"""Pages served from a loopback address, any port."""
NO_HEADER_LEGACY_VERSION = "2025-03-26"
"""The version to assume when a request has no ``MCP-Protocol-Version`` (2025-11-25 spec)."""

_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
_B64_PREFIX, _B64_SUFFIX = "=?base64?", "?="
_OWS = " \t"


class AllowList:
    """Host or origin patterns; an entry without a port matches any port, ``"*"`` matches all."""

    def __init__(self, entries: Iterable[str]) -> None:
        self._any = False
        self._exact: set[str] = set()
        self._any_port: set[str] = set()
        for entry in entries:
            self._add(entry.strip().lower().rstrip("/"))

    def _add(self, entry: str) -> None:
        if entry == "*":
            self._any = True
        elif _split_port(entry)[1] is None:
            self._any_port.add(entry)
        else:
            self._exact.add(entry)

    def allows(self, value: str) -> bool:
        """Whether ``value`` (a ``Host`` or ``Origin`` header value) is on the list."""
        if self._any:
            return True
        value = value.strip().lower()
        if value in self._exact or value in self._any_port:
            return True
        base, port = _split_port(value)
        return port is not None and base in self._any_port


def _split_port(value: str) -> tuple[str, str | None]:
    """``"http://[::1]:8000"`` -> ``("http://[::1]", "8000")``; no port -> ``(value, None)``."""
    head, sep, tail = value.rpartition(":")
    if (
        sep
        and tail.isdigit()
        and not head.endswith(":")
        and (head.endswith("]") or "[" not in head)
    ):
        return head, tail
    return value, None


@dataclass(frozen=True, slots=True)
class Acceptance:
    """What the client's ``Accept`` header lets us reply with."""

    json: bool
    sse: bool


_BOTH = Acceptance(json=True, sse=True)


def accepted(header: str | None) -> Acceptance:
    """Read ``Accept``: a missing header (or ``*/*``) accepts both JSON and SSE."""
    if not header:
        return _BOTH
    types = {part.split(";", 1)[0].strip().lower() for part in header.split(",")}
    anything = "*/*" in types
    json = anything or "application/json" in types or "application/*" in types
    sse = anything or "text/event-stream" in types or "text/*" in types
    return _BOTH if json and sse else Acceptance(json, sse)


def decode_header(value: str | None) -> str | None:
    """An ``Mcp-*`` header value without surrounding whitespace, ``=?base64?...?=`` decoded.

    A malformed base64 value gives ``None``, so it never matches a body value.
    """
    if value is None:
        return None
    value = value.strip(_OWS)
    if not (value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX)):
        return value
    payload = value[len(_B64_PREFIX) : -len(_B64_SUFFIX)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def request_era(header: str | None, message: Message) -> tuple[Era, str]:
    """The era and version of a request, from its ``MCP-Protocol-Version`` header.

    Raises ``ProtocolError``: ``-32022`` for a version we do not speak, ``-32020``
    for a legacy request whose body ``_meta`` claims a modern version.
    """
    version = header.strip(_OWS) if header is not None else None
    if version in MODERN_VERSIONS:
        return "modern", version
    if version is not None and version not in LEGACY_VERSIONS:
        raise _with_id(unsupported_version(version), message)
    meta = message["params"].get("_meta")
    if isinstance(meta, dict) and meta.get(PROTOCOL_VERSION) in MODERN_VERSIONS:
        shown = "no MCP-Protocol-Version header" if version is None else f"header {version}"
        raise _mismatch(message, f"the body's _meta says protocol 2026-07-28, the {shown}")
    return "legacy", version or NO_HEADER_LEGACY_VERSION


def check_modern_headers(
    message: Message, version: str, method_header: str | None, name_header: str | None
) -> None:
    """Check a modern request's headers against its body; raise ``-32020`` on a mismatch.

    A body without a complete ``_meta`` is left to the server, which answers
    ``-32602`` as the spec asks.
    """
    params = message["params"]
    meta = params.get("_meta")
    if (
        not isinstance(meta, dict)
        or PROTOCOL_VERSION not in meta
        or CLIENT_CAPABILITIES not in meta
    ):
        return
    if meta[PROTOCOL_VERSION] != version:
        raise _mismatch(message, "MCP-Protocol-Version does not match params._meta")
    method = message["method"]
    if decode_header(method_header) != method:
        word = "is missing" if method_header is None else "does not match the body's method"
        raise _mismatch(message, f"the Mcp-Method header {word}")
    name = params.get("name")
    if method == "tools/call" and isinstance(name, str) and decode_header(name_header) != name:
        word = "is missing" if name_header is None else "does not match params.name"
        raise _mismatch(message, f"the Mcp-Name header {word}")


def status_for(response: Message, era: Era) -> int:
    """The HTTP status for a response the server produced.

    Modern errors map as the spec's table (400, or 404 for ``-32601``). Legacy
    errors stay 200: legacy clients read a JSON-RPC error only from a 2xx reply.
    """
    error = response.get("error")
    if error is None or era == "legacy":
        return 200
    return _STATUS.get(error["code"], 200)


def _mismatch(message: Message, text: str) -> ProtocolError:
    return ProtocolError(HEADER_MISMATCH, f"Header mismatch: {text}", id=request_id(message))


def _with_id(error: ProtocolError, message: Message) -> ProtocolError:
    error.id = request_id(message)
    return error
