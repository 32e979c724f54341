"""The basket server end to end: the official ``mcp`` client over a real stdio subprocess.

One server process per client mode (``auto``, ``legacy``, ``2026-07-28``) serves the
whole module, on the in-memory store, as principal ``alice``. None of these clients
declares elicitation, so checkout asks for ``confirm: true`` in every era.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

import handles

from .support import (
    BASKET_ID,
    HANDLE_CALLS,
    call,
    closed,
    connect,
    ok,
    parse_iso,
    refused,
    server_params,
    unknown,
)

pytestmark = pytest.mark.anyio

TOOLS = [
    "search_catalog",
    "create_basket",
    "add_item",
    "remove_item",
    "get_basket",
    "list_baskets",
    "checkout",
    "close_basket",
]
SERVER_INFO = {
    "io.modelcontextprotocol/serverInfo": {"name": "example-basket", "version": handles.__version__}
}
MUG = {"sku": "MUG-24", "name": "Travel mug", "unit_price": 19.9}
CUP = {"sku": "CUP-01", "name": "Espresso cup", "unit_price": 6.5}
CAPPUCCINO = {"sku": "CUP-02", "name": "Cappuccino cup", "unit_price": 8.0}
KETTLE = {"sku": "KTL-01", "name": "Gooseneck kettle", "unit_price": 45.0}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=["auto", "legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
async def client(mode: str) -> AsyncIterator[Client]:
    async with connect(server_params("alice"), mode) as client:
        yield client


def line(product: dict[str, Any], quantity: int) -> dict[str, Any]:
    return {**product, "quantity": quantity}


def view(basket_id: str, *lines: dict[str, Any], total: float) -> dict[str, Any]:
    return {"basket_id": basket_id, "items": list(lines), "total": total}


def result(mode: str, structured: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=False,
        _meta=None if mode == "legacy" else SERVER_INFO,
    )


async def new_basket(client: Client) -> str:
    basket_id: str = (await ok(client, "create_basket"))["basket_id"]
    assert BASKET_ID.fullmatch(basket_id), basket_id
    return basket_id


async def test_the_era_and_the_eight_tools(client: Client, mode: str) -> None:
    assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    with anyio.fail_after(10):
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == TOOLS
    create = tools[1]
    assert create.description == (
        "Start a new, empty basket and return its basket_id.\n\n"
        "Baskets expire after 30 minutes without use and 24 hours after creation."
    )


async def test_search_catalog(client: Client, mode: str) -> None:
    found = await call(client, "search_catalog", query="Espresso cup")
    assert found == result(
        mode,
        {"products": [CUP]},
        '{"products":[{"sku":"CUP-01","name":"Espresso cup","unit_price":6.5}]}',
    )
    assert await ok(client, "search_catalog", query="Travel mug") == {"products": [MUG]}
    assert await ok(client, "search_catalog", query="mug-24") == {"products": [MUG]}
    assert await ok(client, "search_catalog", query="CUP") == {"products": [CUP, CAPPUCCINO]}
    assert await ok(client, "search_catalog", query="cup", limit=1) == {"products": [CUP]}
    everything_with_an_e = await ok(client, "search_catalog", query="e", limit=50)
    assert len(everything_with_an_e["products"]) == 11
    assert CAPPUCCINO not in everything_with_an_e["products"]
    assert len((await ok(client, "search_catalog", query="e"))["products"]) == 10


async def test_search_refusals(client: Client) -> None:
    assert await refused(client, "search_catalog", query="x") == (
        "No products match 'x'. Try a shorter substring."
    )
    assert await refused(client, "search_catalog", query="cup", limit=0) == (
        "Input validation error in search_catalog: limit: must be at least 1, got 0."
    )
    assert await refused(client, "search_catalog", query="cup", limit=51) == (
        "Input validation error in search_catalog: limit: must be at most 50, got 51."
    )
    assert await ok(client, "search_catalog", query="kettle", limit=50) == {"products": [KETTLE]}


async def test_create_basket(client: Client) -> None:
    before = time.time()
    created = await ok(client, "create_basket")
    after = time.time()
    assert set(created) == {"basket_id", "expires_at"}
    assert BASKET_ID.fullmatch(created["basket_id"])
    assert int(before) + 1800 <= parse_iso(created["expires_at"]) <= after + 1800


async def test_add_item_and_get_basket(client: Client, mode: str) -> None:
    basket_id = await new_basket(client)
    empty = await call(client, "get_basket", basket_id=basket_id)
    assert empty == result(
        mode, view(basket_id, total=0.0), f'{{"basket_id":"{basket_id}","items":[],"total":0.0}}'
    )

    two_mugs = await ok(client, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    assert two_mugs == view(basket_id, line(MUG, 2), total=39.8)
    and_a_cup = await ok(client, "add_item", basket_id=basket_id, sku="CUP-01")
    assert and_a_cup == view(basket_id, line(MUG, 2), line(CUP, 1), total=46.3)
    third_mug = await ok(client, "add_item", basket_id=basket_id, sku="MUG-24", quantity=1)
    expected = view(basket_id, line(MUG, 3), line(CUP, 1), total=66.2)
    assert third_mug == expected

    shown = await call(client, "get_basket", basket_id=basket_id)
    assert shown == result(
        mode,
        expected,
        f'{{"basket_id":"{basket_id}","items":['
        '{"sku":"MUG-24","name":"Travel mug","quantity":3,"unit_price":19.9},'
        '{"sku":"CUP-01","name":"Espresso cup","quantity":1,"unit_price":6.5}],'
        '"total":66.2}',
    )


async def test_add_item_refusals_change_nothing(client: Client) -> None:
    basket_id = await new_basket(client)
    await ok(client, "add_item", basket_id=basket_id, sku="CUP-01", quantity=99)
    for quantity in (0, 100):
        bound = "at least 1" if quantity == 0 else "at most 99"
        text = await refused(
            client, "add_item", basket_id=basket_id, sku="CUP-01", quantity=quantity
        )
        assert text == (
            f"Input validation error in add_item: quantity: must be {bound}, got {quantity}."
        )
    assert await refused(client, "add_item", basket_id=basket_id, sku="MUG-99") == (
        "Unknown SKU 'MUG-99'. Call search_catalog to find a product's SKU."
    )
    assert await ok(client, "get_basket", basket_id=basket_id) == view(
        basket_id, line(CUP, 99), total=643.5
    )


async def test_remove_item_partly_and_whole_lines(client: Client) -> None:
    basket_id = await new_basket(client)
    await ok(client, "add_item", basket_id=basket_id, sku="MUG-24", quantity=3)
    await ok(client, "add_item", basket_id=basket_id, sku="CUP-01", quantity=2)
    await ok(client, "add_item", basket_id=basket_id, sku="KTL-01")

    partly = await ok(client, "remove_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    assert partly == view(basket_id, line(MUG, 1), line(CUP, 2), line(KETTLE, 1), total=77.9)
    whole = await ok(client, "remove_item", basket_id=basket_id, sku="CUP-01")
    assert whole == view(basket_id, line(MUG, 1), line(KETTLE, 1), total=64.9)
    more_than_there = await ok(client, "remove_item", basket_id=basket_id, sku="KTL-01", quantity=5)
    assert more_than_there == view(basket_id, line(MUG, 1), total=19.9)

    assert await refused(client, "remove_item", basket_id=basket_id, sku="CUP-01") == (
        f"Basket {basket_id} has no 'CUP-01'; call get_basket to see its items."
    )
    assert await refused(client, "remove_item", basket_id=basket_id, sku="MUG-24", quantity=0) == (
        "Input validation error in remove_item: quantity: must be at least 1, got 0."
    )
    assert await ok(client, "get_basket", basket_id=basket_id) == view(
        basket_id, line(MUG, 1), total=19.9
    )


async def test_list_baskets_shows_each_with_its_expiry(client: Client) -> None:
    first = await ok(client, "create_basket")
    second = await ok(client, "create_basket")
    ids = {first["basket_id"], second["basket_id"]}

    def mine(listed: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {b["basket_id"]: b for b in listed["baskets"] if b["basket_id"] in ids}

    listed = mine(await ok(client, "list_baskets"))
    assert listed == {
        created["basket_id"]: {**created, "item_count": 0, "total": 0.0}
        for created in (first, second)
    }
    await ok(client, "add_item", basket_id=second["basket_id"], sku="MUG-24", quantity=2)
    await ok(client, "add_item", basket_id=second["basket_id"], sku="CUP-01")
    renewed = mine(await ok(client, "list_baskets"))[second["basket_id"]]
    assert (renewed["item_count"], renewed["total"]) == (3, 46.3)
    assert parse_iso(renewed["expires_at"]) >= parse_iso(second["expires_at"])

    await ok(client, "close_basket", basket_id=first["basket_id"])
    assert list(mine(await ok(client, "list_baskets"))) == [second["basket_id"]]


async def test_close_basket_then_every_tool_says_closed(client: Client) -> None:
    basket_id = await new_basket(client)
    await ok(client, "add_item", basket_id=basket_id, sku="MUG-24")
    before = time.time()
    assert await ok(client, "close_basket", basket_id=basket_id) == {
        "basket_id": basket_id,
        "closed": True,
    }
    after = time.time()
    for tool, arguments in HANDLE_CALLS:
        text = await refused(client, tool, basket_id=basket_id, **arguments)
        closed(basket_id, "closed", text, before, after)


async def test_checkout_asks_for_confirm_true_then_places_the_order(client: Client) -> None:
    basket_id = await new_basket(client)
    await ok(client, "add_item", basket_id=basket_id, sku="MUG-24", quantity=2)
    await ok(client, "add_item", basket_id=basket_id, sku="CUP-01")
    assert await refused(client, "checkout", basket_id=basket_id) == (
        "Checkout is irreversible: the order total is 46.30 EUR. Ask the user, "
        "then call checkout again with confirm: true."
    )
    assert await refused(client, "checkout", basket_id=basket_id, confirm=False) == (
        "Checkout is irreversible: the order total is 46.30 EUR. Ask the user, "
        "then call checkout again with confirm: true."
    )
    still_open = await ok(client, "get_basket", basket_id=basket_id)
    assert still_open == view(basket_id, line(MUG, 2), line(CUP, 1), total=46.3)

    before = time.time()
    order = await ok(client, "checkout", basket_id=basket_id, confirm=True)
    after = time.time()
    assert re.fullmatch(r"ord_[0-9a-f]{12}", order["order_id"])
    assert order == {"order_id": order["order_id"], **still_open}

    for tool, arguments in [("get_basket", {}), ("checkout", {"confirm": True})]:
        text = await refused(client, tool, basket_id=basket_id, **arguments)
        closed(basket_id, "checked out", text, before, after)
    listed = await ok(client, "list_baskets")
    assert basket_id not in {b["basket_id"] for b in listed["baskets"]}


async def test_an_empty_basket_cannot_be_checked_out(client: Client) -> None:
    basket_id = await new_basket(client)
    assert await refused(client, "checkout", basket_id=basket_id, confirm=True) == (
        f"Basket {basket_id} is empty; call add_item first."
    )
    assert await ok(client, "get_basket", basket_id=basket_id) == view(basket_id, total=0.0)


async def test_invented_and_mistyped_ids_are_unknown(client: Client) -> None:
    real = await new_basket(client)
    mistyped = real[:-1] + ("A" if real[-1] != "A" else "B")
    for bad in ("bsk_" + "A" * 43, mistyped, "basket-1", real.upper()):
        for tool, arguments in HANDLE_CALLS:
            assert await refused(client, tool, basket_id=bad, **arguments) == unknown(bad)
    assert await ok(client, "get_basket", basket_id=real) == view(real, total=0.0)


async def test_fifty_concurrent_adds_on_one_basket_lose_nothing(client: Client) -> None:
    basket_id = await new_basket(client)
    skus = ["MUG-24", "CUP-01", "KTL-01", "CUP-02", "MUG-12"]
    results: list[CallToolResult] = []

    async def add(number: int) -> None:
        arguments = {"basket_id": basket_id, "sku": skus[number % 5], "quantity": number % 3 + 1}
        results.append(await client.call_tool("add_item", arguments))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for number in range(50):
                tg.start_soon(add, number)
    assert len(results) == 50
    assert [r.is_error for r in results] == [False] * 50
    shown = await ok(client, "get_basket", basket_id=basket_id)
    quantities = {item["sku"]: item["quantity"] for item in shown["items"]}
    expected = {sku: sum(n % 3 + 1 for n in range(50) if n % 5 == i) for i, sku in enumerate(skus)}
    assert (
        quantities
        == expected
        == {
            "MUG-24": 19,
            "CUP-01": 20,
            "KTL-01": 21,
            "CUP-02": 19,
            "MUG-12": 20,
        }
    )
    assert shown["total"] == 1845.1
    totals_seen = sorted(r.structured_content["total"] for r in results if r.structured_content)
    assert len(set(totals_seen)) == 50  # every add saw a basket that included all earlier ones
