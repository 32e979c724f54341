"""mcp-handles: principal-bound, expiring state handles for MCP tool servers.

The pieces, from the wire up: ``Server`` (tools/list and tools/call in both MCP
eras) with its transports in ``handles.transports``; ``HandleKind`` and
``HandleManager`` (mint, check, read, update, close and list handles over a
``stores.Store``); ``HandleTools`` (stateful tools in a few lines).
"""

from .content import AudioContent as AudioContent
from .content import EmbeddedResource as EmbeddedResource
from .content import ImageContent as ImageContent
from .content import InputRequired as InputRequired
from .content import ResourceLink as ResourceLink
from .content import TextContent as TextContent
from .content import ToolResult as ToolResult
from .context import Context as Context
from .errors import HandleClosed as HandleClosed
from .errors import HandleConflict as HandleConflict
from .errors import HandleError as HandleError
from .errors import HandleExpired as HandleExpired
from .errors import QuotaExceeded as QuotaExceeded
from .errors import StorageUnavailable as StorageUnavailable
from .errors import TransientHandleError as TransientHandleError
from .errors import UnknownHandle as UnknownHandle
from .errors import WrongKind as WrongKind
from .handle import Handle as Handle
from .kinds import HandleKind as HandleKind
from .kinds import Lifetime as Lifetime
from .manager import HandleManager as HandleManager
from .principal import Principal as Principal
from .ratelimit import RateLimit as RateLimit
from .ratelimit import RateLimited as RateLimited
from .ratelimit import RateLimiter as RateLimiter
from .server import Server as Server
from .stateful import HandleTools as HandleTools
from .tools import Tool as Tool
from .tools import ToolError as ToolError

__all__ = [
    "AudioContent",
    "Context",
    "EmbeddedResource",
    "Handle",
    "HandleClosed",
    "HandleConflict",
    "HandleError",
    "HandleExpired",
    "HandleKind",
    "HandleManager",
    "HandleTools",
    "ImageContent",
    "InputRequired",
    "Lifetime",
    "Principal",
    "QuotaExceeded",
    "RateLimit",
    "RateLimited",
    "RateLimiter",
    "ResourceLink",
    "Server",
    "StorageUnavailable",
    "TextContent",
    "Tool",
    "ToolError",
    "ToolResult",
    "TransientHandleError",
    "UnknownHandle",
    "WrongKind",
]
