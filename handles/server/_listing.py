"""``tools/list`` pages: a deterministic order and opaque, stable cursors.

A cursor names the last tool of the previous page (base64url), so it stays valid
across restarts as long as the tool set is the same.
"""

from __future__ import annotations

import base64
from typing import Any

from .jsonrpc import INVALID_PARAMS, ProtocolError

__all__ = ["ToolPages"]


class ToolPages:
    """Precomputed ``tools/list`` results, one per page."""

    def __init__(self, page_size: int) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self._size = page_size
        self._pages: dict[str | None, dict[str, Any]] = {None: {"tools": []}}

    def rebuild(self, definitions: list[dict[str, Any]]) -> None:
        pages: dict[str | None, dict[str, Any]] = {}
        cursor: str | None = None
        for start in range(0, max(len(definitions), 1), self._size):
            chunk = definitions[start : start + self._size]
            page: dict[str, Any] = {"tools": chunk}
            if start + self._size < len(definitions):
                page["nextCursor"] = _cursor(chunk[-1]["name"])
            pages[cursor] = page
            cursor = page.get("nextCursor")
        self._pages = pages

    def page(self, cursor: Any, *, modern: dict[str, Any] | None) -> dict[str, Any]:
        """The page after ``cursor`` (``None`` for the first); add ``modern`` fields."""
        page = self._pages.get(cursor) if cursor is None or isinstance(cursor, str) else None
        if page is None:
            raise ProtocolError(INVALID_PARAMS, "Invalid cursor: call tools/list without one")
        return {**page, **modern} if modern else dict(page)


def _cursor(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")
