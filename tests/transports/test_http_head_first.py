"""The HTTP app judges a request by its head before it reads a byte of the body.

Driven as a bare ASGI app: ``receive`` records whether it was called, so a test
can see that a refused request's body was never read, and that the refusal then
asks for the connection to close (the body is still on the wire). Then the
bounds on reading a body: the per-request limit, the budget shared by all
requests, the deadline.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import HttpApp, http_app

from .http_support import ALICE, build_server

pytestmark = pytest.mark.anyio
URL = "http://127.0.0.1:8000/mcp"
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
GOOD = [
    (b"host", b"127.0.0.1:8000"),
    (b"content-type", b"application/json"),
    (b"content-length", str(len(PING)).encode()),
    (b"authorization", b"Bearer tok-alice"),
]


def authed(**options: Any) -> HttpApp:
    verifier = StaticTokenVerifier({"tok-alice": ALICE})
    return http_app(build_server(), verifier=verifier, resource_url=URL, **options)


class Exchange:
    """One request through the app: its body is handed out only when asked for."""

    def __init__(self, chunks: list[bytes], *, stall: bool = False) -> None:
        self.chunks = chunks
        self.stall = stall  # after the chunks, never send the rest
        self.reads = 0
        self.stalled = anyio.Event()  # set once the app took every chunk and asks for more
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""

    async def receive(self) -> MutableMapping[str, Any]:
        self.reads += 1
        if self.chunks:
            chunk = self.chunks.pop(0)
            more = bool(self.chunks) or self.stall
            return {"type": "http.request", "body": chunk, "more_body": more}
        if self.stall:
            self.stalled.set()
            await anyio.sleep_forever()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = dict(message["headers"])
        else:
            self.body += message.get("body", b"")

    async def run(
        self, app: HttpApp, headers: list[tuple[bytes, bytes]], method: str = "POST"
    ) -> Exchange:
        scope = {"type": "http", "method": method, "path": "/mcp", "headers": headers}
        with anyio.fail_after(10):
            await app(scope, self.receive, self.send)
        return self


def without(name: bytes) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in GOOD if k != name]


def replaced(name: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
    return [*without(name), (name, value)]


REFUSED_FROM_THE_HEAD = [
    pytest.param(replaced(b"host", b"evil.example"), "POST", 403, "evil.example", id="host"),
    pytest.param([*GOOD, (b"origin", b"http://evil.example")], "POST", 403, "evil", id="origin"),
    pytest.param(without(b"authorization"), "POST", 401, "Authentication required", id="token"),
    pytest.param(replaced(b"authorization", b"Bearer x"), "POST", 401, "invalid", id="bad-token"),
    pytest.param(GOOD, "PUT", 405, "POST", id="method"),
    pytest.param(replaced(b"content-type", b"text/plain"), "POST", 415, "text/plain", id="type"),
    pytest.param(without(b"content-type"), "POST", 415, "none", id="no-type"),
    pytest.param(replaced(b"content-length", b"4194305"), "POST", 413, "4194305", id="size"),
    pytest.param(without(b"host"), "POST", 400, "no Host", id="no-host"),
    pytest.param([*GOOD, (b"host", b"127.0.0.1")], "POST", 400, "host header", id="two-hosts"),
    pytest.param([*GOOD, GOOD[3]], "POST", 400, "authorization header", id="two-tokens"),
    pytest.param(
        [*GOOD, (b"origin", b"http://localhost"), (b"origin", b"http://evil.example")],
        "POST",
        400,
        "origin header",
        id="two-origins",
    ),
]


@pytest.mark.parametrize(("headers", "method", "status", "text"), REFUSED_FROM_THE_HEAD)
async def test_refused_from_the_head_without_reading_the_body(
    headers: list[tuple[bytes, bytes]], method: str, status: int, text: str
) -> None:
    exchange = await Exchange([PING]).run(authed(), headers, method)
    assert exchange.status == status
    assert text.lower() in exchange.body.decode().lower()
    assert exchange.reads == 0
    assert exchange.headers[b"connection"] == b"close"


async def test_a_refusal_without_a_body_keeps_the_connection() -> None:
    headers = [(b"host", b"127.0.0.1:8000")]
    exchange = await Exchange([]).run(authed(), headers, "GET")
    assert exchange.status == 405
    assert b"connection" not in exchange.headers


async def test_a_401_without_credentials_names_no_error_code() -> None:
    """RFC 6750 §3.1: no ``error`` when the request carried no credentials."""
    exchange = await Exchange([PING]).run(authed(), without(b"authorization"))
    challenge = exchange.headers[b"www-authenticate"].decode()
    assert challenge.startswith("Bearer ")
    assert "error=" not in challenge
    assert 'resource_metadata="' in challenge
    wrong = await Exchange([PING]).run(authed(), replaced(b"authorization", b"Bearer x"))
    assert wrong.headers[b"www-authenticate"].startswith(b'Bearer error="invalid_token"')


async def test_a_good_request_is_served() -> None:
    exchange = await Exchange([PING]).run(authed(), GOOD)
    assert (exchange.status, exchange.body) == (200, b'{"jsonrpc":"2.0","id":1,"result":{}}')


async def test_content_type_parameters_are_accepted() -> None:
    headers = replaced(b"content-type", b"Application/JSON; charset=utf-8")
    assert (await Exchange([PING]).run(authed(), headers)).status == 200


async def test_a_body_that_grows_past_the_limit_is_413_and_closes() -> None:
    headers = [*without(b"content-length"), (b"transfer-encoding", b"chunked")]
    exchange = await Exchange([b"x" * 600, b"x" * 600]).run(authed(max_body_bytes=1000), headers)
    assert exchange.status == 413
    assert b"1000-byte limit" in exchange.body
    assert exchange.headers[b"connection"] == b"close"


async def test_a_stalled_body_is_408_and_closes() -> None:
    exchange = Exchange([PING[:10]], stall=True)
    await exchange.run(authed(body_timeout=0.2), GOOD)
    assert exchange.status == 408
    assert b"within 0.2 s" in exchange.body
    assert exchange.headers[b"connection"] == b"close"


async def test_bodies_share_one_budget_and_release_it() -> None:
    """Two stalled bodies hold the budget; a third request gets 503; once they time out,
    their bytes are released and a request is served again."""
    app = authed(max_body_bytes=1000, max_buffered_bytes=1500, body_timeout=5)
    stalled = [Exchange([b"x" * 750], stall=True) for _ in range(2)]
    third = Exchange([PING])
    async with anyio.create_task_group() as tg:
        for exchange in stalled:
            tg.start_soon(exchange.run, app, GOOD)
        with anyio.fail_after(10):
            for exchange in stalled:  # each took its chunk and waits
                await exchange.stalled.wait()
        await third.run(app, GOOD)
        assert third.status == 503
        assert b"1500 bytes of request bodies" in third.body
        assert third.headers[b"retry-after"] == b"1"
        tg.cancel_scope.cancel()
    again = await Exchange([PING]).run(app, GOOD)
    assert again.status == 200


async def test_large_bodies_leave_a_quarter_of_the_budget_to_small_ones() -> None:
    app = authed(max_body_bytes=200_000, max_buffered_bytes=400_000, body_timeout=5)
    stalled = [Exchange([b"x" * 100_000, b"x" * 50_000], stall=True) for _ in range(3)]
    async with anyio.create_task_group() as tg:
        for exchange in stalled[:2]:
            tg.start_soon(exchange.run, app, GOOD)
        with anyio.fail_after(10):
            for exchange in stalled[:2]:  # both hold 150,000 bytes and wait
                await exchange.stalled.wait()
        assert app._budget.held == 300_000
        refused = await stalled[2].run(app, GOOD)  # 300,000 is the large bodies' share
        assert refused.status == 503
        small = await Exchange([PING]).run(app, GOOD)
        assert small.status == 200
        tg.cancel_scope.cancel()
    assert app._budget.held == 0


async def test_the_budget_is_released_after_every_outcome() -> None:
    app = authed(max_body_bytes=1000, max_buffered_bytes=1000, body_timeout=0.2)
    await Exchange([b"x" * 900], stall=True).run(app, GOOD)  # 408
    await Exchange([b"x" * 900, b"x" * 200]).run(app, GOOD)  # 413
    await Exchange([b"x" * 900]).run(app, GOOD)  # served: a parse error
    for _ in range(3):
        assert (await Exchange([PING]).run(app, GOOD)).status == 200
    assert app._budget.held == 0


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_body_bytes <= max_buffered_bytes"):
        http_app(build_server(), principal=ALICE, max_body_bytes=10, max_buffered_bytes=5)
    with pytest.raises(ValueError, match="body_timeout"):
        http_app(build_server(), principal=ALICE, body_timeout=0)
