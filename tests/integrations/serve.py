"""Serve a docs/examples basket for the tests: ``python -m tests.integrations.serve``.

``FRAMEWORK`` is ``fastmcp`` or ``sdk``; ``--http PORT`` serves streamable HTTP through
uvicorn with two bearer tokens (``tok-alice``, ``tok-bob``), else stdio; ``--store`` is
``memory`` or a redis URL; ``--mask`` sets FastMCP's ``mask_error_details``. Every log
record goes to stderr as ``LEVEL name: message``, one line each, so a test can look
for ERROR lines.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

import uvicorn

from handles import HandleManager, secret_keys_from_environment
from stores import MemoryStore, Store

from .examples import fastmcp_example, sdk_example

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


def _store(url: str) -> Store:
    if url == "memory":
        return MemoryStore()
    from stores.redis import RedisStore

    return RedisStore.from_url(url)


def _plain_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for name in list(logging.root.manager.loggerDict):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("framework", choices=["fastmcp", "sdk"])
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--store", default="memory")
    parser.add_argument("--mask", action="store_true")
    args = parser.parse_args()
    module = fastmcp_example() if args.framework == "fastmcp" else sdk_example()
    keys = secret_keys_from_environment()
    manager = HandleManager(_store(args.store), [module.basket], secret_keys=keys)
    options: dict[str, Any] = {}
    if args.framework == "fastmcp":
        if args.mask:
            options["mask_error_details"] = True
        if args.http is not None:
            from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

            claims = {t: {"client_id": "app", "sub": s, "iss": "test"} for t, s in TOKENS.items()}
            options["auth"] = StaticTokenVerifier(tokens=claims)
    elif args.http is not None:
        from mcp.server.auth.provider import AccessToken
        from mcp.server.auth.settings import AuthSettings
        from pydantic import AnyHttpUrl

        class Verifier:
            async def verify_token(self, token: str) -> AccessToken | None:
                subject = TOKENS.get(token)
                if subject is None:
                    return None
                claims = {"iss": "test"}
                return AccessToken(
                    token=token, client_id="app", scopes=[], subject=subject, claims=claims
                )

        url = f"http://127.0.0.1:{args.http}"
        options["token_verifier"] = Verifier()
        options["auth"] = AuthSettings(
            issuer_url=AnyHttpUrl(url), resource_server_url=AnyHttpUrl(f"{url}/mcp")
        )
    server = module.build(manager, **options)
    _plain_logs()
    if args.http is None:
        if args.framework == "fastmcp":
            server.run(show_banner=False)
        else:
            server.run()
        return
    app = server.http_app() if args.framework == "fastmcp" else server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
