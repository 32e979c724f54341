"""Google-style docstrings into a description and per-parameter text."""

from __future__ import annotations

import inspect

from hypothesis import given, settings
from hypothesis import strategies as st

from handles.server._docstrings import split_docstring


def test_empty() -> None:
    assert split_docstring("") == ("", {})


def test_summary_only_keeps_every_paragraph() -> None:
    doc = "First line.\n\nSecond paragraph\nwrapped.\n"
    assert split_docstring(doc) == ("First line.\n\nSecond paragraph\nwrapped.", {})


def test_args_with_types_continuations_and_stars() -> None:
    def f() -> None:
        """Do the thing.

        More detail.

        Args:
            plain: Plain text.
            typed (int): With a type.
            wrapped: Starts here
                and continues: with a colon
                over lines.
            empty:
                Description on the next line.
            *args: Star args.
            **kwargs: Keyword args.

        Returns:
            Something, which is not an argument.
        Raises:
            ValueError: never an argument either.
        """

    assert split_docstring(inspect.getdoc(f) or "") == (
        "Do the thing.\n\nMore detail.",
        {
            "plain": "Plain text.",
            "typed": "With a type.",
            "wrapped": "Starts here and continues: with a colon over lines.",
            "empty": "Description on the next line.",
            "args": "Star args.",
            "kwargs": "Keyword args.",
        },
    )


def test_arguments_and_parameters_are_synonyms() -> None:
    for header in ("Args:", "Arguments:", "Parameters:"):
        assert split_docstring(f"S.\n\n{header}\n    a: A.\n") == ("S.", {"a": "A."})


def test_other_sections_end_the_description_and_hold_no_args() -> None:
    doc = "S.\n\nExample:\n    x: 1\nNote:\n    y: 2\nArgs:\n    a: A.\nYields:\n    b: no.\n"
    assert split_docstring(doc) == ("S.", {"a": "A."})


def test_an_indented_header_is_not_a_section() -> None:
    doc = "S.\n    Args:\n    a: still description.\n"
    assert split_docstring(doc) == (doc.strip(), {})


def test_blank_lines_inside_args_are_skipped() -> None:
    assert split_docstring("S.\n\nArgs:\n    a: A.\n\n    b: B.\n") == (
        "S.",
        {"a": "A.", "b": "B."},
    )


@settings(deadline=None, max_examples=60)
@given(st.text())
def test_never_raises_and_the_description_is_stripped(doc: str) -> None:
    description, args = split_docstring(doc)
    assert description == description.strip()
    assert all(isinstance(key, str) and key for key in args)
