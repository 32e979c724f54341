"""The basket server: a catalog, baskets behind ``bsk_…`` handles, and checkout.

``build_server`` wires a store and a key ring into a ``Server`` with exactly
eight tools. Every handle check, expiry rule and error text comes from
``handles``; this module only says what a basket is and what its tools do.
"""

from __future__ import annotations

import secrets
import time
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints
from typing_extensions import TypedDict  # typing's, nested in a model, breaks on 3.11

from handles import (
    Context,
    Handle,
    HandleKind,
    HandleManager,
    HandleTools,
    Lifetime,
    RateLimit,
    RateLimiter,
    SecretKeys,
    Server,
    ToolError,
)
from stores import Store, StoreUnavailable

from .catalog import CATALOG, Product, search

__all__ = ["Basket", "basket_kind", "build_server", "order_ledger"]

MAX_LINES = 50
MAX_QUANTITY = 999
LEDGER_OWNER = "example-basket"
LEDGER_DAYS = 30


def order_ledger(basket_id: str) -> str:
    """The store group of a basket's placed orders (owner ``LEDGER_OWNER``): at most one."""
    return f"order:{basket_id}"


class Basket(BaseModel):
    """A basket's state: quantity by SKU, in the order lines were added."""

    items: dict[str, int] = {}


class Line(TypedDict):  # a TypedDict, so a view's lines stay plain dicts
    sku: str
    name: str
    quantity: int
    unit_price: float


class BasketView(BaseModel):
    basket_id: str
    items: list[Line]
    total: float


class BasketSummary(BaseModel):
    basket_id: str
    expires_at: str
    item_count: int
    total: float


class Baskets(BaseModel):
    baskets: list[BasketSummary]


class Products(BaseModel):
    products: list[Product]


class Order(BaseModel):
    order_id: str
    basket_id: str
    items: list[Line]
    total: float


class Closed(BaseModel):
    basket_id: str
    closed: bool


def basket_kind(
    idle_ttl: float = 1800, max_ttl: float = 86400, quota: int = 500
) -> HandleKind[Basket]:
    """The basket kind: lifetimes in seconds, and open baskets allowed per caller."""
    return HandleKind(
        name="basket",
        prefix="bsk",
        model=Basket,
        lifetime=Lifetime(idle=idle_ttl, absolute=max_ttl),
        quota=quota,
        close_tool="close_basket",
        header="Basket-Id",
    )


def view(basket_id: str, basket: Basket) -> BasketView:
    """What the basket tools return: its lines with names and prices from the catalog."""
    lines: list[Line] = [
        {"sku": sku, "name": _NAMES[sku], "quantity": n, "unit_price": _PRICES[sku]}
        for sku, n in basket.items.items()
    ]
    return BasketView(basket_id=basket_id, items=lines, total=_total(basket))


_NAMES = {sku: product.name for sku, product in CATALOG.items()}
_PRICES = {sku: product.unit_price for sku, product in CATALOG.items()}
_CENTS = {sku: round(price * 100) for sku, price in _PRICES.items()}


def _total(basket: Basket) -> float:
    return sum(_CENTS[sku] * n for sku, n in basket.items.items()) / 100


Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
Sku = Annotated[str, Field(min_length=1, max_length=32)]
Quantity = Annotated[int, Field(ge=1, le=99)]


