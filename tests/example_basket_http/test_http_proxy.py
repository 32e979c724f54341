"""The demo behind a reverse proxy: its public name and resource URL, from flags or env vars.

A real ``python -m example_basket --http`` process; the requests carry the ``Host`` a
proxy would pass on (``proxy_set_header Host $host``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from handles.transports.http import endpoint_url

from .support import ROOT, SECRET, TOKENS, WAIT, demo_server

PUBLIC = "https://mcp.example.com/mcp"
METADATA = "/.well-known/oauth-protected-resource/mcp"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.mark.parametrize("how", ["flags", "env"])
def test_a_public_resource_url_and_auth_server(how: str) -> None:
    env = {"BASKET_TOKENS": TOKENS}
    args: tuple[str, ...] = ()
    if how == "flags":
        args = ("--resource-url", PUBLIC, "--auth-server", "https://id.example.com")
        args += ("--allowed-hosts", "gw.internal:8080")
    else:
        env |= {
            "BASKET_RESOURCE_URL": PUBLIC,
            "BASKET_AUTH_SERVER": "https://id.example.com",
            "BASKET_ALLOWED_HOSTS": "gw.internal:8080",
        }
    with demo_server(*args, env=env) as server, httpx.Client(timeout=WAIT) as http:
        base = server.url.removesuffix("/mcp")
        public = {"host": "mcp.example.com"}
        metadata = http.get(base + METADATA, headers=public)
        assert metadata.status_code == 200
        assert metadata.json()["resource"] == PUBLIC
        assert metadata.json()["authorization_servers"] == ["https://id.example.com"]
        anonymous = http.post(server.url, json=PING, headers=public)
        assert anonymous.status_code == 401
        challenge = anonymous.headers["www-authenticate"]
        assert challenge == f'Bearer resource_metadata="https://mcp.example.com{METADATA}"'
        for host in ("mcp.example.com", "gw.internal:8080", f"127.0.0.1:{server.port}"):
            headers = {"host": host, "authorization": "Bearer tok-a"}
            assert http.post(server.url, json=PING, headers=headers).status_code == 200, host
        for host in ("evil.example", "gw.internal:9999"):
            headers = {"host": host, "authorization": "Bearer tok-a"}
            refused = http.post(server.url, json=PING, headers=headers)
            assert refused.status_code == 403
            assert host in refused.json()["error"]["message"]


def refused_start(*args: str, **env: str) -> str:
    """Run the demo, which must exit at once with an error; its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "example_basket", *args],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", ""), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode != 0
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr
    return stderr


def test_a_bad_resource_url_is_refused_with_a_message() -> None:
    args = ("--http", "--port", "1", "--resource-url", "mcp.example.com/mcp")
    stderr = refused_start(*args, BASKET_TOKENS=TOKENS, HANDLES_SECRET=SECRET)
    assert "--resource-url 'mcp.example.com/mcp': expected an absolute http(s) URL" in stderr


@pytest.mark.parametrize(
    ("flag", "value"), [("--allowed-hosts", "mcp.example.com"), ("--resource-url", PUBLIC)]
)
def test_proxy_flags_need_tokens(flag: str, value: str) -> None:
    stderr = refused_start("--http", "--port", "1", flag, value, HANDLES_SECRET=SECRET)
    assert f"{flag} {value!r} needs --tokens" in stderr


@pytest.mark.parametrize(
    ("secret", "why"),
    [(" , ,", "blank"), ("a" * 32, "one character repeated"), ("key-one-" * 5 + ",", "blank")],
)
def test_a_weak_handles_secret_stops_the_server(secret: str, why: str) -> None:
    assert why in refused_start(HANDLES_SECRET=secret)


def test_ipv6_endpoint_urls_are_bracketed() -> None:
    assert endpoint_url("::1", 7205) == "http://[::1]:7205/mcp"
    assert endpoint_url("[::1]", 7205) == "http://[::1]:7205/mcp"
    assert endpoint_url("127.0.0.1", 80, "/x") == "http://127.0.0.1:80/x"
