"""Requests from a tool to the client (2025 era) over the stream transport.

``elicitation/create`` and ``sampling/createMessage`` go out during the call and
their answers come back by id; without the capability, or in 2026-07-28, the tool
gets a clear "not supported". A timeout or a cancelled call tells the client and
forgets the request: a late answer is then refused like any stray response.
"""

from __future__ import annotations

from typing import Any

import pytest

from handles.principal import Principal
from handles.server.client_requests import PendingRequests
from handles.transports.memory import MemoryClient, connect_memory

from .asking_support import FORM, build_server, legacy_init, modern_meta

pytestmark = pytest.mark.anyio
ALICE = Principal("alice")


async def call(client: MemoryClient, id: int, name: str, **params: Any) -> None:
    body = {"name": name, **params}
    await client.send({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": body})


def text(response: dict[str, Any]) -> str:
    (block,) = response["result"]["content"]
    return str(block["text"])


async def asked(client: MemoryClient, method: str) -> dict[str, Any]:
    request = await client.receive()
    assert request["method"] == method, request
    assert isinstance(request["id"], str) and len(request["id"]) > 16
    return request


async def answer(client: MemoryClient, request: dict[str, Any], result: dict[str, Any]) -> None:
    await client.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


async def test_elicitation_is_sent_awaited_and_answered() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={}))
        await call(client, 1, "ask")
        request = await asked(client, "elicitation/create")
        assert request["params"] == {
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": FORM,
        }
        await answer(client, request, {"action": "accept", "content": {"name": "Grace"}})
        assert text(await client.receive()) == "accept {'name': 'Grace'}"
        await call(client, 2, "ask")
        await answer(client, await asked(client, "elicitation/create"), {"action": "decline"})
        assert text(await client.receive()) == "decline None"


async def test_an_older_legacy_version_gets_no_mode_field() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        init = {**legacy_init(elicitation={}), "protocolVersion": "2025-06-18"}
        await client.request(0, "initialize", init)
        await call(client, 1, "ask")
        request = await asked(client, "elicitation/create")
        assert "mode" not in request["params"]
        await answer(client, request, {"action": "cancel"})
        assert text(await client.receive()) == "cancel None"


async def test_sampling_is_sent_and_its_answer_read() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(sampling={}))
        await call(client, 1, "think")
        request = await asked(client, "sampling/createMessage")
        assert request["params"] == {
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is 2 + 2?"}}],
            "maxTokens": 5,
            "systemPrompt": "Be brief.",
        }
        result = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m1"}
        await answer(client, request, result)
        assert text(await client.receive()) == "m1: 4"


async def test_without_the_capability_the_tool_is_told_so() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(sampling={}))
        await call(client, 1, "ask")
        reply = await client.receive()
        assert reply["result"]["isError"] is True
        assert text(reply) == (
            "This tool needs to ask the user, but the client did not declare the elicitation "
            "capability."
        )
        await call(client, 2, "sure")  # confirm falls back instead
        assert text(await client.receive()) == "unavailable"


async def test_url_only_elicitation_is_not_form_elicitation() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={"url": {}}))
        await call(client, 1, "ask")
        assert text(await client.receive()) == (
            "This tool needs to ask the user with a form, but the client declared only URL-mode "
            "elicitation."
        )


async def test_the_modern_era_never_sends_requests() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        caps: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
        await call(client, 1, "ask", _meta=modern_meta(**caps))
        assert text(await client.receive()) == (
            "This tool tried to ask the user during the call, which protocol 2026-07-28 does "
            "not allow (it asks through an input-required result instead)."
        )


async def test_a_client_error_answer_is_reported() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={}))
        await call(client, 1, "ask")
        request = await asked(client, "elicitation/create")
        error = {"code": -32601, "message": "Method not found"}
        await client.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        assert text(await client.receive()) == (
            'The client does not support the elicitation/create request: "Method not found"'
        )


async def test_a_timeout_cancels_the_request_and_forgets_it() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={}))
        await call(client, 1, "ask", arguments={"seconds": 0.01})
        request = await asked(client, "elicitation/create")
        cancelled = await client.receive()
        assert cancelled == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "timed out"},
        }
        reply = await client.receive()
        assert reply["result"]["isError"] is True
        assert text(reply).startswith(
            "The client did not answer the elicitation/create request within 0.01 s"
        )
        await answer(client, request, {"action": "accept", "content": {"name": "late"}})
        stray = await client.receive()  # no one waits for it any more
        assert stray["error"]["code"] == -32600


async def test_a_cancelled_call_tells_the_client_and_forgets_its_request() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={}))
        await call(client, 1, "ask")
        request = await asked(client, "elicitation/create")
        await client.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        assert await client.receive() == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "the tool call was cancelled"},
        }
        await answer(client, request, {"action": "decline"})
        stray = await client.receive()  # the call got no response; the answer has no taker
        assert stray["error"]["code"] == -32600
        assert (await client.request(2, "ping"))["result"] == {}


async def test_the_client_may_cancel_our_request_instead_of_answering() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={}))
        for id, tool, outcome in [
            (1, "ask", "The client cancelled the elicitation/create request."),
            (2, "sure", "cancel"),
        ]:
            await call(client, id, tool)
            request = await asked(client, "elicitation/create")
            cancel = {"requestId": request["id"], "reason": "the user closed the dialog"}
            await client.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            reply = await client.receive()
            assert reply["id"] == id and text(reply) == outcome


async def test_confirm_in_both_eras() -> None:
    async with connect_memory(build_server(), ALICE) as client:
        await client.request(0, "initialize", legacy_init(elicitation={}))
        await call(client, 1, "sure")
        request = await asked(client, "elicitation/create")
        assert request["params"]["requestedSchema"] == {
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "title": "Go"}},
            "required": ["confirm"],
        }
        await answer(client, request, {"action": "accept", "content": {"confirm": True}})
        assert text(await client.receive()) == "accept"

        caps: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
        await call(client, 2, "sure", _meta=modern_meta(**caps))
        first = (await client.receive())["result"]
        assert first["resultType"] == "input_required"
        assert first["requestState"] == "v1"
        assert first["inputRequests"]["confirm"]["params"]["message"] == "Go ahead?"
        yes = {"action": "accept", "content": {"confirm": True}}
        again = {"inputResponses": {"confirm": yes}, "requestState": "v1"}
        await call(client, 3, "sure", _meta=modern_meta(**caps), **again)
        assert text(await client.receive()) == "accept"
        stale = {"inputResponses": {"confirm": yes}, "requestState": "v0"}
        await call(client, 4, "sure", _meta=modern_meta(**caps), **stale)
        assert (await client.receive())["result"]["resultType"] == "input_required"
        await call(client, 5, "sure", _meta=modern_meta())  # no elicitation declared
        assert text(await client.receive()) == "unavailable"


def test_an_answer_is_taken_only_from_the_principal_asked() -> None:
    pending = PendingRequests("r1")
    id, waiter = pending.open(ALICE)
    assert id.startswith("r1-") and pending.is_ours({"id": id})
    response = {"jsonrpc": "2.0", "id": id, "result": {}}
    assert not pending.answer(response, Principal("mallory"))
    assert not waiter.done.is_set()
    assert pending.answer(response, ALICE) and waiter.answer == response
    pending.close(id)
    assert len(pending) == 0 and not pending.answer(response, ALICE)
