"""The shared benchmark's basket on an adapter: ``python adapter_basket.py fastmcp|sdk``.

The same tools, arguments and replies as ``$BENCH/servers/fastmcp_basket.py`` and
``sdk_basket.py`` (``create_basket``, ``add_item``, ``get_basket``; the basket_id, the
sku's new total, the items list), with the state behind ``handles.integrations``: a
signed, principal-bound, expiring handle in a MemoryStore, updated atomically. stdio.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from handles import HandleKind, HandleManager, Lifetime, ToolError, secret_keys_from_environment
from stores import MemoryStore

MAX_QTY = 1_000_000


class Basket(BaseModel):
    items: dict[str, int] = Field(default_factory=dict)


# The replies are the baselines' TypedDicts (typing_extensions: pydantic on 3.11 needs it
# for nested ones), so the comparison is of the state layer alone.
class Item(TypedDict):
    sku: str
    quantity: int


class AddResult(TypedDict):
    basket_id: str
    sku: str
    quantity: int


class BasketView(TypedDict):
    basket_id: str
    items: list[Item]


BASKET = HandleKind("basket", "bsk", Basket, Lifetime(idle=1800, absolute=86400), quota=None)


def register(tools: Any) -> None:
    """The three tools on ``tools``, a ``HandleTools`` of either adapter."""

    @tools.creates(BASKET)
    async def create_basket() -> Basket:
        """Create an empty shopping basket and return its opaque basket_id handle."""
        return Basket()

    @tools.edits(BASKET)
    async def add_item(state: Basket, basket_id: str, sku: str, quantity: int = 1) -> AddResult:
        """Add `quantity` units of `sku` to the basket identified by `basket_id`."""
        if not sku or len(sku) > 128:
            raise ToolError("sku must be a non-empty string of at most 128 characters.")
        if quantity < 1 or quantity > MAX_QTY:
            raise ToolError(f"quantity must be between 1 and {MAX_QTY}; got {quantity}.")
        total = state.items[sku] = state.items.get(sku, 0) + quantity
        return {"basket_id": basket_id, "sku": sku, "quantity": total}

    @tools.reads(BASKET)
    async def get_basket(state: Basket, basket_id: str) -> BasketView:
        """Return the items in the basket identified by `basket_id`."""
        items: list[Item] = [{"sku": s, "quantity": q} for s, q in state.items.items()]
        return {"basket_id": basket_id, "items": items}


def main() -> None:
    framework = sys.argv[1]
    manager = HandleManager(MemoryStore(), [BASKET], secret_keys=secret_keys_from_environment())
    if framework == "fastmcp":
        from fastmcp import FastMCP

        from handles.integrations.fastmcp import HandleTools as FastMCPTools

        fast = FastMCP("fastmcp-adapter-basket")
        register(FastMCPTools(fast, manager))
        fast.run()  # stdio, defaults, as the baseline
    else:
        from mcp.server.mcpserver import MCPServer

        from handles.integrations.mcp_sdk import HandleTools as SDKTools

        sdk = MCPServer("sdk-adapter-basket", log_level="WARNING")
        register(SDKTools(sdk, manager))
        sdk.run()
    logging.shutdown()


if __name__ == "__main__":
    main()
