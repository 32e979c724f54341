"""A basket on FastMCP 4 with mcp-handles (docs/fastmcp.md); stdio: ``python <this file>``."""

from typing import Any

from fastmcp import FastMCP
from pydantic import BaseModel

from handles import HandleKind, HandleManager, Lifetime, secret_keys_from_environment
from handles.integrations.fastmcp import HandleProvider, HandleTools
from stores import MemoryStore


class Basket(BaseModel):
    items: dict[str, int] = {}


basket = HandleKind("basket", "bsk", Basket, Lifetime(idle=1800, absolute=86400))


def build(manager: HandleManager, **options: Any) -> FastMCP:
    mcp = FastMCP("shop", **options)
    mcp.add_provider(HandleProvider(manager, basket))  # create_basket, list_baskets, close_basket
    tools = HandleTools(mcp, manager)

    @tools.edits(basket)
    async def add_item(state: Basket, sku: str, quantity: int = 1) -> Basket:
        """Add quantity units of sku to the basket."""
        state.items[sku] = state.items.get(sku, 0) + quantity
        return state

    @tools.reads(basket)
    async def get_basket(state: Basket) -> Basket:
        """Show what is in the basket."""
        return state

    @tools.closes(basket, reason="checked out")
    async def checkout(state: Basket) -> Basket:
        """Buy what is in the basket; the basket cannot be used afterwards."""
        return state

    return mcp


if __name__ == "__main__":
    build(HandleManager(MemoryStore(), [basket], secret_keys=secret_keys_from_environment())).run()
