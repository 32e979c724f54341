"""Deprecated: import from ``handles.server.tools`` (or the names from ``handles``).

Kept for one release so that code written for mcp-handles 0.1.0 keeps working.
"""

import warnings

from .server.tools import *  # noqa: F403
from .server.tools import __all__ as __all__

warnings.warn(
    "handles.tools moved to handles.server.tools in mcp-handles 0.2; the old path goes in 0.3",
    DeprecationWarning,
    stacklevel=2,
)
