"""What a tool can return: content blocks, a full ``ToolResult``, or ``InputRequired``.

A tool usually returns a plain value (a model, a dict, a number) and the server
turns it into ``structuredContent`` plus a text block. Return these classes to
say exactly what the client gets.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AudioContent",
    "Content",
    "EmbeddedResource",
    "ImageContent",
    "InputRequired",
    "ResourceLink",
    "TextContent",
    "ToolResult",
]


@dataclass(frozen=True, slots=True)
class TextContent:
    text: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class _Binary:
    data: bytes
    mime_type: str

    def to_wire(self) -> dict[str, Any]:
        encoded = base64.b64encode(self.data).decode()
        return {"type": self._type, "data": encoded, "mimeType": self.mime_type}

    _type = ""


@dataclass(frozen=True, slots=True)
class ImageContent(_Binary):
    """An image; ``data`` is raw bytes and is base64-encoded on the wire."""

    _type = "image"


@dataclass(frozen=True, slots=True)
class AudioContent(_Binary):
    """Audio; ``data`` is raw bytes and is base64-encoded on the wire."""

    _type = "audio"


@dataclass(frozen=True, slots=True)
class ResourceLink:
    """A link to a resource the client may fetch or show."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire = {"type": "resource_link", "uri": self.uri, "name": self.name}
        optional = (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
        )
        wire.update((k, v) for k, v in optional if v is not None)
        return wire


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents inline: ``text`` or ``blob`` (raw bytes), not both."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("an EmbeddedResource needs exactly one of text or blob")

    def to_wire(self) -> dict[str, Any]:
        resource: dict[str, Any] = {"uri": self.uri}
        if self.mime_type is not None:
            resource["mimeType"] = self.mime_type
        if self.blob is not None:
            resource["blob"] = base64.b64encode(self.blob).decode()
        else:
            resource["text"] = self.text
        return {"type": "resource", "resource": resource}


Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A complete tool result: content blocks, optional structured data, error flag."""

    content: list[Content] = field(default_factory=list)
    structured: Any = None
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "content": [block.to_wire() for block in self.content],
            "isError": self.is_error,
        }
        if self.structured is not None:
            wire["structuredContent"] = self.structured
        return wire


@dataclass(frozen=True, slots=True)
class InputRequired:
    """Ask the client for input and to call again (2026-07-28 "input required").

    ``input_requests`` maps a key of your choice to an MCP request such as
    ``{"method": "elicitation/create", "params": {...}}``. The client answers by
    calling the tool again with ``inputResponses`` under the same keys, which the
    tool reads from ``Context.input_responses``. ``request_state`` comes back
    unchanged; treat it as attacker-controlled unless you sign it.
    """

    input_requests: dict[str, Any] | None = None
    request_state: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"resultType": "input_required"}
        if self.input_requests is not None:
            wire["inputRequests"] = self.input_requests
        if self.request_state is not None:
            wire["requestState"] = self.request_state
        return wire
