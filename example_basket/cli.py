"""The command line: flags, each also read from an environment variable.

Only what the chosen transport and store need is imported, so a stdio server on
the in-memory store starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence

import anyio

from handles import Principal, Server
from stores import MemoryStore, Store

from .app import build_server

__all__ = ["main", "make_store", "parse_args"]

logger = logging.getLogger("example_basket")


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m example_basket",
        description="The basket demo MCP server (stdio by default). "
        "Run 'python -m example_basket demo' for a guided walk-through.",
    )
    parser.add_argument("command", nargs="?", choices=["serve", "demo"], default="serve")
    add = parser.add_argument
    add(
        "--http",
        action="store_true",
        default=_env("BASKET_HTTP", "") not in ("", "0"),
        help="serve Streamable HTTP at /mcp instead of stdio (BASKET_HTTP=1)",
    )
    add("--host", default=_env("BASKET_HOST", "127.0.0.1"), help="HTTP host (BASKET_HOST)")
    add(
        "--port", type=int, default=int(_env("BASKET_PORT", "8000")), help="HTTP port (BASKET_PORT)"
    )
    add(
        "--store",
        default=_env("BASKET_STORE", "memory"),
        help="'memory', or a redis://, rediss:// or redis+cluster:// URL (BASKET_STORE)",
    )
    add(
        "--basket-idle-ttl",
        type=float,
        default=float(_env("BASKET_IDLE_TTL", "1800")),
        help="seconds a basket lives without use (BASKET_IDLE_TTL)",
    )
    add(
        "--basket-max-ttl",
        type=float,
        default=float(_env("BASKET_MAX_TTL", "86400")),
        help="seconds a basket lives at most (BASKET_MAX_TTL)",
    )
    add(
        "--basket-quota",
        type=int,
        default=int(_env("BASKET_QUOTA", "500")),
        help="open baskets allowed per caller (BASKET_QUOTA)",
    )
    add(
        "--tokens",
        default=os.environ.get("BASKET_TOKENS"),
        help="HTTP bearer tokens: a file, or 'token:subject,token:subject' (BASKET_TOKENS)",
    )
    add(
        "--allowed-origins",
        default=os.environ.get("BASKET_ALLOWED_ORIGINS", ""),
        help="comma-separated browser origins allowed over HTTP (BASKET_ALLOWED_ORIGINS)",
    )
    return parser.parse_args(argv)


def make_store(url: str) -> Store:
    """``memory`` or a Redis URL; Redis is imported only when asked for."""
    if url == "memory":
        return MemoryStore()
    if url.startswith(
        ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
    ):
        from stores.redis import RedisStore

        return RedisStore.from_url(url)
    raise SystemExit(f"--store: expected 'memory' or a redis:// URL, got {url[:60]!r}")


def _secret_keys() -> list[str] | None:
    raw = os.environ.get("HANDLES_SECRET", "")
    keys = [key.strip() for key in raw.split(",") if key.strip()]
    return keys or None


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "demo":
        from .demo import run_demo

        anyio.run(run_demo)
        return
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(_serve, args)


async def _serve(args: argparse.Namespace) -> None:
    async with make_store(args.store) as store:
        try:
            server = build_server(
                store,
                secret_keys=_secret_keys(),
                idle_ttl=args.basket_idle_ttl,
                max_ttl=args.basket_max_ttl,
                quota=args.basket_quota,
            )
        except ValueError as exc:
            raise SystemExit(f"example_basket: {exc}") from None
        if args.http:
            await _serve_http(server, args)
        else:
            from handles.transports.stdio import serve_stdio

            await serve_stdio(server, principal=Principal.from_environment())


async def _serve_http(server: Server, args: argparse.Namespace) -> None:
    raise SystemExit("example_basket: --http needs the HTTP transport, which is not built yet")
