"""A server whose tools log to the client and ask it things, for the context tests."""

from __future__ import annotations

from typing import Any

from handles.principal import Principal
from handles.server.context import Context
from handles.server.dispatch import Server
from handles.server.protocol import LOG_LEVELS

__all__ = ["FORM", "SECRET", "build_server", "legacy_init", "modern_meta"]

SECRET = "the database password is hunter2"
FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "default": "Ada"}},
    "required": ["name"],
}


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        **extra,
    }


def legacy_init(**capabilities: Any) -> dict[str, Any]:
    return {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "test", "version": "1"},
    }


def build_server(**options: Any) -> Server:
    server = Server("asking", "1.0.0", **options)

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Log once at every level, least severe first."""
        for level in LOG_LEVELS:
            await ctx.log(level, f"at {level}", logger="chatty")  # type: ignore[arg-type]
        return "logged"

    @server.tool
    async def leaky(ctx: Context, principal: Principal) -> str:
        """Log what must not reach the client as it is."""
        try:
            raise RuntimeError(SECRET)
        except RuntimeError as exc:
            await ctx.error(exc)
        await ctx.warning({"blob": "x" * 100_000})
        await ctx.warning(principal)
        return "logged"

    @server.tool
    async def ask(ctx: Context, seconds: float = 60.0) -> str:
        """Ask the user for a name."""
        answer = await ctx.elicit("What is your name?", FORM, seconds=seconds)
        return f"{answer.action} {answer.content}"

    @server.tool
    async def think(ctx: Context) -> str:
        """Ask the client's model."""
        answer = await ctx.sample("What is 2 + 2?", max_tokens=5, system_prompt="Be brief.")
        return f"{answer.model}: {answer.text}"

    @server.tool
    async def sure(ctx: Context) -> str:
        """Ask for a yes or no (both eras)."""
        return await ctx.confirm("Go ahead?", state="v1", label="Go")

    return server
