"""Transports move messages between a client and a ``Server``.

``serve_stdio`` (newline-delimited JSON on stdin/stdout), ``connect_memory`` (in
process, for tests) and, in ``handles.transports.http``, an ASGI app for
Streamable HTTP.

Each name is imported on first use, so a stdio server does not load the
in-memory transport's streams (a server's start-up is mostly imports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .memory import MemoryClient as MemoryClient
    from .memory import connect_memory as connect_memory
    from .stdio import serve_stdio as serve_stdio

__all__ = ["MemoryClient", "connect_memory", "serve_stdio"]

_MODULES = {"MemoryClient": "memory", "connect_memory": "memory", "serve_stdio": "stdio"}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
