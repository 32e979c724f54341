"""A token-protected HTTP server in its own process, for tests that measure it from outside.

``python -m tests.transports.http_server [--max-buffered-bytes N] [--header-timeout S]
[--max-connections N] [--parser h11|httptools]`` binds a free loopback port, prints it
on stdout, then serves ``/mcp`` as ``serve_http`` does (``uvicorn_config``) with one
token, ``tok-alice``.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

import uvicorn

from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import http_app, uvicorn_config

from .http_support import ALICE, build_server

TOKEN = "tok-alice"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-buffered-bytes", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--header-timeout", type=float, default=10.0)
    parser.add_argument("--max-connections", type=int, default=512)
    parser.add_argument("--parser", choices=["auto", "h11", "httptools"], default="auto")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    app = http_app(
        build_server(),
        verifier=StaticTokenVerifier({TOKEN: ALICE}),
        resource_url=f"http://127.0.0.1:{port}/mcp",
        max_buffered_bytes=args.max_buffered_bytes,
    )
    config = uvicorn_config(
        app,
        log_config=None,
        log_level="error",
        max_connections=args.max_connections,
        header_timeout=args.header_timeout,
        parser=args.parser,
    )
    print(port, flush=True)
    await uvicorn.Server(config).serve([sock])


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
