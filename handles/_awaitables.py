"""``maybe_await``: the one place that runs a callback that may be sync or async.

Shared by both wings (tools of the core, edits of the handle layer), so it
imports nothing of either.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["maybe_await"]


async def maybe_await(value: Any) -> Any:
    """``value`` itself, or what it gives when awaited if it is awaitable."""
    return await value if inspect.isawaitable(value) else value
