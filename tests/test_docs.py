"""The docs: every public name has a reference entry, and the settings tables are whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import handles
import stores
from example_basket.cli import SETTINGS, parse_args

ROOT = Path(__file__).resolve().parent.parent
DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def _documented() -> set[str]:
    found: set[str] = set()
    for page in DOCS:
        found |= set(re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M))
    return found


@pytest.mark.parametrize("package", [handles, stores], ids=lambda p: p.__name__)
def test_every_public_name_has_a_reference_entry(package: object) -> None:
    names = {f"{package.__name__}.{name}" for name in package.__all__}  # type: ignore[attr-defined]
    assert names - _documented() == set()


@pytest.mark.parametrize("page", ["README.md", "docs/demo.md"])
def test_the_settings_tables_name_every_variable_and_flag(page: str) -> None:
    text = (ROOT / page).read_text()
    for setting in SETTINGS:
        assert f"`{setting.env}`" in text, setting.env
        if setting.flag:
            assert f"`{setting.flag}" in text, setting.flag


@pytest.mark.parametrize("page", ["README.md", "docs/demo.md"])
def test_the_documented_placeholder_secret_is_refused(page: str) -> None:
    placeholder = re.search(r'"HANDLES_SECRET": "([^"]+)"', (ROOT / page).read_text())
    assert placeholder is not None
    with pytest.raises(SystemExit, match="placeholder"):
        parse_args([], {"HANDLES_SECRET": placeholder.group(1)})
