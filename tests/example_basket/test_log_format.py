"""The demo's log formatter writes exactly what ``logging.Formatter`` would."""

from __future__ import annotations

import logging
import sys

from example_basket.cli import _FORMAT, _Formatter


def records(**options: object) -> tuple[logging.LogRecord, logging.LogRecord]:
    """Two identical records (formatting caches ``exc_text`` on the record)."""
    log = logging.getLogger("handles.server")
    first, second = (
        log.makeRecord("handles.server", logging.INFO, "f", 1, "hello %s", ("w",), **options)  # type: ignore[arg-type]
        for _ in range(2)
    )
    second.created, second.msecs = first.created, first.msecs
    return first, second


def test_same_lines_as_the_standard_formatter() -> None:
    ours = _Formatter(_FORMAT)
    standard = logging.Formatter(_FORMAT)
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    cases: list[dict[str, object]] = [
        {"exc_info": None},
        {"exc_info": exc_info},
        {"exc_info": exc_info, "sinfo": "Stack (most recent call last):\n  here"},
        {"exc_info": None, "sinfo": "Stack (most recent call last):\n  here"},
    ]
    for options in cases:
        a, b = records(**options)
        assert ours.format(a) == standard.format(b), options
