"""The demo's logging: the formatter writes what ``logging.Formatter`` would, and the
buffered handler loses no line and keeps their order."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from example_basket.logs import FORMAT, BufferedHandler, LineFormatter


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
    ours = LineFormatter(FORMAT)
    standard = logging.Formatter(FORMAT)
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


def buffered(**options: float) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = BufferedHandler(stream, **options)  # type: ignore[arg-type]
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log = logging.Logger("buffered-test", logging.INFO)  # not registered: no global state
    log.addHandler(handler)
    return log, stream


def test_without_an_event_loop_each_line_is_written_at_once() -> None:
    log, stream = buffered()
    log.info("one")
    assert stream.getvalue() == "INFO one\n"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_lines_wait_at_most_flush_after_and_keep_their_order() -> None:
    log, stream = buffered(flush_after=0.05)
    for n in range(3):
        log.info("call %d", n)
    assert stream.getvalue() == ""
    await asyncio.sleep(0.2)
    assert stream.getvalue() == "INFO call 0\nINFO call 1\nINFO call 2\n"
    log.info("later")  # a new timer after the last one fired
    await asyncio.sleep(0.2)
    assert stream.getvalue().endswith("INFO call 2\nINFO later\n")


@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.anyio
async def test_on_trio_each_line_is_written_at_once() -> None:
    log, stream = buffered(flush_after=60)
    log.info("one")
    assert stream.getvalue() == "INFO one\n"


@pytest.mark.anyio
async def test_a_warning_writes_everything_before_it_at_once() -> None:
    log, stream = buffered(flush_after=60)
    log.info("first")
    log.warning("trouble")
    assert stream.getvalue() == "INFO first\nWARNING trouble\n"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_full_buffer_is_written_at_once() -> None:
    log, stream = buffered(flush_after=60, max_buffer=100)
    for n in range(20):
        log.info("line %02d", n)
    written = stream.getvalue().splitlines()
    assert 10 <= len(written) < 20 and written == [
        f"INFO line {n:02d}" for n in range(len(written))
    ]
    for handler in log.handlers:
        handler.flush()  # what logging.shutdown does at exit
    assert stream.getvalue().splitlines() == [f"INFO line {n:02d}" for n in range(20)]


def test_the_served_demo_logs_every_call_by_exit(tmp_path: Path) -> None:
    """Over a real pipe: the lines buffered when stdin closes are written at exit."""
    calls = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "create_basket"}}
        for n in range(5)
    ]
    hello = {
        "jsonrpc": "2.0",
        "id": "i",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    lines = [json.dumps(m) for m in (hello, *calls)]
    done = subprocess.run(
        [sys.executable, "-m", "example_basket"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HANDLES_SECRET": "s" * 32},
        check=True,
    )
    assert len(done.stdout.splitlines()) == 6
    logged = [line for line in done.stderr.splitlines() if "tools/call create_basket" in line]
    assert len(logged) == 5, done.stderr[-2000:]


def test_a_timer_left_on_a_finished_loop_does_not_hold_lines_back() -> None:
    log, stream = buffered(flush_after=0.05)

    async def log_and_leave(text: str, wait: float) -> None:
        log.info(text)
        await asyncio.sleep(wait)

    asyncio.run(log_and_leave("first", 0))  # the loop ends before its timer fires
    assert stream.getvalue() == ""
    asyncio.run(log_and_leave("second", 0.2))
    assert stream.getvalue() == "INFO first\nINFO second\n"


@pytest.mark.parametrize(
    ("tuned", "expected"), [(False, "StreamHandler False"), (True, "BufferedHandler True")]
)
def test_only_the_tuned_demo_buffers_its_log(tuned: bool, expected: str) -> None:
    """The example logs as any server would; --tuned (the benchmark's) batches and trims."""
    code = (
        "import logging; from example_basket.logs import configure_logging; "
        f"configure_logging('INFO', tuned={tuned}); "
        "print(type(logging.root.handlers[0]).__name__, logging._srcfile is None)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.split() == expected.split()
