"""Nothing internal reaches a client: a battery of hostile calls over stdio and HTTP.

The demo runs as a real process on a password-protected Redis, with a secret key
and bearer tokens. Every reply to a battery of hostile requests, before and after
Redis is killed, is searched for tracebacks, source paths, the secret, the Redis
password and the tokens; so is the server's own log, for the secrets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.redis_fixtures import running_redis_server

from .support import SECRET, demo_server

pytestmark = pytest.mark.redis
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "redis-pass-" + "p" * 20
TOKEN, OTHER_TOKEN = "leak-token-" + "a" * 20, "leak-token-" + "b" * 20
LEAKS = ("Traceback", 'File "', str(ROOT), "site-packages", SECRET, PASSWORD, TOKEN, OTHER_TOKEN)
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def battery(basket_id: str) -> list[bytes]:
    """Hostile frames: broken JSON, deep nesting, huge and odd values, forged ids."""

    def frame(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> bytes:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        return json.dumps(message).encode()

    def call(name: str, meta: dict[str, Any] | None = None, **arguments: Any) -> bytes:
        return frame(name, arguments, meta)

    forged = basket_id[:-3] + ("AAA" if not basket_id.endswith("AAA") else "BBB")
    return [
        b"{",
        b"\xff\xfe",
        b"[" * 5000 + b"]" * 5000,
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * 100 + b"]" * 100 + b"}}",
        b'{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call"}',
        b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
        call("no_such_tool\n\r\t"),
        call("search_catalog", query="m" * 100_000),
        call("search_catalog", query="zzz-no-match"),
        call("add_item", basket_id=forged, sku="MUG-12"),
        call("add_item", basket_id=basket_id, sku="../../../../etc/passwd"),
        call("add_item", basket_id=basket_id, sku="MUG-12", quantity=10**30),
        call("get_basket", basket_id="bsk_" + "\u0000" * 43),
        call("get_basket", meta=META, basket_id=basket_id),
        call("checkout", basket_id=basket_id, confirm="yes please"),
        frame("create_basket", {"__class__": 1, "x" * 300: [None] * 50}, None),
        call("list_baskets"),
        call("get_basket", basket_id=basket_id),
    ]


def assert_clean(text: str) -> None:
    for leak in LEAKS:
        assert leak not in text, (leak, text[:800])


def test_nothing_leaks_over_http(tmp_path: Path) -> None:
    env = {"BASKET_TOKENS": f"{TOKEN}:alice,{OTHER_TOKEN}:bob"}
    with running_redis_server("--requirepass", PASSWORD, directory=tmp_path) as redis:
        store = f"redis://:{PASSWORD}@127.0.0.1:{redis.port}"
        with demo_server("--store", store, env=env) as server:
            seen = _http_battery(server.url, redis.kill)
            log = server.log.read_text(errors="replace")
    assert "Retry it in a few seconds" in seen  # the battery ran with Redis dead, too
    assert_clean(seen)
    for secret in (SECRET, PASSWORD, TOKEN, OTHER_TOKEN):
        assert secret not in log


def _http_battery(url: str, kill_redis: Any) -> str:
    seen: list[str] = []
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=10) as client:

        def post(body: bytes, headers: dict[str, str]) -> httpx.Response:
            reply = client.post(url, content=body, headers=headers)
            seen.append(f"{reply.status_code} {dict(reply.headers)} {reply.text}")
            return reply

        created = post(_create(), auth).json()
        basket_id = created["result"]["structuredContent"]["basket_id"]
        odd_headers = [
            {},
            {"authorization": f"Bearer {TOKEN}x"},
            {"authorization": "Basic " + TOKEN},
            {**auth, "host": "evil.example"},
            {**auth, "origin": "https://evil.example"},
            {**auth, "mcp-protocol-version": "2026-07-28", "mcp-method": "nope"},
            {**auth, "mcp-protocol-version": "9999-01-01"},
            {**auth, "accept": "text/html"},
        ]
        for headers in odd_headers:
            post(_create(), headers)
        for frame in battery(basket_id):
            post(frame, auth)
        seen.append(client.get(url, headers=auth).text)
        seen.append(client.get(url.replace("/mcp", "/.well-known/oauth-protected-resource")).text)
        kill_redis()
        for frame in battery(basket_id):
            post(frame, auth)
    return "\n".join(seen)


def _create() -> bytes:
    params = {"name": "create_basket", "arguments": {}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()


def test_nothing_leaks_over_stdio(tmp_path: Path) -> None:
    with running_redis_server("--requirepass", PASSWORD, directory=tmp_path) as redis:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HANDLES_SECRET": SECRET,
            "HANDLES_PRINCIPAL": "alice",
            "BASKET_STORE": f"redis://:{PASSWORD}@127.0.0.1:{redis.port}",
        }
        first = _stdio([_create()], env)
        basket_id = json.loads(first.stdout)["result"]["structuredContent"]["basket_id"]
        alive = _stdio(battery(basket_id), env)
        redis.kill()
        dead = _stdio(battery(basket_id), env)
    replies = (alive.stdout + dead.stdout).decode()
    assert "temporarily unavailable" in replies
    assert len(replies.splitlines()) == 2 * len(battery(basket_id))
    assert_clean(replies)
    for secret in (SECRET, PASSWORD):
        assert secret not in (alive.stderr + dead.stderr).decode(errors="replace")


def _stdio(frames: list[bytes], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "example_basket"],
        input=b"\n".join(frame.replace(b"\n", b" ") for frame in frames) + b"\n",
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=True,
    )