def build_server(
    store: Store,
    *,
    secret_keys: SecretKeys | None = None,
    idle_ttl: float = 1800,
    max_ttl: float = 86400,
    quota: int = 500,
    rate_limit: int | None = None,
) -> Server:
    """The basket server over ``store``, signing handles with ``secret_keys``.

    ``rate_limit`` is tool calls per minute per caller, counted in ``store`` (so
    shared by replicas); ``None`` or 0 means no limit.
    """
    kind = basket_kind(idle_ttl, max_ttl, quota)
    limiter = RateLimiter(store, RateLimit(rate_limit, 60)) if rate_limit else None
    server = Server("example-basket", instructions=_INSTRUCTIONS, rate_limit=limiter)
    tools = HandleTools(server, HandleManager(store, [kind], secret_keys=secret_keys))

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def search_catalog(
        query: Query, limit: Annotated[int, Field(ge=1, le=50)] = 10
    ) -> Products:
        """Find products by a case-insensitive substring of their name or SKU.

        Args:
            query: Part of a product name or SKU, e.g. "mug".
            limit: The most products to return.
        """
        found = search(query, limit)
        if not found:
            raise ToolError(f"No products match {query[:60]!r}. Try a shorter substring.")
        return Products(products=found)

    @tools.creates(kind)
    async def create_basket() -> Basket:
        """Start a new, empty basket and return its basket_id."""
        return Basket()

    @tools.edits(kind)
    async def add_item(
        basket: Basket, basket_id: str, sku: Sku, quantity: Quantity = 1
    ) -> BasketView:
        """Add a product to a basket (or raise its quantity).

        Args:
            sku: The product's SKU, as search_catalog returns it.
            quantity: How many to add.
        """
        if sku not in CATALOG:
            raise ToolError(
                f"Unknown SKU {sku[:32]!r}. Call search_catalog to find a product's SKU."
            )
        if sku not in basket.items and len(basket.items) >= MAX_LINES:
            raise ToolError(
                f"A basket holds at most {MAX_LINES} different products; remove one first."
            )
        quantity += basket.items.get(sku, 0)
        if quantity > MAX_QUANTITY:
            raise ToolError(
                f"A basket holds at most {MAX_QUANTITY} of one product; it has "
                f"{basket.items[sku]} of {sku}."
            )
        basket.items[sku] = quantity
        return view(basket_id, basket)

    @tools.edits(kind)
    async def remove_item(
        basket: Basket, basket_id: str, sku: Sku, quantity: Quantity | None = None
    ) -> BasketView:
        """Remove some or all of a product from a basket.

        Args:
            sku: The product's SKU.
            quantity: How many to remove; leave it out to remove the whole line.
        """
        if sku not in basket.items:
            raise ToolError(
                f"Basket {basket_id[:48]} has no {sku[:32]!r}; call get_basket to see its items."
            )
        left = 0 if quantity is None else basket.items[sku] - quantity
        if left > 0:
            basket.items[sku] = left
        else:
            del basket.items[sku]
        return view(basket_id, basket)

    @tools.reads(kind)
    async def get_basket(basket: Basket, basket_id: str) -> BasketView:
        """Show a basket's items and total."""
        return view(basket_id, basket)

    @tools.lists(kind)
    async def list_baskets(baskets: list[Handle[Basket]]) -> Baskets:
        """List your open baskets with when each expires."""
        return Baskets(baskets=[_summary(h) for h in baskets])

    async def place_order(order: Order) -> None:
        """Record the order in the ledger: run once per basket, after its close committed."""
        value = order.model_dump_json().encode()
        ledger, expires = order_ledger(order.basket_id), time.time() + LEDGER_DAYS * 86400
        try:
            await store.create(LEDGER_OWNER, ledger, order.order_id, value, expires_at=expires)
        except StoreUnavailable:
            raise ToolError(
                f"Basket {order.basket_id} was checked out as order {order.order_id}, but the "
                "order could not be recorded just now; give the user the order id to quote "
                "to the shop. Do not check out again."
            ) from None

    @tools.closes(kind, reason="checked out", on_commit=place_order)
    async def checkout(basket: Handle[Basket], ctx: Context, confirm: bool = False) -> Order:
        """Place the order for a basket. This is irreversible and closes the basket.

        Args:
            confirm: Set to true to confirm the order, after telling the user the total,
                if the client cannot ask the user itself.
        """
        if not basket.state.items:
            raise ToolError(f"Basket {basket.id} is empty; call add_item first.")
        total = _total(basket.state)
        if not confirm:
            await ctx.debug(f"asking the user to confirm {total:.2f} EUR", logger="checkout")
            question = f"Place the order for basket {basket.id}, total {total:.2f} EUR?"
            # The user must have seen this version of the basket: one changed since is asked again.
            answer = await ctx.confirm(question, state=_seen(basket), label="Place the order")
            if answer == "unavailable":
                raise ToolError(
                    f"Checkout is irreversible: the order total is {total:.2f} EUR. Ask the "
                    "user, then call checkout again with confirm: true."
                )
            if answer != "accept":
                raise ToolError(
                    f"The user did not confirm the order, so nothing was ordered; basket "
                    f"{basket.id} is still open."
                )
        items = view(basket.id, basket.state).items
        order_id = f"ord_{secrets.token_hex(6)}"
        placed = {"order_id": order_id, "basket_id": basket.id, "total": total}
        await ctx.info({"event": "order placed", **placed}, logger="checkout")
        return Order(order_id=order_id, basket_id=basket.id, items=items, total=total)

    @tools.closes(kind, reason="closed")
    async def close_basket(basket_id: str) -> Closed:
        """Throw a basket away without ordering."""
        return Closed(basket_id=basket_id, closed=True)

    return server


def _summary(handle: Handle[Basket]) -> BasketSummary:
    return BasketSummary(
        basket_id=handle.id,
        expires_at=handle.expires_at_iso,
        item_count=sum(handle.state.items.values()),
        total=_total(handle.state),
    )


def _seen(basket: Handle[Basket]) -> str:
    return f"version {basket.version}"


_INSTRUCTIONS = (
    "A coffee-gear shop. Find products with search_catalog, start a basket with "
    "create_basket, then pass its basket_id to add_item, remove_item, get_basket and "
    "checkout. Baskets are private to you and expire when unused."
)
