"""The command line: flags, each also read from an environment variable.

Only what the chosen transport and store need is imported, so a stdio server on
the in-memory store starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from handles import Principal, Server
from handles.ids import secret_keys_from_environment
from stores import MemoryStore, Store

from .app import build_server
from .logs import configure_logging

__all__ = ["HTTP_RATE_LIMIT", "load_tokens", "main", "make_store", "parse_args", "rate_limit"]

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
        "--log-level",
        default=_env("BASKET_LOG_LEVEL", "INFO"),
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level; INFO logs one line per tool call (BASKET_LOG_LEVEL)",
    )
    add(
        "--rate-limit",
        type=int,
        default=_optional_int("BASKET_RATE_LIMIT"),
        help="tool calls per minute per caller, 0 for none (BASKET_RATE_LIMIT); "
        f"default {HTTP_RATE_LIMIT} over HTTP, none on stdio (one local user)",
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


HTTP_RATE_LIMIT = 600
"""Tool calls per minute per caller over HTTP unless ``--rate-limit`` says otherwise."""


def _optional_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else None
    except ValueError:
        raise SystemExit(f"{name}: expected a whole number, got {value[:20]!r}") from None


def rate_limit(args: argparse.Namespace) -> int:
    """Calls per minute per caller: the flag, else 600 over HTTP and none on stdio."""
    if args.rate_limit is not None:
        return max(0, int(args.rate_limit))
    return HTTP_RATE_LIMIT if args.http else 0


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


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    configure_logging("WARNING" if args.command == "demo" else args.log_level)
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
                secret_keys=secret_keys_from_environment(),
                idle_ttl=args.basket_idle_ttl,
                max_ttl=args.basket_max_ttl,
                quota=args.basket_quota,
                rate_limit=rate_limit(args),
            )
        except ValueError as exc:
            raise SystemExit(f"example_basket: {exc}") from None
        # What start-up built (modules, schemas, validators) lives as long as the
        # process: keep it out of the collector's generations, so that collections
        # only walk what serving allocates (the gc docs' advice for long-lived
        # servers).
        gc.freeze()
        if args.http:
            await _serve_http(server, args)
        else:
            from handles.transports.stdio import serve_stdio

            await serve_stdio(server, principal=Principal.from_environment())


async def _serve_http(server: Server, args: argparse.Namespace) -> None:
    from handles.transports.auth import StaticTokenVerifier
    from handles.transports.http import DEFAULT_ALLOWED_HOSTS, DEFAULT_ALLOWED_ORIGINS, serve_http

    tokens = load_tokens(args.tokens)
    hosts, origins = list(DEFAULT_ALLOWED_HOSTS), list(DEFAULT_ALLOWED_ORIGINS)
    origins += [o.strip() for o in args.allowed_origins.split(",") if o.strip()]
    options: dict[str, Any] = {"allowed_hosts": hosts, "allowed_origins": origins}
    if tokens:
        options["verifier"] = StaticTokenVerifier(tokens)
        if args.host not in _LOOPBACK:
            hosts.append(args.host)
        logger.info("serving %d token(s) on http://%s:%d/mcp", len(tokens), args.host, args.port)
    elif args.host not in _LOOPBACK:
        raise SystemExit(
            f"example_basket: --host {args.host[:60]} needs --tokens (or BASKET_TOKENS): "
            "without authentication the demo serves one local principal on 127.0.0.1 only"
        )
    else:
        principal = Principal.from_environment()
        options["principal"] = principal
        logger.warning(
            "no --tokens: every request is served as the one local principal %r, "
            "on http://127.0.0.1:%d/mcp only",
            principal.subject,
            args.port,
        )
    await serve_http(server, host=args.host, port=args.port, log_level="warning", **options)


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _is_file(value: str) -> bool:
    """Whether ``value`` names a file; a long inline token list is too long for a name."""
    try:
        return Path(value).is_file()
    except OSError:
        return False


def load_tokens(value: str | None) -> dict[str, str]:
    """``token:subject`` pairs, comma- or newline-separated, inline or in a file."""
    if not value:
        return {}
    text = Path(value).read_text() if _is_file(value) else value
    tokens: dict[str, str] = {}
    for entry in text.replace("\n", ",").split(","):
        token, sep, subject = entry.strip().partition(":")
        if not entry.strip():
            continue
        if not sep or not token or not subject:
            shown = entry.strip()[:4] + "…"
            raise SystemExit(
                f"--tokens: expected 'token:subject' entries, got one starting {shown!r}"
            )
        tokens[token] = subject.strip()
    return tokens
