"""mcp-handles: principal-bound, expiring state handles for MCP tool servers.

Two wings, joined in one place:

- the handle layer (this package's modules): ``HandleKind`` and ``Lifetime``
  (``kinds``), ``HandleManager`` (``manager``: mint, check, read, update, close and
  list handles over a ``stores.Store``), ``Handle``, ``Principal`` and the errors;
  ``Live`` (``live``) attaches an in-process object, such as a browser tab, to a kind;
- the MCP core (``handles.server``, with its transports in ``handles.transports``):
  ``Server``, ``Tool``, content types, ``Context`` and rate limits;
- ``HandleTools`` (``stateful``) puts handles behind tools of a ``Server``.

The handle layer is imported at once; the core only when one of its names is first
used, so ``from handles import HandleManager`` inside another MCP framework loads no
second server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import HandleClosed as HandleClosed
from .errors import HandleConflict as HandleConflict
from .errors import HandleError as HandleError
from .errors import HandleExpired as HandleExpired
from .errors import OutcomeUnknown as OutcomeUnknown
from .errors import QuotaExceeded as QuotaExceeded
from .errors import StorageFull as StorageFull
from .errors import StorageUnavailable as StorageUnavailable
from .errors import ToolError as ToolError
from .errors import TransientHandleError as TransientHandleError
from .errors import UnknownHandle as UnknownHandle
from .errors import WrongKind as WrongKind
from .handle import Handle as Handle
from .ids import SecretKeys as SecretKeys
from .ids import secret_keys_from_environment as secret_keys_from_environment
from .kinds import HandleKind as HandleKind
from .kinds import Lifetime as Lifetime
from .live import Live as Live
from .live import LiveCapReached as LiveCapReached
from .manager import HandleManager as HandleManager
from .principal import Principal as Principal

if TYPE_CHECKING:
    from .server import AudioContent as AudioContent
    from .server import Context as Context
    from .server import EmbeddedResource as EmbeddedResource
    from .server import ImageContent as ImageContent
    from .server import InputRequired as InputRequired
    from .server import RateLimit as RateLimit
    from .server import RateLimited as RateLimited
    from .server import RateLimiter as RateLimiter
    from .server import ResourceLink as ResourceLink
    from .server import Server as Server
    from .server import TextContent as TextContent
    from .server import Tool as Tool
    from .server import ToolResult as ToolResult
    from .stateful import HandleTools as HandleTools

    __version__: str

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
    "Live",
    "LiveCapReached",
    "OutcomeUnknown",
    "Principal",
    "QuotaExceeded",
    "RateLimit",
    "RateLimited",
    "RateLimiter",
    "ResourceLink",
    "SecretKeys",
    "Server",
    "StorageFull",
    "StorageUnavailable",
    "TextContent",
    "Tool",
    "ToolError",
    "ToolResult",
    "TransientHandleError",
    "UnknownHandle",
    "WrongKind",
    "secret_keys_from_environment",
]

_LAZY = {
    "AudioContent": ".server",
    "Context": ".server",
    "EmbeddedResource": ".server",
    "ImageContent": ".server",
    "InputRequired": ".server",
    "RateLimit": ".server",
    "RateLimited": ".server",
    "RateLimiter": ".server",
    "ResourceLink": ".server",
    "Server": ".server",
    "TextContent": ".server",
    "Tool": ".server",
    "ToolResult": ".server",
    "HandleTools": ".stateful",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from ._version import __version__

        return __version__
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})
