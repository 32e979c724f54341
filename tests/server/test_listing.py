"""``tools/list`` pages: deterministic order, opaque stable cursors, ``-32602`` for bad ones."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handles.server._listing import ToolPages
from handles.server.jsonrpc import INVALID_PARAMS, ProtocolError

MODERN = {"ttlMs": 5, "cacheScope": "private"}


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "inputSchema": {"type": "object"}} for name in names]


def cursor_after(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")


def walk(pages: ToolPages) -> list[list[str]]:
    seen: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = pages.page(cursor, modern=None)
        seen.append([tool["name"] for tool in page["tools"]])
        cursor = page.get("nextCursor")
        if cursor is None:
            return seen


@pytest.mark.parametrize("size", [0, -1])
def test_page_size_must_be_positive(size: int) -> None:
    with pytest.raises(ValueError, match=f"^page_size must be at least 1, got {size}$"):
        ToolPages(size)


def test_no_tools_is_one_empty_page() -> None:
    pages = ToolPages(2)
    assert pages.page(None, modern=None) == {"tools": []}
    pages.rebuild([])
    assert pages.page(None, modern=MODERN) == {"tools": [], **MODERN}


def test_pages_in_order_with_cursors_naming_the_last_tool() -> None:
    pages = ToolPages(2)
    pages.rebuild(tools("a", "b", "c", "d", "e"))
    first = pages.page(None, modern=None)
    assert first == {"tools": tools("a", "b"), "nextCursor": cursor_after("b")}
    second = pages.page(first["nextCursor"], modern=MODERN)
    assert second == {"tools": tools("c", "d"), "nextCursor": cursor_after("d"), **MODERN}
    assert pages.page(second["nextCursor"], modern=None) == {"tools": tools("e")}


def test_an_exact_multiple_has_no_empty_last_page() -> None:
    pages = ToolPages(2)
    pages.rebuild(tools("a", "b", "c", "d"))
    assert walk(pages) == [["a", "b"], ["c", "d"]]


def test_cursors_survive_a_rebuild_of_the_same_set() -> None:
    pages, other = ToolPages(1), ToolPages(1)
    pages.rebuild(tools("x", "y"))
    other.rebuild(tools("x", "y"))
    cursor = pages.page(None, modern=None)["nextCursor"]
    assert other.page(cursor, modern=None) == {"tools": tools("y")}


@pytest.mark.parametrize("cursor", ["", "garbage", cursor_after("e"), 5, True, ["a"], {"c": 1}])
def test_invalid_cursors(cursor: Any) -> None:
    pages = ToolPages(2)
    pages.rebuild(tools("a", "b", "c", "d", "e"))
    with pytest.raises(ProtocolError) as caught:
        pages.page(cursor, modern=None)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == "Invalid cursor: call tools/list without one"


def test_a_cursor_from_a_removed_tool_is_invalid_after_a_rebuild() -> None:
    pages = ToolPages(1)
    pages.rebuild(tools("a", "b"))
    cursor = pages.page(None, modern=None)["nextCursor"]
    pages.rebuild(tools("b"))
    with pytest.raises(ProtocolError):
        pages.page(cursor, modern=None)


def test_results_are_copies() -> None:
    pages = ToolPages(5)
    pages.rebuild(tools("a"))
    first = pages.page(None, modern=MODERN)
    first["_meta"] = {"added": True}
    first["resultType"] = "complete"
    assert pages.page(None, modern=None) == {"tools": tools("a")}


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=30),
    st.integers(min_value=1, max_value=7),
)
def test_walking_every_page_yields_every_tool_once_in_order(names: list[str], size: int) -> None:
    pages = ToolPages(size)
    pages.rebuild(tools(*names))
    walked = walk(pages)
    assert [name for page in walked for name in page] == names
    assert len(walked) == max(1, -(-len(names) // size))
    assert all(len(page) == size for page in walked[:-1])
