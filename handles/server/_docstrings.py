"""The core's name for the docstring splitter, which lives beside the handle layer.

``handles._docstrings`` imports nothing but the standard library, so the tool
helpers of every front end (``handles.verbs``) and the core share it.
"""

from __future__ import annotations

from .._docstrings import split_docstring

__all__ = ["split_docstring"]
