"""The command line: flags, each also read from an environment variable.

The settings are declared once, in ``SETTINGS``, and read and checked by
``example_basket.config``: a bad value in a flag or a variable stops the server
with one line, and ``--help`` works whatever the environment holds. Only what the
chosen transport and store need is imported, so a stdio server on the in-memory
store starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from handles import Principal, Server
from stores import MemoryStore, Store

from .app import build_server
from .config import (
    ConfigError,
    Setting,
    Source,
    boolean,
    choice,
    environment_help,
    integer,
    load_settings,
    seconds,
    secret_keys,
    subject,
)
from .logs import configure_logging

__all__ = [
    "HTTP_RATE_LIMIT",
    "SETTINGS",
    "load_tokens",
    "main",
    "make_parser",
    "make_store",
    "parse_args",
    "rate_limit",
]

logger = logging.getLogger("example_basket")

PROG = "mcp-handles-basket"

_DESCRIPTION = """\
The basket demo MCP server: a small shop whose baskets are state handles.
Serves MCP over stdio by default, Streamable HTTP at /mcp with --http.
'demo' runs a guided walk-through against a server of its own.

Every flag can also be set by its environment variable; a flag wins over its
variable, and an empty variable counts as unset."""

_EPILOG = """\
environment only (secrets and identities stay out of the process list):
{environment}

lifetimes:
  A basket expires --basket-idle-ttl seconds after its last use, or
  --basket-max-ttl seconds after it was created, whichever comes first; so the
  idle timeout cannot be longer than the absolute lifetime.

examples:
  {prog} demo
  {prog}
  {prog} --http --port 8000
  {prog} --http --tokens tok-a:alice,tok-b:bob --store redis://localhost:6379/0
  HANDLES_SECRET=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))') \\
    BASKET_STORE=redis://localhost:6379/0 {prog} --http
