"""A small server exercising every part of the core, for the stdio and interop tests.

Run it as ``python -m tests.transports.demo_server`` (from the repository root). Options:
``--page-size`` (default 2, so ``tools/list`` has several pages), ``--max-line-bytes``
and ``--backend asyncio|trio``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Annotated

import anyio
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from handles.principal import Principal
from handles.server.content import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.server.tools import ToolError
from handles.transports.stdio import DEFAULT_MAX_LINE_BYTES, serve_stdio

__all__ = ["PNG", "WAV", "Point", "build_server", "main"]

PNG = b"\x89PNG\r\n\x1a\n-demo-image"
WAV = b"RIFF-demo-audio"
SECRET = "secret detail"


class Point(BaseModel):
    """A point in the plane."""

    x: int
    y: int


class Stats(TypedDict):
    count: int
    mean: float


class _Cancellations:
    """Counts ``slow`` calls that were cancelled, so a test can see the cancel arrive."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = anyio.Event()

    def record(self) -> None:
        self.count += 1
        self.changed.set()
        self.changed = anyio.Event()


TOOL_NAMES = [
    "add",
    "make_point",
    "stats",
    "fail",
    "crash",
    "slow",
    "progress",
    "cancelled",
    "whoami",
    "big",
    "media",
]
"""The tools ``build_server`` registers, in ``tools/list`` order."""


def build_server(page_size: int = 2) -> Server:
    """The demo server; each call builds a fresh one (with its own cancellation count)."""
    # Replies of a few MB test the pipe; the result cap is tested in test_output_hygiene.
    server = Server(
        "demo",
        "1.2.3",
        instructions="Demo tools for tests.",
        page_size=page_size,
        max_result_bytes=8 * 1024 * 1024,
    )
    cancellations = _Cancellations()

    @server.tool
    def add(
        a: Annotated[int, Field(ge=0, le=50)],
        b: Annotated[int, Field(ge=0, le=50)] = 1,
    ) -> int:
        """Add two small numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    @server.tool(
        title="Make a point",
        annotations={"readOnlyHint": True, "idempotentHint": True},
        icons=[{"src": "https://example.com/point.png", "mimeType": "image/png"}],
    )
    async def make_point(x: int, y: int) -> Point:
        """Build a point from its coordinates."""
        return Point(x=x, y=y)

    @server.tool
    def stats(values: list[float]) -> Stats:
        """Count and average some numbers."""
        if not values:
            raise ToolError("values is empty: pass at least one number.")
        return {"count": len(values), "mean": sum(values) / len(values)}

    @server.tool
    def fail(reason: str) -> str:
        """Always fail with a domain error that names the reason."""
        raise ToolError(f"Cannot do that: {reason}. Try another reason.")

    @server.tool
    def crash() -> str:
        """Always fail with an unexpected error."""
        raise RuntimeError(SECRET)

    @server.tool
    async def slow(steps: int, ctx: Context) -> str:
        """Report progress for each step, then wait until cancelled."""
        try:
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancellations.record()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    @server.tool
    async def progress(steps: int, ctx: Context) -> str:
        """Report progress for each step, then finish."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"done after {steps} steps"

    @server.tool
    async def cancelled(at_least: int) -> int:
        """Wait (up to 5 s) until ``slow`` was cancelled ``at_least`` times; return the count."""
        with anyio.move_on_after(5):
            while cancellations.count < at_least:
                await cancellations.changed.wait()
        return cancellations.count

    @server.tool
    def whoami(principal: Principal) -> str:
        """Name the caller."""
        return principal.subject

    @server.tool
    def big(size: Annotated[int, Field(ge=0, le=10_000_000)]) -> str:
        """Return ``size`` characters, to fill the output pipe."""
        return "x" * size

    @server.tool
    def media() -> list[Content]:
        """Return one block of every content type."""
        return [
            TextContent("hello"),
            ImageContent(PNG, "image/png"),
            AudioContent(WAV, "audio/wav"),
            ResourceLink("file:///demo.txt", "demo.txt", mime_type="text/plain"),
            EmbeddedResource("file:///inline.txt", text="inline text", mime_type="text/plain"),
            EmbeddedResource("file:///blob.bin", blob=b"\x00\x01", mime_type="application/data"),
        ]

    return server


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.transports.demo_server")
    parser.add_argument("--page-size", type=int, default=2)
    parser.add_argument("--max-line-bytes", type=int, default=DEFAULT_MAX_LINE_BYTES)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    options = parser.parse_args(argv)
    server = build_server(options.page_size)

    async def serve() -> None:
        await serve_stdio(server, max_line_bytes=options.max_line_bytes)

    anyio.run(serve, backend=options.backend)


if __name__ == "__main__":
    main()
