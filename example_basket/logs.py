"""Logging for the demo: one line per record on stderr, written in batches.

The server logs one line per tool call, so the line is on every call's path. What
the format never shows is not gathered (the caller's source line, thread and
process: the switches the logging HOWTO lists under "Optimization"), the date is
formatted once a second rather than once a record, and lines are written as
nginx's ``access_log … buffer=… flush=…`` writes them: collected for at most
``FLUSH_AFTER`` seconds (or ``MAX_BUFFER`` bytes) and written in one system call.
A warning or an error is written at once, with everything before it; whatever is
buffered is written at exit. Together this takes a call's log line from about a
sixth of an ``add_item`` over stdio to a few percent.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from threading import get_ident
from typing import TextIO

__all__ = ["FLUSH_AFTER", "MAX_BUFFER", "BufferedHandler", "LineFormatter", "configure_logging"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FLUSH_AFTER = 0.05
"""The longest a line waits in the buffer, in seconds."""
MAX_BUFFER = 64 * 1024
"""Buffered characters that make the handler write at once."""


def configure_logging(level: str, *, tuned: bool = False) -> None:
    """Log records at ``level`` and above to stderr, in ``FORMAT``.

    ``tuned`` (the demo's ``--tuned``, for benchmarks) writes lines in batches through
    ``BufferedHandler`` with ``LineFormatter``, and stops logging from looking up each
    record's source line, thread and process; otherwise this is plain
    ``logging.basicConfig``.
    """
    if not tuned:
        logging.basicConfig(level=level, format=FORMAT, stream=sys.stderr)
        return
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging._srcfile = None
    handler = BufferedHandler(sys.stderr)
    handler.setFormatter(LineFormatter(FORMAT))
    logging.basicConfig(level=level, handlers=[handler])


class BufferedHandler(logging.StreamHandler[TextIO]):
    """A ``StreamHandler`` that writes lines in batches (see the module docstring).

    The wait is a timer on the running asyncio loop. Without one (start-up, exit,
    a worker thread), a record is written at once, as ``StreamHandler`` does.
    """

    def __init__(
        self, stream: TextIO, *, flush_after: float = FLUSH_AFTER, max_buffer: int = MAX_BUFFER
    ) -> None:
        super().__init__(stream)
        self.flush_after = flush_after
        self.max_buffer = max_buffer
        self._lines: list[str] = []
        self._size = 0
        self._timer_loop: asyncio.AbstractEventLoop | None = None  # loop of the pending timer
        self._timer_thread = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:
            self.handleError(record)
            return
        self._lines.append(line)
        self._size += len(line)
        if record.levelno >= logging.WARNING or self._size >= self.max_buffer:
            self.flush()
            return
        pending = self._timer_loop
        if pending is not None and pending.is_running() and self._timer_thread == get_ident():
            return  # this thread's loop has a timer set: it writes this line too
        try:
            # On Python 3.11 this costs a getpid() system call, so only the first
            # line of each batch asks.
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop in this thread: nothing would come back for it
            self.flush()
            return
        self._timer_loop, self._timer_thread = loop, get_ident()
        loop.call_later(self.flush_after, self._on_timer)

    def flush(self) -> None:
        """Write what is buffered (``logging.shutdown`` calls this at exit)."""
        with self.lock:  # type: ignore[union-attr]  # Handler.createLock made it
            if self._lines:
                text, self._lines, self._size = "".join(self._lines), [], 0
                try:
                    self.stream.write(text)
                except Exception:
                    self.handleError(logging.makeLogRecord({"msg": "buffered log lines"}))
            super().flush()

    def _on_timer(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._timer_loop = None
            self.flush()


class LineFormatter(logging.Formatter):
    """Writes ``FORMAT`` directly; the date (default format) is rendered once a second.

    The output is ``logging.Formatter(FORMAT)``'s, exceptions and stacks included,
    without its general %-style machinery.
    """

    _second = -1
    _date = ""

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record)
        text = f"{record.asctime} {record.levelname} {record.name}: {record.message}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            text = f"{text}\n{record.exc_text}" if text[-1:] != "\n" else text + record.exc_text
        if record.stack_info:
            stack = self.formatStack(record.stack_info)
            text = f"{text}\n{stack}" if text[-1:] != "\n" else text + stack
        return text

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._date = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = second
        return f"{self._date},{int(record.msecs):03d}"
