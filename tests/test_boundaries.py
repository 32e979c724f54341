"""The house's walls: which part of the code may import which.

- the handle layer (``handles/*.py``) stands alone: it imports neither the MCP core
  (``handles.server``, ``handles.transports``) nor what joins the two;
- ``stores`` imports nothing of ``handles``;
- the core imports from the handle layer only ``handles.errors`` and ``handles.principal``
  (and the neutral ``handles._awaitables``, ``handles._charges``, ``handles._docstrings``
  and ``handles._version``, which import nothing of ``handles``);
- only ``handles/stateful.py`` and ``handles/integrations/`` join the two wings
  (``handles/__init__.py`` names the core's classes too, but imports them on first use).

The imports are read from the source, so a violation fails here before anyone runs it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ("handles.server", "handles.transports")
JOINS = ("handles.stateful", "handles.integrations")
#: Old import paths kept for one release; each only re-exports a core module.
SHIMS = {"handles.tools", "handles.jsonrpc", "handles.auth"}
#: Leaves that both wings use; they import nothing of handles.
NEUTRAL = {"handles._awaitables", "handles._charges", "handles._docstrings", "handles._version"}
CORE_MAY_USE = {"handles.errors", "handles.principal", *NEUTRAL}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """The modules ``path`` imports, relative ones resolved; ``from x import y`` gives x, x.y."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def within(module: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def handle_layer() -> list[Path]:
    return [
        p
        for p in sources("handles")
        if (name := module_name(p)) != "handles"
        and not within(name, CORE + JOINS)
        and name not in SHIMS
    ]


def core() -> list[Path]:
    return [p for p in sources("handles") if within(module_name(p), CORE)]


def is_handle_layer(module: str) -> bool:
    return (
        within(module, ("handles",))
        and module != "handles"
        and not within(module, CORE + JOINS)
        and module.split(".")[:2] != ["handles", "__init__"]
    )


def test_the_handle_layer_imports_no_core_and_no_join() -> None:
    crossing = {
        module_name(p): sorted(m for m in imports(p) if within(m, CORE + JOINS))
        for p in handle_layer()
    }
    assert {k: v for k, v in crossing.items() if v} == {}
    assert len(crossing) >= 9  # errors, principal, kinds, ids, handle, manager, _guard, ...


def test_neutral_modules_import_nothing_of_handles() -> None:
    for name in NEUTRAL:
        path = ROOT / (name.replace(".", "/") + ".py")
        assert [m for m in imports(path) if within(m, ("handles",))] == []


def test_stores_import_nothing_of_handles() -> None:
    crossing = {
        module_name(p): sorted(m for m in imports(p) if within(m, ("handles",)))
        for p in sources("stores")
    }
    assert {k: v for k, v in crossing.items() if v} == {}


def test_the_core_uses_only_errors_and_principal_of_the_handle_layer() -> None:
    crossing = {
        module_name(p): sorted(
            m
            for m in imports(p)
            if is_handle_layer(m) and not within(m, CORE_MAY_USE) and m not in SHIMS
        )
        for p in core()
    }
    assert {k: v for k, v in crossing.items() if v} == {}


def test_only_the_joins_import_both_wings() -> None:
    both = []
    for p in sources("handles"):
        name = module_name(p)
        if within(name, JOINS) or name == "handles" or name in SHIMS:
            continue
        found = imports(p)
        uses_core = any(within(m, CORE) for m in found)
        uses_layer = any(is_handle_layer(m) and not within(m, CORE_MAY_USE) for m in found)
        if uses_core and uses_layer:
            both.append(name)
    assert both == []


def test_the_reader_sees_relative_imports() -> None:
    """The checks above are only as good as the import reader: it must see ``..`` imports."""
    found = imports(ROOT / "handles/server/tools.py")
    assert "handles.errors" in found
    assert "handles.server.content" in found


def loaded_after(statement: str) -> list[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return out.stdout.split()


@pytest.mark.parametrize(
    "statement",
    ["import handles.manager", "from handles import HandleKind, HandleManager, Principal"],
)
def test_the_handle_layer_loads_without_the_core(statement: str) -> None:
    loaded = loaded_after(statement)
    assert "handles.manager" in loaded
    assert [m for m in loaded if within(m, CORE + JOINS)] == []


def test_the_core_still_loads_on_first_use() -> None:
    loaded = loaded_after("import handles; handles.Server")
    assert "handles.server.dispatch" in loaded
