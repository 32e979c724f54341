"""The public surface: what ``handles`` and ``stores`` export, and what users are told to import.

``__all__`` is the documented surface (the README and the API reference list it). Every
name in it resolves, and every ``import`` that the README, the docs, the example and the
docstrings show names a public module and a public name, so users never learn to depend
on an internal (a name or module starting with ``_``).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import handles
import stores

ROOT = Path(__file__).resolve().parent.parent

HANDLES_API = {
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
}
STORES_API = {
    "CountExceeded",
    "Counter",
    "LimitExceeded",
    "MemoryStore",
    "Record",
    "RedisStore",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
}


def test_the_exports_are_the_documented_surface() -> None:
    assert set(handles.__all__) >= HANDLES_API
    assert set(stores.__all__) == STORES_API
    assert len(handles.__all__) == len(set(handles.__all__))


@pytest.mark.parametrize("module", [handles, stores], ids=lambda m: m.__name__)
def test_every_exported_name_resolves_and_is_listed_by_dir(module: object) -> None:
    names: list[str] = module.__all__  # type: ignore[attr-defined]
    for name in names:
        assert getattr(module, name) is not None, name
    assert set(names) <= set(dir(module))


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    assert handles.__version__ == version("mcp-handles")


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        handles.Nope  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        stores.Nope  # noqa: B018


@pytest.mark.parametrize("old", ["handles.tools", "handles.jsonrpc", "handles.auth"])
def test_old_import_paths_still_work_with_a_warning(old: str) -> None:
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to"):
        module = importlib.import_module(old)
    assert module.__all__
    for name in module.__all__:
        getattr(module, name)


def test_handles_server_still_offers_what_it_did() -> None:
    from handles.server import Connection, Server

    assert Server is handles.Server
    assert Connection.__module__ == "handles.server.dispatch"


# --- what users are told to import --------------------------------------------------

_FENCED = re.compile(r"```(?:python|py)\n(.*?)```", re.S)
_DOCTEST_BLOCK = re.compile(r"::\n\n((?:[ ]{4,}.*\n|\n)+)")


def _imports_in(code: str) -> list[tuple[str, str]]:
    """(module, name) for each import in ``code``; name is "" for ``import module``."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.module, alias.name) for alias in node.names]
    return [(m, n) for m, n in found if m.split(".")[0] in ("handles", "stores")]


def _dedent(block: str) -> str:
    lines = block.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


def shown_imports() -> dict[str, list[tuple[str, str]]]:
    """Every handles/stores import that a user can read, by where it stands."""
    shown: dict[str, list[tuple[str, str]]] = {}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        if page.exists():
            for block in _FENCED.findall(page.read_text()):
                shown.setdefault(str(page.relative_to(ROOT)), []).extend(_imports_in(block))
    examples = [*sorted((ROOT / "example_basket").glob("*.py"))]
    examples += sorted((ROOT / "docs").rglob("*.py"))
    for path in examples:
        shown.setdefault(str(path.relative_to(ROOT)), []).extend(_imports_in(path.read_text()))
    for package in ("handles", "stores"):
        for path in sorted((ROOT / package).rglob("*.py")):
            docstrings = [
                ast.get_docstring(node) or ""
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(
                    node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
                )
            ]
            for doc in docstrings:
                for block in _DOCTEST_BLOCK.findall(doc + "\n"):
                    where = str(path.relative_to(ROOT))
                    shown.setdefault(where, []).extend(_imports_in(_dedent(block)))
    return shown


def test_users_are_shown_only_public_imports() -> None:
    private = {
        where: [
            f"{m}:{n}"
            for m, n in found
            if any(p.startswith("_") for p in m.split(".")) or n.startswith("_")
        ]
        for where, found in shown_imports().items()
    }
    assert {k: v for k, v in private.items() if v} == {}


def test_every_shown_import_resolves() -> None:
    broken = []
    for where, found in shown_imports().items():
        for module, name in found:
            try:
                imported = importlib.import_module(module)
                if name and name != "*":
                    getattr(imported, name)
            except (ImportError, AttributeError) as exc:
                broken.append(f"{where}: {module}:{name}: {exc}")
    assert broken == []


def test_the_scan_sees_the_readme_and_the_example() -> None:
    shown = shown_imports()
    assert ("handles", "HandleManager") in shown["README.md"] or any(
        m == "handles" for m, _ in shown["README.md"]
    )
    assert any(m == "handles" for m, _ in shown["example_basket/app.py"])
