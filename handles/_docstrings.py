"""Split a Google-style docstring into the tool description and per-parameter text."""

from __future__ import annotations

import re

__all__ = ["split_docstring"]

_SECTION = re.compile(r"(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):")
_ARG = re.compile(r"(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)")
_ARG_SECTIONS = ("Args", "Arguments", "Parameters")


def split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Return the text before the first section, and ``Args:`` entries by name.

    An entry is ``name: text`` (or ``name (type): text``); more-indented lines
    that follow continue it.
    """
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent = -1
    for line in doc.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if indent == 0 and _SECTION.fullmatch(stripped):
            section, current, entry_indent = stripped[:-1], None, -1
        elif section is None:
            description.append(line)
        elif section in _ARG_SECTIONS and stripped:
            entry = _ARG.fullmatch(stripped)
            if entry and (entry_indent < 0 or indent <= entry_indent):
                current, entry_indent = entry.group(1).lstrip("*"), indent
                args[current] = entry.group(2).strip()
            elif current is not None:
                args[current] = f"{args[current]} {stripped}".strip()
    return "\n".join(description).strip(), args
