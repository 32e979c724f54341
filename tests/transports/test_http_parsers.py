"""The request-head bounds on both of uvicorn's HTTP/1.1 parsers, on real sockets.

``serve_http`` serves with httptools when it is installed (the ``http`` extra
installs it) and with h11 otherwise; ``guarded_protocol`` holds both to the same
bounds. h11 bounds the head's size itself (``h11_max_incomplete_event_size``);
for httptools the guard counts the head's bytes, which must not count a body
that arrives in the same read, nor a pipelined request's head twice.
"""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import SocketStream

from handles.transports._uvicorn import guarded_protocol
from handles.transports.http import http_app

from .http_support import ALICE, Reader, build_server, raw_post, serving
from .test_http_client import PARSERS

pytestmark = pytest.mark.anyio
WAIT = 10.0
"""Upper bound for each exchange (a bound, not a timing assertion)."""
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def connect(url: str) -> tuple[SocketStream, str]:
    host = url.removeprefix("http://").removesuffix("/mcp")
    address, port = host.split(":")
    return await anyio.connect_tcp(address, int(port)), host


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_head_past_max_header_bytes_gets_400_and_is_closed(parser: str) -> None:
    app = http_app(build_server(), principal=ALICE)
    async with serving(app, max_header_bytes=4096, parser=parser) as url:
        with anyio.fail_after(WAIT):
            stream, host = await connect(url)
            async with stream:
                head = f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n".encode()
                await stream.send(head + b"X-Pad: " + b"a" * 8000 + b"\r\n")
                status, body = await Reader(stream).response()
                assert status == 400
                if parser == "httptools":  # h11 answers uvicorn's own text
                    assert b"larger than 4096 bytes" in body
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await stream.receive()  # closed by the server


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_body_in_the_heads_read_is_not_counted_as_head(parser: str) -> None:
    app = http_app(build_server(), principal=ALICE)
    padded = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 30_000 + b'"}}'
    async with serving(app, max_header_bytes=4096, parser=parser) as url:
        with anyio.fail_after(WAIT):
            stream, host = await connect(url)
            async with stream:
                await stream.send(raw_post(host, padded))  # one write: head and body
                status, body = await Reader(stream).response()
    assert status == 200
    assert body == b'{"jsonrpc":"2.0","id":1,"result":{}}'


@pytest.mark.parametrize("parser", PARSERS)
async def test_pipelined_requests_are_all_answered(parser: str) -> None:
    app = http_app(build_server(), principal=ALICE)
    async with serving(app, header_timeout=1, parser=parser) as url:
        with anyio.fail_after(WAIT):
            stream, host = await connect(url)
            async with stream:
                reader = Reader(stream)
                await stream.send(raw_post(host, PING) * 3)
                answers = [await reader.response() for _ in range(3)]
                last = await reader.response()  # idle now: the deadline applies
    assert answers == [(200, b'{"jsonrpc":"2.0","id":1,"result":{}}')] * 3
    assert last[0] == 408


@pytest.mark.parametrize("parser", PARSERS)
async def test_each_keep_alive_request_gets_a_fresh_deadline(parser: str) -> None:
    app = http_app(build_server(), principal=ALICE)
    async with serving(app, header_timeout=3, parser=parser) as url:
        with anyio.fail_after(WAIT):
            stream, host = await connect(url)
            async with stream:
                reader = Reader(stream)
                for _ in range(3):
                    await stream.send(raw_post(host, PING))
                    assert (await reader.response())[0] == 200
                await stream.send(b"POST /mcp HTTP/1.1\r\nHost: " + host.encode())
                status, body = await reader.response()
                assert status == 408
                assert b"within 3 s" in body


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_body_that_stalls_gets_408_from_the_protocol(parser: str) -> None:
    app = http_app(build_server(), principal=ALICE, body_timeout=1)
    async with serving(app, parser=parser) as url:
        assert app.server_times_bodies  # uvicorn_config moved the deadline into the protocol
        with anyio.fail_after(WAIT):
            stream, host = await connect(url)
            async with stream:
                await stream.send(raw_post(host, PING)[:-10])  # the last 10 bytes never come
                status, body = await Reader(stream).response()
                assert status == 408
                assert body == b"Request Timeout: the body did not arrive within 1 s"
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await stream.receive()  # closed by the server


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_body_in_pieces_within_its_time_is_served(parser: str) -> None:
    app = http_app(build_server(), principal=ALICE, body_timeout=5)
    async with serving(app, parser=parser) as url:
        with anyio.fail_after(WAIT):
            stream, host = await connect(url)
            async with stream:
                request = raw_post(host, PING)
                for start in range(0, len(request), 16):
                    await stream.send(request[start : start + 16])
                    await anyio.sleep(0.01)
                status, body = await Reader(stream).response()
    assert status == 200
    assert body == b'{"jsonrpc":"2.0","id":1,"result":{}}'


async def test_the_parser_is_checked() -> None:
    with pytest.raises(ValueError, match="parser must be 'auto', 'httptools' or 'h11', got 'h2'"):
        guarded_protocol(max_connections=1, header_timeout=1, parser="h2")  # type: ignore[arg-type]
