"""The MCP core: ``tools/list`` and ``tools/call`` in both protocol eras.

``Server`` (``dispatch.py``) answers parsed JSON-RPC messages; ``Tool`` (``tools.py``)
turns a typed function into a tool; ``content``, ``context`` and ``ratelimit`` are
what a tool returns, receives and is limited by (``client_requests``: what the
context's requests to the client raise); ``jsonrpc`` and ``protocol`` read
and write the wire. The transports in ``handles.transports`` carry the messages.

The core knows nothing of handles: from the handle layer it imports only
``handles.errors`` (``ToolError``) and ``handles.principal``.
"""

from ..errors import ToolError as ToolError
from .client_requests import ClientCancelled as ClientCancelled
from .client_requests import ClientRequestError as ClientRequestError
from .client_requests import ClientTimeout as ClientTimeout
from .client_requests import ClientUnsupported as ClientUnsupported
from .client_requests import NotSupported as NotSupported
from .content import AudioContent as AudioContent
from .content import EmbeddedResource as EmbeddedResource
from .content import ImageContent as ImageContent
from .content import InputRequired as InputRequired
from .content import ResourceLink as ResourceLink
from .content import TextContent as TextContent
from .content import ToolResult as ToolResult
from .context import Confirmation as Confirmation
from .context import Context as Context
from .context import Elicited as Elicited
from .context import Sampled as Sampled
from .dispatch import DEFAULT_MAX_RESULT_BYTES as DEFAULT_MAX_RESULT_BYTES
from .dispatch import Connection as Connection
from .dispatch import Server as Server
from .jsonrpc import ProtocolError as ProtocolError
from .ratelimit import RateCharge as RateCharge
from .ratelimit import RateLimit as RateLimit
from .ratelimit import RateLimited as RateLimited
from .ratelimit import RateLimiter as RateLimiter
from .tools import Tool as Tool
from .tools import ToolFunction as ToolFunction

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "AudioContent",
    "ClientCancelled",
    "ClientRequestError",
    "ClientTimeout",
    "ClientUnsupported",
    "Confirmation",
    "Connection",
    "Context",
    "Elicited",
    "EmbeddedResource",
    "ImageContent",
    "InputRequired",
    "NotSupported",
    "ProtocolError",
    "RateCharge",
    "RateLimit",
    "RateLimited",
    "RateLimiter",
    "ResourceLink",
    "Sampled",
    "Server",
    "TextContent",
    "Tool",
    "ToolError",
    "ToolFunction",
    "ToolResult",
]
