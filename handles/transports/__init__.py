"""Transports move messages between a client and a ``Server``.

``serve_stdio`` (newline-delimited JSON on stdin/stdout), ``connect_memory`` (in
process, for tests) and, in ``handles.transports.http``, an ASGI app for
Streamable HTTP.
"""

from .memory import MemoryClient as MemoryClient
from .memory import connect_memory as connect_memory
from .stdio import serve_stdio as serve_stdio

__all__ = ["MemoryClient", "connect_memory", "serve_stdio"]
