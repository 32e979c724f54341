"""Checkout confirmed by the user on a 2025-11-25 client: ``elicitation/create`` during the call.

The official client in legacy mode, with an elicitation callback, over stdio (a real
subprocess) and over HTTP (a real ``--http`` server, the answer coming back as a
new POST). ``ctx.confirm`` sends the request, waits, and checkout orders only on
a ticked box; without the callback the client declares no elicitation and is told
to pass ``confirm`` instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult

from ..example_basket_http.support import DemoServer, demo_server
from ..example_basket_http.support import connect as connect_http
from .support import connect, ok, refused, server_params
from .test_checkout_elicitation import ACCEPT, SCHEMA, User, filled_basket

pytestmark = pytest.mark.anyio


def question(basket_id: str, total: str) -> dict[str, Any]:
    """What a 2025-11-25 client is asked: a form-mode elicitation/create."""
    return {
        "mode": "form",
        "message": f"Place the order for basket {basket_id}, total {total} EUR?",
        "requestedSchema": SCHEMA,
    }


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_server() -> Iterator[DemoServer]:
    with demo_server("--tokens", "tok-a:alice,tok-b:bob") as server:
        yield server


def opened(
    transport: str, http_server: DemoServer, **options: Any
) -> AbstractAsyncContextManager[Client]:
    if transport == "stdio":
        return connect(server_params("alice"), "legacy", **options)
    return connect_http(http_server.url, "tok-a", "legacy", **options)


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(transport: str, http_server: DemoServer, user: User) -> AsyncIterator[Client]:
    async with opened(transport, http_server, elicitation_callback=user) as c:
        yield c


@pytest.fixture
def user() -> User:
    return User()


async def test_the_user_accepts_and_the_order_is_placed(client: Client, user: User) -> None:
    assert client.protocol_version == "2025-11-25"
    basket_id, shown = await filled_basket(client)
    user.will(ACCEPT)
    order = await ok(client, "checkout", basket_id=basket_id)
    assert user.asked == [question(basket_id, "46.30")]
    assert order == {"order_id": order["order_id"], **shown}
    text = await refused(client, "get_basket", basket_id=basket_id)
    assert text.startswith(f"Basket '{basket_id}' was checked out at ")


@pytest.mark.parametrize(
    "answer",
    [
        ElicitResult(action="decline"),
        ElicitResult(action="cancel"),
        ElicitResult(action="accept", content={"confirm": False}),
    ],
    ids=["decline", "cancel", "unticked"],
)
async def test_the_user_declines_and_nothing_is_ordered(
    client: Client, user: User, answer: ElicitResult
) -> None:
    basket_id, shown = await filled_basket(client)
    user.will(answer)
    assert await refused(client, "checkout", basket_id=basket_id) == (
        f"The user did not confirm the order, so nothing was ordered; basket {basket_id} "
        "is still open."
    )
    assert user.asked == [question(basket_id, "46.30")]
    assert await ok(client, "get_basket", basket_id=basket_id) == shown


async def test_without_elicitation_the_model_is_told_to_confirm(
    transport: str, http_server: DemoServer
) -> None:
    async with opened(transport, http_server) as client:
        basket_id, shown = await filled_basket(client)
        assert await refused(client, "checkout", basket_id=basket_id) == (
            "Checkout is irreversible: the order total is 46.30 EUR. Ask the user, "
            "then call checkout again with confirm: true."
        )
        assert await ok(client, "get_basket", basket_id=basket_id) == shown
        order = await ok(client, "checkout", basket_id=basket_id, confirm=True)
        assert order["basket_id"] == basket_id