"""

HTTP_RATE_LIMIT = 600
"""Tool calls per minute per caller over HTTP unless ``--rate-limit`` says otherwise."""

_STORE_SCHEMES = ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
_HOST = re.compile(r"[A-Za-z0-9._:%\[\]-]{1,253}")
_ORIGIN = re.compile(r"https?://[^/\s,]+")


def _store(text: str) -> str:
    if text != "memory" and not text.startswith(_STORE_SCHEMES):
        raise ValueError
    return text


def _host(text: str) -> str:
    if not _HOST.fullmatch(text):
        raise ValueError
    return text


def _origins(text: str) -> str:
    for origin in (o.strip() for o in text.split(",")):
        if origin and origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(f"{origin[:60]!r} is not one")
    return text


def _tokens(text: str) -> str:
    _parse_tokens(text)
    return text


def _hosts(text: str) -> str:
    for host in (h.strip() for h in text.split(",")):
        if host and host != "*" and not _HOST.fullmatch(host):
            raise ValueError(f"{host[:60]!r} is not one")
    return text


def _resource_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError
    return text


def _urls(text: str) -> str:
    for url in (u.strip() for u in text.split(",")):
        if url and not _ORIGIN.match(url):
            raise ValueError(f"{url[:60]!r} is not one")
    return text


SETTINGS: tuple[Setting[Any], ...] = (
    Setting(
        "http",
        boolean,
        "1/0, true/false, yes/no or on/off",
        "serve Streamable HTTP at /mcp instead of stdio",
        env="BASKET_HTTP",
        flag="--http",
        default="0",
        shown_default="stdio",
        switch=True,
    ),
    Setting(
        "host",
        _host,
        "a host name or an IP address",
        "HTTP host to bind",
        env="BASKET_HOST",
        flag="--host",
        default="127.0.0.1",
    ),
    Setting(
        "port",
        integer(1, 65535),
        "a whole number from 1 to 65535",
        "HTTP port",
        env="BASKET_PORT",
        flag="--port",
        default="8000",
    ),
    Setting(
        "store",
        _store,
        "'memory' or a redis://, rediss://, unix://, redis+cluster:// or rediss+cluster:// URL",
        "where baskets live: 'memory' or a Redis URL",
        env="BASKET_STORE",
        flag="--store",
        default="memory",
    ),
    Setting(
        "basket_idle_ttl",
        seconds,
        "a number of seconds greater than 0",
        "seconds a basket lives without use",
        env="BASKET_IDLE_TTL",
        flag="--basket-idle-ttl",
        default="1800",
    ),
    Setting(
        "basket_max_ttl",
        seconds,
        "a number of seconds greater than 0",
        "seconds a basket lives at most, counted from its creation",
        env="BASKET_MAX_TTL",
        flag="--basket-max-ttl",
        default="86400",
    ),
    Setting(
        "basket_quota",
        integer(1),
        "a whole number, 1 or more",
        "open baskets allowed per caller",
        env="BASKET_QUOTA",
        flag="--basket-quota",
        default="500",
    ),
    Setting(
        "rate_limit",
        integer(0),
        "a whole number, 0 or more",
        "tool calls per minute per caller, counted in the store; 0 for none",
        env="BASKET_RATE_LIMIT",
        flag="--rate-limit",
        shown_default=f"{HTTP_RATE_LIMIT} over HTTP, none on stdio",
    ),
    Setting(
        "tokens",
        _tokens,
        "a file, or 'token:subject' entries separated by commas",
        "HTTP bearer tokens, each mapped to a caller",
        env="BASKET_TOKENS",
        flag="--tokens",
        secret=True,
        shown_default="none, so one local caller on 127.0.0.1 only",
    ),
    Setting(
        "allowed_origins",
        _origins,
        "comma-separated origins such as https://app.example.com, or *",
        "browser origins allowed over HTTP, besides loopback pages",
        env="BASKET_ALLOWED_ORIGINS",
        flag="--allowed-origins",
        default="",
        shown_default="pages on loopback addresses only",
    ),
    Setting(
        "allowed_hosts",
        _hosts,
        "comma-separated hosts such as mcp.example.com or gw.internal:8080, or *",
        "Host values served besides loopback, e.g. the public name behind a proxy "
        "(needs --tokens); a name without a port allows any port",
        env="BASKET_ALLOWED_HOSTS",
        flag="--allowed-hosts",
        default="",
        shown_default="loopback names only",
    ),
    Setting(
        "resource_url",
        _resource_url,
        "an absolute http(s) URL such as https://mcp.example.com/mcp",
        "the public URL of /mcp, which tokens are issued for (needs --tokens); "
        "its host is then allowed",
        env="BASKET_RESOURCE_URL",
        flag="--resource-url",
        shown_default="http://HOST:PORT/mcp",
    ),
    Setting(
        "auth_server",
        _urls,
        "comma-separated http(s) URLs",
        "authorization servers, listed in the protected-resource metadata so clients "
        "know where to get tokens",
        env="BASKET_AUTH_SERVER",
        flag="--auth-server",
        default="",
        shown_default="none",
    ),
    Setting(
        "log_level",
        choice("DEBUG", "INFO", "WARNING", "ERROR"),
        "DEBUG, INFO, WARNING or ERROR",
        "stderr log level; INFO logs one line per tool call",
        env="BASKET_LOG_LEVEL",
        flag="--log-level",
        default="INFO",
    ),
    Setting(
        "tuned",
        boolean,
        "1/0, true/false, yes/no or on/off",
        "tune for benchmarks: batched log writes, no source lookups in log records, "
        "start-up objects frozen out of the garbage collector",
        env="BASKET_TUNED",
        flag="--tuned",
        default="0",
        shown_default="off",
        switch=True,
    ),
    Setting(
        "secret_keys",
        secret_keys,
        "comma-separated keys, oldest first, each at least 32 bytes, none a placeholder, "
        "blank or one character repeated",
        "handle signing keys, comma-separated, oldest first; the newest signs",
        env="HANDLES_SECRET",
        secret=True,
        shown_default="an ephemeral key, so handles die with the process",
    ),
    Setting(
        "principal",
        subject,
        "1 to 256 characters, no control characters",
        "who the stdio (and token-less HTTP) caller is",
        env="HANDLES_PRINCIPAL",
        shown_default="the OS user name",
    ),
)
"""Every setting of the demo, flags and environment variables alike."""


def _lifetime_rule(values: dict[str, Any], sources: dict[str, Source]) -> None:
    if values["basket_idle_ttl"] > values["basket_max_ttl"]:
        raise ConfigError(
            f"the idle timeout ({sources['basket_idle_ttl']}) is longer than the absolute "
            f"lifetime ({sources['basket_max_ttl']}): a basket's idle timeout cannot be "
            "longer than its absolute lifetime"
        )


def _proxy_rule(values: dict[str, Any], sources: dict[str, Source]) -> None:
    for name in ("allowed_hosts", "resource_url"):
        if values[name] and not values["tokens"]:
            raise ConfigError(
                f"{sources[name]} needs --tokens (or BASKET_TOKENS): without authentication "
                "the demo serves one local principal, to loopback Hosts only"
            )


def _prog() -> str:
    return "python -m example_basket" if sys.argv[0].endswith("__main__.py") else PROG


def _version() -> str:
    import handles

    return handles.__version__


def make_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The parser with the demo's own arguments; ``parse_args`` adds a flag per setting."""
    prog = prog or _prog()
    parser = argparse.ArgumentParser(
        prog=prog,
        description=_DESCRIPTION,
        epilog=_EPILOG.format(prog=prog, environment=environment_help(SETTINGS)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=["serve", "demo"],
        default="serve",
        help="serve (the default) runs the server; demo walks through it",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"{PROG} {_version()} (Python {platform.python_version()})",
    )
    return parser


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> argparse.Namespace:
    """Flags, then environment variables, then defaults; a bad value exits with one line."""
    parser = make_parser()
    try:
        namespace, values, _ = load_settings(
            SETTINGS,
            argv,
            os.environ if environ is None else environ,
            parser=parser,
            checks=[_lifetime_rule, _proxy_rule],
        )
    except ConfigError as exc:
        raise SystemExit(f"{parser.prog}: {exc}") from None
    return argparse.Namespace(command=namespace.command, **values)


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
    configure_logging("WARNING" if args.command == "demo" else args.log_level, tuned=args.tuned)
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
                secret_keys=args.secret_keys,
                idle_ttl=args.basket_idle_ttl,
                max_ttl=args.basket_max_ttl,
                quota=args.basket_quota,
                rate_limit=rate_limit(args),
            )
        except ValueError as exc:
            raise SystemExit(f"example_basket: {exc}") from None
        if args.tuned:
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
    from handles.transports.http import (
        DEFAULT_ALLOWED_HOSTS,
        DEFAULT_ALLOWED_ORIGINS,
        endpoint_url,
        serve_http,
    )

    tokens = load_tokens(args.tokens)
    hosts, origins = list(DEFAULT_ALLOWED_HOSTS), list(DEFAULT_ALLOWED_ORIGINS)
    origins += _listed(args.allowed_origins)
    hosts += _listed(args.allowed_hosts)
    options: dict[str, Any] = {"allowed_hosts": hosts, "allowed_origins": origins}
    if args.resource_url:
        options["resource_url"] = args.resource_url
        hosts.append(urlsplit(args.resource_url).netloc.rpartition("@")[2])
    if tokens:
        options["verifier"] = StaticTokenVerifier(tokens)
        options["authorization_servers"] = _listed(args.auth_server)
        if args.host not in _LOOPBACK:
            hosts.append(f"[{args.host}]" if ":" in args.host else args.host)  # IPv6 in brackets
        url = args.resource_url or endpoint_url(args.host, args.port)
        logger.info("serving %d token(s) on %s", len(tokens), url)
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


def _listed(value: str) -> list[str]:
    return [entry.strip() for entry in value.split(",") if entry.strip()]


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _is_file(value: str) -> bool:
    """Whether ``value`` names a file; a long inline token list is too long for a name."""
    try:
        return Path(value).is_file()
    except OSError:
        return False


def load_tokens(value: str | None) -> dict[str, str]:
    """``token:subject`` pairs, comma- or newline-separated, inline or in a file."""
    try:
        return _parse_tokens(value)
    except ValueError as exc:
        raise SystemExit(f"--tokens: expected 'token:subject' entries, {exc}") from None


def _parse_tokens(value: str | None) -> dict[str, str]:
    if not value:
        return {}
    text = Path(value).read_text() if _is_file(value) else value
    tokens: dict[str, str] = {}
    for entry in text.replace("\n", ",").split(","):
        token, sep, subject = entry.strip().partition(":")
        if not entry.strip():
            continue
        if not sep or not token or not subject.strip():
            raise ValueError(f"got one starting {entry.strip()[:4] + '…'!r}")
        tokens[token] = subject.strip()
    return tokens
