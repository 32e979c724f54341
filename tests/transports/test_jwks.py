"""``JWTVerifier`` with keys fetched from a ``jwks_uri``, against a real JWKS server on loopback.

The server (``http.server`` in a thread) serves a JWKS document the test can change
(key rotation) or take down (503), and the issuer's RFC 8414 metadata; it counts what
it was asked. The verifier's clock is injected so that TTLs pass without waiting.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from handles.principal import Principal
from handles.transports.jwt import JWTVerifier

pytestmark = pytest.mark.anyio
AUDIENCE = "https://mcp.example.com/mcp"


class Issuer:
    """What the loopback server serves, and what it was asked."""

    def __init__(self) -> None:
        self.keys: list[RSAKey] = [RSAKey.generate_key(2048, parameters={"kid": "a"})]
        self.down = False
        self.hits: Counter[str] = Counter()
        self.url = ""

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.as_dict(private=False) for key in self.keys]}

    def token(self, key: RSAKey, sub: str = "alice", **claims: Any) -> str:
        payload = {"iss": self.url, "aud": AUDIENCE, "sub": sub, "exp": int(time.time()) + 300}
        return jwt.encode({"alg": "RS256", "kid": key.kid}, payload | claims, key)


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    state = Issuer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits[self.path] += 1
            if self.path == "/jwks" and not state.down:
                self._send(200, state.jwks())
            elif self.path == "/.well-known/oauth-authorization-server" and not state.down:
                self._send(200, {"issuer": state.url, "jwks_uri": state.url + "/jwks"})
            else:
                self._send(503 if state.down else 404, {"error": "unavailable"})

        def _send(self, status: int, document: dict[str, Any]) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def verifier(issuer: Issuer, clock: Clock, **options: Any) -> JWTVerifier:
    return JWTVerifier(
        issuer=issuer.url,
        audience=AUDIENCE,
        jwks_uri=issuer.url + "/jwks",
        allow_http_loopback=True,
        clock=clock,
        **options,
    )


async def test_keys_are_fetched_once_and_cached(issuer: Issuer) -> None:
    clock = Clock()
    v = verifier(issuer, clock)
    for _ in range(5):
        assert await v.verify_token(issuer.token(issuer.keys[0])) == Principal("alice", issuer.url)
    assert issuer.hits["/jwks"] == 1
    clock.offset = 301  # past the TTL: fetched again
    assert await v.verify_token(issuer.token(issuer.keys[0])) is not None
    assert issuer.hits["/jwks"] == 2


async def test_a_rotated_key_is_fetched_once_on_its_unknown_kid(issuer: Issuer) -> None:
    clock = Clock()
    v = verifier(issuer, clock)
    old = issuer.keys[0]
    assert await v.verify_token(issuer.token(old)) is not None
    new = RSAKey.generate_key(2048, parameters={"kid": "b"})
    issuer.keys = [old, new]  # the issuer rotates: it publishes b, then signs with it
    clock.offset = 31  # past the refetch interval, well within the TTL
    assert await v.verify_token(issuer.token(new, sub="bob")) == Principal("bob", issuer.url)
    assert issuer.hits["/jwks"] == 2
    assert await v.verify_token(issuer.token(old)) is not None  # both are held now
    assert issuer.hits["/jwks"] == 2


async def test_unknown_kids_refetch_at_most_once_per_interval(issuer: Issuer) -> None:
    clock = Clock()
    v = verifier(issuer, clock)
    assert await v.verify_token(issuer.token(issuer.keys[0])) is not None
    clock.offset = 31
    stranger = RSAKey.generate_key(2048, parameters={"kid": "zzz"})
    for _ in range(20):  # forged kids must not turn into a fetch each
        assert await v.verify_token(issuer.token(stranger)) is None
    assert issuer.hits["/jwks"] == 2
    clock.offset = 62
    assert await v.verify_token(issuer.token(stranger)) is None
    assert issuer.hits["/jwks"] == 3


async def test_cached_keys_serve_while_the_issuer_is_down(issuer: Issuer) -> None:
    clock = Clock()
    v = verifier(issuer, clock, jwks_max_stale=600)
    good = issuer.token(issuer.keys[0])
    assert await v.verify_token(good) is not None
    issuer.down = True
    clock.offset = 301  # the TTL passed; the fetch fails; the cached keys still serve
    for _ in range(10):
        assert await v.verify_token(good) is not None
    assert issuer.hits["/jwks"] == 2  # one failed try, not one per request
    clock.offset = 301 + 600 + 1  # past ttl + max_stale: refused, never served stale forever
    assert await v.verify_token(good) is None
    issuer.down = False
    clock.offset += 31
    assert await v.verify_token(good) is not None  # back, fetched again


async def test_no_keys_at_all_means_refused_and_rate_limited(issuer: Issuer) -> None:
    issuer.down = True
    clock = Clock()
    v = verifier(issuer, clock)
    for _ in range(5):
        assert await v.verify_token(issuer.token(issuer.keys[0])) is None
    assert issuer.hits["/jwks"] == 1
    issuer.down = False
    clock.offset = 31
    assert await v.verify_token(issuer.token(issuer.keys[0])) is not None


async def test_from_issuer_discovers_the_jwks_uri(issuer: Issuer) -> None:
    v = JWTVerifier.from_issuer(issuer.url, audience=AUDIENCE, allow_http_loopback=True)
    assert await v.verify_token(issuer.token(issuer.keys[0])) is not None
    assert issuer.hits["/.well-known/oauth-authorization-server"] == 1
    assert issuer.hits["/jwks"] == 1


async def test_discovery_refuses_metadata_for_another_issuer(issuer: Issuer) -> None:
    other = issuer.url.replace("127.0.0.1", "localhost")
    v = JWTVerifier.from_issuer(other, audience=AUDIENCE, allow_http_loopback=True)
    token = jwt.encode(
        {"alg": "RS256", "kid": "a"},
        {"iss": other, "aud": AUDIENCE, "sub": "x", "exp": int(time.time()) + 60},
        issuer.keys[0],
    )
    assert await v.verify_token(token) is None
    assert issuer.hits["/jwks"] == 0


@pytest.mark.parametrize(
    ("url", "allow", "message"),
    [
        ("http://127.0.0.1:1/jwks", False, "plain HTTP"),
        ("http://idp.example.com/jwks", True, "must be an https:// URL"),
        ("ftp://idp.example.com/jwks", True, "must be an https:// URL"),
    ],
)
def test_keys_must_come_over_https(url: str, allow: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JWTVerifier(
            issuer="https://idp.example.com",
            audience=AUDIENCE,
            jwks_uri=url,
            allow_http_loopback=allow,
        )
    with pytest.raises(ValueError, match="plain HTTP"):
        JWTVerifier.from_issuer("http://localhost:1", audience=AUDIENCE)


def test_an_https_jwks_uri_is_accepted_without_fetching() -> None:
    JWTVerifier(issuer="https://idp.example.com", audience=AUDIENCE, jwks_uri="https://idp/jwks")
