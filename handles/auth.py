"""Deprecated: import from ``handles.transports.auth`` (or the names from ``handles``).

Kept for one release so that code written for mcp-handles 0.1.0 keeps working.
"""

import warnings

from .transports.auth import *  # noqa: F403
from .transports.auth import __all__ as __all__

warnings.warn(
    "handles.auth moved to handles.transports.auth in mcp-handles 0.2; the old path goes in 0.3",
    DeprecationWarning,
    stacklevel=2,
)
