"""MCP protocol versions, the two eras, and the per-request ``_meta`` envelope.

*Modern* (2026-07-28) requests carry their version and the client's capabilities
in ``params._meta`` on every request; there is no handshake. *Legacy* requests
(2025-11-25 and older) follow an ``initialize`` handshake and carry neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .jsonrpc import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, ProtocolError, as_id

__all__ = [
    "LATEST_LEGACY_VERSION",
    "LEGACY_VERSIONS",
    "LOG_LEVELS",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "Era",
    "RequestMeta",
    "read_modern_meta",
]

MODERN_VERSIONS = ("2026-07-28",)
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0]
SUPPORTED_VERSIONS = MODERN_VERSIONS + LEGACY_VERSIONS

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The RFC 5424 severities MCP logging uses, least severe first."""

Era = Literal["modern", "legacy"]


@dataclass(frozen=True, slots=True)
class RequestMeta:
    """What one request says about itself: version, capabilities, progress token, log level.

    ``log_level`` is the least severe level the client wants as
    ``notifications/message`` for this request (2026-07-28 ``_meta`` logLevel);
    ``None`` means no log messages.
    """

    version: str
    client_capabilities: dict[str, Any]
    progress_token: str | int | None = None
    log_level: str | None = None

    @property
    def era(self) -> Era:
        return "modern" if self.version in MODERN_VERSIONS else "legacy"


def is_modern(params: dict[str, Any]) -> bool:
    """Whether a request's params carry the modern envelope (stdio era detection)."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION in meta


def read_modern_meta(params: dict[str, Any]) -> RequestMeta:
    """Validate a modern request's ``_meta``; raise ``ProtocolError`` as the spec says."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise ProtocolError(INVALID_PARAMS, "params._meta is required in protocol 2026-07-28")
    missing = [k for k in (PROTOCOL_VERSION, CLIENT_CAPABILITIES) if k not in meta]
    if missing:
        keys = ", ".join(missing)
        raise ProtocolError(INVALID_PARAMS, f"params._meta is missing required key(s): {keys}")
    version, capabilities = meta[PROTOCOL_VERSION], meta[CLIENT_CAPABILITIES]
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    if not isinstance(capabilities, dict):
        raise ProtocolError(INVALID_PARAMS, f"params._meta.{CLIENT_CAPABILITIES} must be an object")
    level = meta.get(LOG_LEVEL)
    return RequestMeta(
        version, capabilities, _progress_token(meta), level if level in LOG_LEVELS else None
    )


def legacy_meta(params: dict[str, Any], version: str) -> RequestMeta:
    meta = params.get("_meta")
    token = _progress_token(meta) if isinstance(meta, dict) else None
    return RequestMeta(version, {}, token)


def unsupported_version(requested: Any) -> ProtocolError:
    shown = requested if isinstance(requested, str) else repr(requested)
    return ProtocolError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_VERSIONS), "requested": shown[:64]},
    )


def _progress_token(meta: dict[str, Any]) -> str | int | None:
    return as_id(meta.get("progressToken"))
