"""The docs/examples modules, loaded by path (docs/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def load(name: str) -> ModuleType:
    """``docs/examples/<name>.py`` as the module ``docs_examples.<name>``, loaded once."""
    module_name = f"docs_examples.{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def fastmcp_example() -> ModuleType:
    return load("fastmcp_basket")


def sdk_example() -> ModuleType:
    return load("sdk_basket")
