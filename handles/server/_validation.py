"""Turn pydantic validation errors into one sentence a model can act on.

"limit: must be at most 50, got 200" rather than pydantic's multi-line dump
with its documentation links. What the caller sent is echoed quoted and cut:
values to 60 characters, unusual parameter names likewise, and at most five
problems are described.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from ..errors import cut

__all__ = ["describe_errors", "shorten"]

_MAX_CLAUSES = 5
_MAX_MESSAGE = 200
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,60}")

_TEMPLATES: dict[str, str] = {
    "missing": "is required",
    "extra_forbidden": "is not a parameter of this tool",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "string_too_short": "must be at least {min_length} characters long",
    "string_too_long": "must be at most {max_length} characters long",
    "too_short": "must have at least {min_length} items",
    "too_long": "must have at most {max_length} items",
    "int_parsing": "must be an integer",
    "int_type": "must be an integer",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "literal_error": "must be one of {expected}",
    "enum": "must be one of {expected}",
    "string_pattern_mismatch": "must match the pattern {pattern}",
}


def shorten(value: Any) -> str:
    """``value`` as JSON, cut to 60 characters with an ellipsis (``errors.cut``)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text)


def describe_errors(error: ValidationError) -> str:
    """One ``field: problem, got value`` clause per error (five at most), joined by ``"; "``."""
    errors = error.errors(include_url=False)
    clauses = [_describe(e) for e in errors[:_MAX_CLAUSES]]
    if len(errors) > _MAX_CLAUSES:
        clauses.append(f"and {len(errors) - _MAX_CLAUSES} more")
    return "; ".join(clauses)


def _location(parts: Any) -> str:
    """``items.1.sku``; a key that is not a plain name is quoted and cut."""
    shown = (
        str(part) if isinstance(part, int) or _PLAIN_KEY.fullmatch(part) else shorten(part)
        for part in parts
    )
    return ".".join(shown)


def _describe(error: Any) -> str:
    location = _location(error["loc"]) or "arguments"
    template = _TEMPLATES.get(error["type"])
    context = error.get("ctx") or {}
    problem = template.format(**context) if template else _plain(error["msg"])
    if error["type"] in ("missing", "extra_forbidden") and location != "arguments":
        return f"{location}: {problem}"
    return f"{location}: {problem}, got {shorten(error.get('input'))}"


def _plain(message: str) -> str:
    """Pydantic's message, lower-cased at the start, for types we do not map."""
    message = message[:1].lower() + message[1:]
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"
