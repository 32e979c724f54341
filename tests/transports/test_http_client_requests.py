"""Requests from a tool to a 2025-era client over Streamable HTTP (uvicorn, real sockets).

The request goes out on the ``tools/call`` POST's SSE stream; the client answers
with a new POST (202). The answer must reach the replica that asked: another
replica refuses it (400) and the call keeps waiting for the right one. A client
that leaves cancels the call, and the request is forgotten. Another principal's
answer is refused. asyncio only (uvicorn).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from handles.principal import Principal
from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import HttpApp, http_app

from .asking_support import build_server, legacy_init
from .http_support import serving

pytestmark = pytest.mark.anyio
ALICE = Principal("alice")
WAIT = 10.0
"""Upper bound for each exchange (a bound, not a timing assertion)."""
BOTH = {"accept": "application/json, text/event-stream"}
LEGACY = {**BOTH, "mcp-protocol-version": "2025-11-25"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def body(id: int | str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


class Stream:
    """One POST's SSE reply, read message by message."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.headers["content-type"] == "text/event-stream"
        self._lines = response.aiter_lines()

    async def next(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            async for line in self._lines:
                if line.startswith("data: "):
                    message: dict[str, Any] = json.loads(line[len("data: ") :])
                    return message
        raise AssertionError("the stream ended")


@asynccontextmanager
async def calling(http: httpx.AsyncClient, url: str, tool: str) -> AsyncIterator[Stream]:
    params = {"name": tool, "arguments": {}}
    request = body(1, "tools/call", params)
    async with http.stream("POST", url, json=request, headers=LEGACY) as response:
        yield Stream(response)


async def until_empty(app: HttpApp) -> None:
    with anyio.fail_after(WAIT):
        while len(app.pending):  # noqa: ASYNC110 - the table has no event to wait on
            await anyio.sleep(0.01)


async def test_the_answer_comes_back_as_a_post_to_the_replica_that_asked() -> None:
    a = http_app(build_server(), principal=ALICE, replica="a")
    b = http_app(build_server(), principal=ALICE, replica="b")
    async with serving(a) as url_a, serving(b) as url_b, httpx.AsyncClient(timeout=WAIT) as http:
        await http.post(
            url_a, json=body(0, "initialize", legacy_init(elicitation={})), headers=BOTH
        )
        async with calling(http, url_a, "ask") as stream:
            request = await stream.next()
            assert request["method"] == "elicitation/create"
            assert request["id"].startswith("a-")
            answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}

            wrong = await http.post(url_b, json=answer, headers=LEGACY)
            assert wrong.status_code == 400
            assert (
                "must reach the replica that sent the request" in wrong.json()["error"]["message"]
            )
            assert len(a.pending) == 1  # still waiting on a

            right = await http.post(url_a, json=answer, headers=LEGACY)
            assert (right.status_code, right.content) == (202, b"")
            final = await stream.next()
            assert final["id"] == 1
            assert final["result"]["content"][0]["text"] == "decline None"
        assert len(a.pending) == 0

        # b never saw the handshake: there the client declared nothing.
        reply = await http.post(url_b, json=body(2, "tools/call", {"name": "ask"}), headers=LEGACY)
        text = reply.json()["result"]["content"][0]["text"]
        assert text.endswith("the client did not declare the elicitation capability.")


async def test_a_client_that_leaves_cancels_the_call_and_its_request() -> None:
    app = http_app(build_server(), principal=ALICE, replica="a")
    async with serving(app) as url, httpx.AsyncClient(timeout=WAIT) as http:
        await http.post(url, json=body(0, "initialize", legacy_init(sampling={})), headers=BOTH)
        async with calling(http, url, "think") as stream:
            request = await stream.next()
            assert request["method"] == "sampling/createMessage"
            assert len(app.pending) == 1
        await until_empty(app)  # the stream closed: the call was cancelled
        late = {"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant"}}
        refused = await http.post(url, json=late, headers=LEGACY)
        assert refused.status_code == 400
        assert "no longer waiting" in refused.json()["error"]["message"]


async def test_a_client_that_cancels_our_request_ends_the_wait() -> None:
    app = http_app(build_server(), principal=ALICE)
    async with serving(app) as url, httpx.AsyncClient(timeout=WAIT) as http:
        await http.post(url, json=body(0, "initialize", legacy_init(elicitation={})), headers=BOTH)
        async with calling(http, url, "sure") as stream:
            request = await stream.next()
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request["id"]},
            }
            assert (await http.post(url, json=cancel, headers=LEGACY)).status_code == 202
            assert (await stream.next())["result"]["content"][0]["text"] == "cancel"
        assert len(app.pending) == 0


async def test_a_client_that_takes_only_json_cannot_be_asked() -> None:
    app = http_app(build_server(), principal=ALICE)
    async with serving(app) as url, httpx.AsyncClient(timeout=WAIT) as http:
        await http.post(url, json=body(0, "initialize", legacy_init(elicitation={})), headers=BOTH)
        json_only = {"accept": "application/json", "mcp-protocol-version": "2025-11-25"}
        reply = await http.post(url, json=body(1, "tools/call", {"name": "ask"}), headers=json_only)
        assert reply.headers["content-type"] == "application/json"
        assert reply.json()["result"]["content"][0]["text"] == (
            "This tool needs to ask the user, but this connection cannot carry a request to the "
            "client (over HTTP the client must accept text/event-stream)."
        )
        sure = await http.post(url, json=body(2, "tools/call", {"name": "sure"}), headers=json_only)
        assert sure.json()["result"]["content"][0]["text"] == "unavailable"


async def test_only_the_principal_asked_can_answer() -> None:
    verifier = StaticTokenVerifier({"tok-alice": ALICE, "tok-bob": Principal("bob")})
    app = http_app(build_server(), verifier=verifier, resource_url="http://127.0.0.1/mcp")
    as_alice = {"authorization": "Bearer tok-alice"}
    as_bob = {**LEGACY, "authorization": "Bearer tok-bob"}
    async with serving(app) as url, httpx.AsyncClient(timeout=WAIT, headers=as_alice) as http:
        init = body(0, "initialize", legacy_init(elicitation={}))
        await http.post(url, json=init, headers=BOTH)
        async with calling(http, url, "ask") as stream:
            request = await stream.next()
            answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}
            forged = await http.post(url, json=answer, headers=as_bob)
            assert forged.status_code == 400
            assert len(app.pending) == 1
            assert (await http.post(url, json=answer, headers=LEGACY)).status_code == 202
            assert (await stream.next())["result"]["content"][0]["text"] == "decline None"
