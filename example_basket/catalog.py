"""A small built-in catalog, and the case-insensitive substring search over it."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["CATALOG", "Product", "search"]


class Product(BaseModel):
    """A product for sale; its unit price is in euros."""

    sku: str
    name: str
    unit_price: float


CATALOG: dict[str, Product] = {
    p.sku: p
    for p in (
        Product(sku="CUP-01", name="Espresso cup", unit_price=6.5),
        Product(sku="CUP-02", name="Cappuccino cup", unit_price=8.0),
        Product(sku="MUG-24", name="Travel mug", unit_price=19.9),
        Product(sku="MUG-12", name="Stoneware mug", unit_price=12.0),
        Product(sku="BEAN-1K", name="Espresso beans, 1 kg", unit_price=24.5),
        Product(sku="BEAN-250", name="Filter coffee beans, 250 g", unit_price=8.9),
        Product(sku="GRD-01", name="Hand grinder", unit_price=59.0),
        Product(sku="KTL-01", name="Gooseneck kettle", unit_price=45.0),
        Product(sku="FLT-100", name="Paper filters, 100 pack", unit_price=4.2),
        Product(sku="TMP-58", name="Espresso tamper, 58 mm", unit_price=29.0),
        Product(sku="SCL-01", name="Coffee scale", unit_price=34.9),
        Product(sku="JAR-01", name="Airtight coffee jar", unit_price=16.5),
    )
}


def search(query: str, limit: int) -> list[Product]:
    """Products whose name or SKU contains ``query``, ignoring case, in catalog order."""
    needle = query.strip().casefold()
    found = (
        p for p in CATALOG.values() if needle in p.name.casefold() or needle in p.sku.casefold()
    )
    return [p for _, p in zip(range(limit), found, strict=False)]
