"""Checkout confirmed by asking the user: the official client with an elicitation callback.

On 2026-07-28 (pinned, or negotiated by ``auto``) the client declares elicitation, so
checkout answers ``input_required`` with an ``elicitation/create`` request; mcp 2.3.0
runs the callback and calls again with ``inputResponses`` by itself. A legacy client
that declared elicitation is asked with ``elicitation/create`` during the call (see
``test_checkout_legacy``); one that did not is told to pass ``confirm``.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, InputRequiredResult

import handles

from .support import closed, connect, ok, refused, server_params

pytestmark = pytest.mark.anyio

SERVER_INFO = {
    "io.modelcontextprotocol/serverInfo": {"name": "example-basket", "version": handles.__version__}
}
SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Place the order"}},
    "required": ["confirm"],
}
ACCEPT = ElicitResult(action="accept", content={"confirm": True})


class User:
    """The elicitation callback: answers from a script, and remembers what it was asked."""

    def __init__(self) -> None:
        self.answers: list[ElicitResult] = []
        self.asked: list[dict[str, Any]] = []

    def will(self, *answers: ElicitResult) -> None:
        self.answers, self.asked = list(answers), []

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return self.answers.pop(0)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def user() -> User:
    return User()


@pytest.fixture(scope="module", params=["2026-07-28", "auto"])
async def client(request: pytest.FixtureRequest, user: User) -> AsyncIterator[Client]:
    async with connect(server_params("alice"), request.param, elicitation_callback=user) as c:
        yield c


def question(basket_id: str, total: str) -> dict[str, Any]:
    return {
        "mode": "form",
        "message": f"Place the order for basket {basket_id}, total {total} EUR?",
        "requestedSchema": SCHEMA,
    }


async def filled_basket(client: Client) -> tuple[str, dict[str, Any]]:
    basket_id: str = (await ok(client, "create_basket"))["basket_id"]
    await ok(client, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    shown = await ok(client, "add_item", basket_id=basket_id, sku="CUP-01")
    return basket_id, shown


async def test_the_client_asks_the_user_and_places_the_order(client: Client, user: User) -> None:
    assert client.protocol_version == "2026-07-28"
    basket_id, shown = await filled_basket(client)
    user.will(ACCEPT)
    order = await ok(client, "checkout", basket_id=basket_id)
    assert user.asked == [question(basket_id, "46.30")]
    assert re.fullmatch(r"ord_[0-9a-f]{12}", order["order_id"])
    assert order == {"order_id": order["order_id"], **shown}
    text = await refused(client, "get_basket", basket_id=basket_id)
    assert text.startswith(f"Basket '{basket_id}' was checked out at ")


async def test_declining_orders_nothing_and_keeps_the_basket(client: Client, user: User) -> None:
    basket_id, shown = await filled_basket(client)
    answers = [
        ElicitResult(action="decline"),
        ElicitResult(action="cancel"),
        ElicitResult(action="accept", content={"confirm": False}),
    ]
    for answer in answers:
        user.will(answer)
        assert await refused(client, "checkout", basket_id=basket_id) == (
            f"The user did not confirm the order, so nothing was ordered; basket {basket_id} "
            "is still open."
        )
        assert user.asked == [question(basket_id, "46.30")]
        assert await ok(client, "get_basket", basket_id=basket_id) == shown
    listed = await ok(client, "list_baskets")
    assert basket_id in {b["basket_id"] for b in listed["baskets"]}
    user.will(ACCEPT)
    assert (await ok(client, "checkout", basket_id=basket_id))["basket_id"] == basket_id


async def test_confirm_true_needs_no_question(client: Client, user: User) -> None:
    basket_id, shown = await filled_basket(client)
    user.will()
    order = await ok(client, "checkout", basket_id=basket_id, confirm=True)
    assert order == {"order_id": order["order_id"], **shown}
    assert user.asked == []


async def test_the_input_required_round_by_hand(client: Client, user: User) -> None:
    """The same two rounds driven through the session: the result, then inputResponses."""
    basket_id, shown = await filled_basket(client)
    user.will()
    arguments = {"basket_id": basket_id}
    asked = await client.session.call_tool("checkout", arguments, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult)
    assert asked.model_dump(mode="json", by_alias=True, exclude_none=True) == {
        "_meta": SERVER_INFO,
        "resultType": "input_required",
        "inputRequests": {
            "confirm": {"method": "elicitation/create", "params": question(basket_id, "46.30")}
        },
        "requestState": "version 3",
    }
    assert await ok(client, "get_basket", basket_id=basket_id) == shown  # still open

    done = await client.session.call_tool(
        "checkout",
        arguments,
        input_responses={"confirm": ACCEPT},
        request_state=asked.request_state,
        allow_input_required=True,
    )
    assert isinstance(done, CallToolResult)
    assert done.is_error is False and done.structured_content is not None
    assert done.structured_content == {"order_id": done.structured_content["order_id"], **shown}
    assert user.asked == []


async def test_a_yes_to_an_older_basket_asks_again_with_the_new_total(
    client: Client, user: User
) -> None:
    """The user agreed to 46.30; an add_item since then means they must see the new total."""
    basket_id, _ = await filled_basket(client)
    arguments = {"basket_id": basket_id}
    asked = await client.session.call_tool("checkout", arguments, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult)
    await ok(client, "add_item", basket_id=basket_id, sku="CUP-01")
    again = await client.session.call_tool(
        "checkout",
        arguments,
        input_responses={"confirm": ACCEPT},
        request_state=asked.request_state,
        allow_input_required=True,
    )
    assert isinstance(again, InputRequiredResult)
    assert again.model_dump(mode="json", by_alias=True, exclude_none=True) == {
        "_meta": SERVER_INFO,
        "resultType": "input_required",
        "inputRequests": {
            "confirm": {"method": "elicitation/create", "params": question(basket_id, "52.80")}
        },
        "requestState": "version 4",
    }


async def test_a_legacy_client_without_elicitation_is_not_asked(user: User) -> None:
    async with connect(server_params("alice"), "legacy") as client:
        assert client.protocol_version == "2025-11-25"
        basket_id, shown = await filled_basket(client)
        user.will()
        assert await refused(client, "checkout", basket_id=basket_id) == (
            "Checkout is irreversible: the order total is 46.30 EUR. Ask the user, "
            "then call checkout again with confirm: true."
        )
        assert await ok(client, "get_basket", basket_id=basket_id) == shown
        before = time.time()
        await ok(client, "close_basket", basket_id=basket_id)
        text = await refused(client, "checkout", basket_id=basket_id, confirm=True)
        closed(basket_id, "closed", text, before, time.time())
    assert user.asked == []
