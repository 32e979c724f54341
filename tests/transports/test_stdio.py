"""stdio on the wire: the demo server as a real subprocess, driven through its raw pipes.

One server process per backend (asyncio, trio) serves the whole module. Every test
reads exactly the messages it expects, so a stray message (a response to a
notification, a late response to a cancelled request) shows up as a wrong id in the
next test, or as leftover output when the fixture closes stdin at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .demo_server import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[2]
WAIT = 10.0
"""Upper bound for any single read; a bound on waiting, never a timing assertion."""
MAX_LINE = 100_000
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "1.2.3"}}
ALL_VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
Message = dict[str, Any]


class RawServer:
    """The demo server as a subprocess, with line-level access to its stdin and stdout."""

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        env = {**os.environ, "HANDLES_PRINCIPAL": "raw-tester", "PYTHONUNBUFFERED": "1"}
        with log.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.transports.demo_server", *args],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.buffer = b""
        self.transcript = bytearray()
        """Everything the server wrote to stdout."""

    def write(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send(self, message: Message) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def receive(self) -> Message:
        """The next message the server writes (each must be one line of JSON)."""
        deadline = time.monotonic() + WAIT
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.stdout], [], [], max(remaining, 0))
            if not ready:
                raise AssertionError(f"no message from the server within {WAIT} s")
            chunk = os.read(self.stdout.fileno(), 1 << 20)
            if not chunk:
                raise AssertionError(f"the server closed stdout; buffered: {self.buffer!r}")
            self.buffer += chunk
            self.transcript += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: Message = json.loads(line)
        return message

    def request(self, id: str | int, method: str, params: Message | None = None) -> Message:
        message: Message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.receive()
        assert reply.get("id") == id and type(reply["id"]) is type(id), reply
        return reply

    def close(self) -> tuple[int, bytes]:
        """Close stdin; return the exit code and whatever the server still wrote.

        The server must close stdout and exit by itself within ``WAIT`` seconds.
        """
        self.stdin.close()
        deadline = time.monotonic() + WAIT
        rest = [self.buffer]
        while True:
            ready, _, _ = select.select([self.stdout], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise AssertionError(f"the server was still running {WAIT} s after EOF")
            if not (chunk := os.read(self.stdout.fileno(), 1 << 20)):
                break
            rest.append(chunk)
            self.transcript += chunk
        self.buffer = b""
        return self.process.wait(timeout=max(deadline - time.monotonic(), 0.1)), b"".join(rest)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pipe in (self.stdin, self.stdout):
            with contextlib.suppress(BrokenPipeError):
                pipe.close()


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RawServer]:
    backend = request.param
    log = tmp_path_factory.mktemp("stdio") / f"{backend}.log"
    raw = RawServer(log, "--backend", backend, "--max-line-bytes", str(MAX_LINE))
    try:
        yield raw
        code, rest = raw.close()
        assert rest == b"", f"unexpected output after the last test: {rest[:500]!r}"
        assert code == 0
        assert b"secret" not in raw.transcript  # in no response, to any test
        assert b"RuntimeError: secret detail" in log.read_bytes()  # only in the log
    finally:
        raw.kill()


def ok(id: str | int, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error(id: str | int | None, code: int, message: str, data: Any = None) -> Message:
    body: Message = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": body}


def modern(**params: Any) -> Message:
    return {**params, "_meta": {**MODERN_META, **params.pop("_meta", {})}}


def assert_ping_works(server: RawServer, id: str | int = "ping-after") -> None:
    assert server.request(id, "ping") == ok(id, {})


# -- malformed input ----------------------------------------------------------------------


def test_unparseable_line_is_a_parse_error_with_a_null_id(server: RawServer) -> None:
    server.write(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
    assert server.receive() == error(None, -32700, "Parse error: the message is not valid JSON")
    assert_ping_works(server)


def test_invalid_utf8_is_a_parse_error(server: RawServer) -> None:
    server.write(b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n')
    assert server.receive() == error(None, -32700, "Parse error: the message is not valid JSON")
    assert_ping_works(server)


@pytest.mark.parametrize(
    ("line", "id", "text"),
    [
        pytest.param(
            b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
            None,
            "Invalid Request: expected one JSON object, got a batch (JSON array)",
            id="batch",
        ),
        pytest.param(b"[]", None, "expected one JSON object, got a batch (JSON array)", id="empty"),
        pytest.param(b"42", None, "Invalid Request: expected one JSON object, got int", id="int"),
        pytest.param(b'"ping"', None, "expected one JSON object, got str", id="string"),
        pytest.param(b'{"jsonrpc":"2.0","id":5}', 5, '"method" must be a string', id="no-method"),
        pytest.param(
            b'{"jsonrpc":"2.0","id":"m","method":7}', "m", '"method" must be a string', id="int-m"
        ),
        pytest.param(
            b'{"id":6,"method":"ping"}', 6, '"jsonrpc" must be "2.0"', id="no-jsonrpc-field"
        ),
        pytest.param(
            b'{"jsonrpc":"1.0","id":"v","method":"ping"}', "v", '"jsonrpc" must be "2.0"', id="1.0"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
            None,
            '"id" must be a string or an integer',
            id="null-id",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
            None,
            '"id" must be a string or an integer',
            id="float-id",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
            None,
            '"id" must be a string or an integer',
            id="bool-id",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":8,"method":"ping","params":[1,2]}',
            8,
            '"params" must be an object',
            id="params-array",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":"p","method":"tools/list","params":"x"}',
            "p",
            '"params" must be an object',
            id="params-string",
        ),
    ],
)
def test_invalid_requests_get_minus_32600(
    server: RawServer, line: bytes, id: str | int | None, text: str
) -> None:
    server.write(line + b"\n")
    reply = server.receive()
    assert reply["id"] == id and type(reply["id"]) is type(id)
    assert reply["error"]["code"] == -32600
    message = reply["error"]["message"]
    assert message.startswith("Invalid Request: ") and message.endswith(text)
    assert set(reply) == {"jsonrpc", "id", "error"} and reply["jsonrpc"] == "2.0"
    assert_ping_works(server)


@pytest.mark.parametrize("size", [MAX_LINE + 1, 3 * 256 * 1024], ids=["one-read", "many-reads"])
def test_an_oversized_line_is_refused_and_the_next_one_served(server: RawServer, size: int) -> None:
    padding = "x" * (size - 60)
    line = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "ping", "params": {"p": padding}})
    assert len(line) > MAX_LINE
    server.write(line.encode() + b"\n")
    expected = f"Invalid Request: the message exceeds the {MAX_LINE}-byte limit"
    assert server.receive() == error(None, -32600, expected)
    assert_ping_works(server)


def test_blank_lines_are_ignored(server: RawServer) -> None:
    server.write(b"\n   \n\r\n")
    assert_ping_works(server)


# -- ids and notifications ----------------------------------------------------------------


@pytest.mark.parametrize(
    "id",
    ["abc", "1", "", 0, 1, -7, 2**63 + 1],
    ids=["str", "digits", "empty", "0", "1", "neg", "big"],
)
def test_ids_are_echoed_with_their_type(server: RawServer, id: str | int) -> None:
    # ``request`` checks the echoed id's value and type.
    assert server.request(id, "ping") == ok(id, {})


def test_string_and_integer_ids_are_distinct(server: RawServer) -> None:
    server.send({"jsonrpc": "2.0", "id": "1", "method": "ping"})
    server.send({"jsonrpc": "2.0", "id": 1, "method": "nope"})
    replies = [server.receive(), server.receive()]
    replies.sort(key=lambda reply: type(reply["id"]).__name__)
    assert replies == [error(1, -32601, "Method not found: nope"), ok("1", {})]


def test_notifications_never_get_a_response(server: RawServer) -> None:
    for method in (
        "notifications/initialized",
        "notifications/unknown",
        "tools/list",  # a request method sent without an id is a notification too
        "tools/call",
    ):
        server.send({"jsonrpc": "2.0", "method": method, "params": modern(name="crash")})
    server.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nope"}}
    )
    # The next message is the answer to the ping: nothing was written for the notifications.
    assert_ping_works(server, "after-notifications")


# -- the two eras over the pipe -----------------------------------------------------------


def test_legacy_initialize_echoes_a_known_version(server: RawServer) -> None:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    assert server.request(1, "initialize", params) == ok(
        1,
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "demo", "version": "1.2.3"},
            "instructions": "Demo tools for tests.",
        },
    )
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert_ping_works(server, 2)


def test_legacy_initialize_counter_offers_the_latest_legacy_version(server: RawServer) -> None:
    reply = server.request("init", "initialize", {"protocolVersion": "2099-01-01"})
    assert reply["result"]["protocolVersion"] == "2025-11-25"


def test_legacy_tools_list_has_no_modern_fields(server: RawServer) -> None:
    reply = server.request(3, "tools/list")  # no params at all, as the SDK sends it
    result = reply["result"]
    assert set(result) == {"tools", "nextCursor"}
    assert [tool["name"] for tool in result["tools"]] == ["add", "make_point"]


def test_legacy_tools_call_has_no_modern_fields(server: RawServer) -> None:
    reply = server.request(4, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert reply == ok(
        4,
        {
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"result": 3},
            "isError": False,
        },
    )


def test_modern_tools_list_is_cacheable_and_names_the_server(server: RawServer) -> None:
    result = server.request(5, "tools/list", modern())["result"]
    assert [tool["name"] for tool in result.pop("tools")] == ["add", "make_point"]
    assert result == {
        "nextCursor": result["nextCursor"],
        "resultType": "complete",
        "ttlMs": 60_000,
        "cacheScope": "public",
        "_meta": SERVER_INFO,
    }
    assert isinstance(result["nextCursor"], str)


def test_modern_tools_call_result(server: RawServer) -> None:
    reply = server.request(6, "tools/call", modern(name="add", arguments={"a": 40, "b": 2}))
    assert reply == ok(
        6,
        {
            "content": [{"type": "text", "text": "42"}],
            "structuredContent": {"result": 42},
            "isError": False,
            "resultType": "complete",
            "_meta": SERVER_INFO,
        },
    )


def test_server_discover(server: RawServer) -> None:
    assert server.request("d", "server/discover", modern()) == ok(
        "d",
        {
            "supportedVersions": ALL_VERSIONS,
            "capabilities": {"tools": {}, "logging": {}},
            "ttlMs": 60_000,
            "cacheScope": "public",
            "instructions": "Demo tools for tests.",
            "resultType": "complete",
            "_meta": SERVER_INFO,
        },
    )


def test_modern_request_without_client_capabilities_is_invalid_params(server: RawServer) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    assert server.request(7, "tools/list", {"_meta": meta}) == error(
        7,
        -32602,
        "params._meta is missing required key(s): io.modelcontextprotocol/clientCapabilities",
    )


def test_unknown_modern_version_is_minus_32022(server: RawServer) -> None:
    meta = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    assert server.request(8, "tools/list", {"_meta": meta}) == error(
        8,
        -32022,
        "Unsupported protocol version",
        {"supported": ALL_VERSIONS, "requested": "2099-01-01"},
    )


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/list"])
def test_removed_and_unknown_methods_are_not_found_in_the_modern_era(
    server: RawServer, method: str
) -> None:
    assert server.request(9, method, modern()) == error(9, -32601, f"Method not found: {method}")


def test_modern_initialize_is_not_found_and_lists_the_versions(server: RawServer) -> None:
    reply = server.request(10, "initialize", modern(protocolVersion="2026-07-28"))
    assert reply == error(10, -32601, "Method not found: initialize", {"supported": ALL_VERSIONS})


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_an_invalid_cursor_is_invalid_params(server: RawServer, era: str) -> None:
    params = modern(cursor="garbage") if era == "modern" else {"cursor": "garbage"}
    assert server.request(11, "tools/list", params) == error(
        11, -32602, "Invalid cursor: call tools/list without one"
    )


def test_listing_walks_every_page(server: RawServer) -> None:
    names: list[str] = []
    cursor: str | None = None
    for page in range(1, 20):
        params = modern() if cursor is None else modern(cursor=cursor)
        result = server.request(f"page-{page}", "tools/list", params)["result"]
        assert 1 <= len(result["tools"]) <= 2
        names += [tool["name"] for tool in result["tools"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert page >= 3
    assert names == TOOL_NAMES


# -- tools over the pipe ------------------------------------------------------------------


def test_bad_arguments_are_a_tool_error(server: RawServer) -> None:
    reply = server.request(12, "tools/call", modern(name="add", arguments={"a": 1, "b": 200}))
    assert reply["result"]["content"] == [
        {"type": "text", "text": "Input validation error in add: b: must be at most 50, got 200."}
    ]
    assert reply["result"]["isError"] is True


def test_unknown_tool_is_invalid_params(server: RawServer) -> None:
    reply = server.request(13, "tools/call", modern(name="nope", arguments={}))
    assert reply == error(13, -32602, "Unknown tool: nope")


def test_a_crash_is_generic_and_the_detail_stays_in_the_log(server: RawServer) -> None:
    reply = server.request(14, "tools/call", modern(name="crash"))
    assert reply["result"]["content"] == [
        {
            "type": "text",
            "text": "crash failed because of an internal error in the server. "
            "The details are in the server's log; try again later.",
        }
    ]
    assert "secret detail" not in json.dumps(reply)
    deadline = time.monotonic() + WAIT
    while b"RuntimeError: secret detail" not in server.log.read_bytes():
        assert time.monotonic() < deadline, "the traceback never reached stderr"
        time.sleep(0.01)


def test_principal_comes_from_the_environment(server: RawServer) -> None:
    reply = server.request(15, "tools/call", {"name": "whoami"})
    assert reply["result"]["structuredContent"] == {"result": "raw-tester"}


def test_a_reply_larger_than_the_pipe_buffer_arrives_whole(server: RawServer) -> None:
    size = 1_000_000
    reply = server.request(16, "tools/call", {"name": "big", "arguments": {"size": size}})
    assert reply["result"]["content"] == [{"type": "text", "text": "x" * size}]
    assert_ping_works(server)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_progress_notifications_carry_the_token(server: RawServer, era: str) -> None:
    token: str | int = "tok" if era == "legacy" else 77
    params: Message = {
        "name": "progress",
        "arguments": {"steps": 2},
        "_meta": {"progressToken": token},
    }
    server.send({"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": params})
    if era == "modern":
        params["_meta"].update(MODERN_META)
    messages = [server.receive() for _ in range(3)]
    assert messages[:2] == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": token,
                "progress": step,
                "total": 2,
                "message": f"step {step}",
            },
        }
        for step in (1, 2)
    ]
    assert messages[2]["id"] == 17
    assert messages[2]["result"]["content"] == [{"type": "text", "text": "done after 2 steps"}]


def test_cancelled_request_gets_no_response_and_the_next_one_works(server: RawServer) -> None:
    params = modern(name="slow", arguments={"steps": 1}, _meta={"progressToken": "slow"})
    server.send({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": params})
    progress = server.receive()
    assert progress["method"] == "notifications/progress"  # the tool is running now
    cancel = {"requestId": "slow-1", "reason": "test"}
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    # The tool saw the cancellation (it counts them) ...
    reply = server.request(
        "count", "tools/call", modern(name="cancelled", arguments={"at_least": 1})
    )
    assert reply["result"]["structuredContent"] == {"result": 1}
    # ... and no response for "slow-1" ever comes: not before these, nor at EOF (the fixture).
    assert_ping_works(server, "after-cancel")


# -- end of input -------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_exits_by_itself_on_eof_after_answering_an_unterminated_last_line(
    tmp_path: Path, backend: str
) -> None:
    raw = RawServer(tmp_path / "eof.log", "--backend", backend)
    try:
        assert raw.request(1, "ping") == ok(1, {})
        raw.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')  # no newline before EOF
        code, rest = raw.close()  # waits at most WAIT seconds for the exit
    finally:
        raw.kill()
    assert code == 0
    assert [json.loads(line) for line in rest.splitlines()] == [ok(2, {})]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancelling_a_request_mid_write_strands_no_other_reply(
    tmp_path: Path, backend: str
) -> None:
    # "big" answers with far more than a pipe holds, so while this test does not read,
    # its reply is still being written; "crash" then queues its reply behind it.
    raw = RawServer(tmp_path / "strand.log", "--backend", backend)
    size = 1_000_000
    try:
        raw.send({"jsonrpc": "2.0", "id": "A", "method": "tools/call", "params": _big(size)})
        select.select([raw.stdout], [], [], WAIT)
        raw.buffer = os.read(raw.stdout.fileno(), 1)  # "A" is being written now
        raw.send({"jsonrpc": "2.0", "id": "C", "method": "tools/call", "params": {"name": "crash"}})
        deadline = time.monotonic() + WAIT
        while b"tool crash failed" not in raw.log.read_bytes():  # "C" has queued its reply
            assert time.monotonic() < deadline, "crash never ran"
            time.sleep(0.01)
        cancel = {"requestId": "A"}
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        # The reply being written when "A" was cancelled still ends its line, and the
        # reply queued behind it is not stranded.
        first, second = raw.receive(), raw.receive()
        assert first["id"] == "A" and len(first["result"]["content"][0]["text"]) == size
        assert second["id"] == "C" and second["result"]["isError"] is True
        code, rest = raw.close()
    finally:
        raw.kill()
    assert (code, rest) == (0, b"")


def _big(size: int) -> Message:
    return {"name": "big", "arguments": {"size": size}}
