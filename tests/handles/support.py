"""Kinds, principals, a fake clock and store wrappers shared by the handle-layer tests."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio.lowlevel
from pydantic import BaseModel

from handles.kinds import HandleKind, Lifetime
from handles.manager import HandleManager
from handles.principal import Principal
from stores.base import Record, Store, StoreUnavailable
from stores.memory import MemoryStore
from stores.testing import ManualClock


class Basket(BaseModel):
    items: dict[str, int] = {}
    count: int = 0


class Cart(BaseModel):
    skus: list[str] = []


T0 = datetime(2026, 11, 29, 23, 59, tzinfo=UTC).timestamp()
BASKET = HandleKind(
    "basket",
    "bsk",
    Basket,
    Lifetime(idle=timedelta(minutes=30), absolute=timedelta(hours=24)),
    quota=3,
    close_tool="close_basket",
)
CART = HandleKind("cart", "crt", Cart, Lifetime(idle=600))
TICKET = HandleKind("ticket", "tkt", Cart, Lifetime(absolute=3600))
KINDS: list[HandleKind[Any]] = [BASKET, CART, TICKET]
ALICE = Principal("alice", issuer="https://id.example")
BOB = Principal("bob", issuer="https://id.example")
KEY = b"k" * 32


class CountingStore(Store):
    """Delegates to ``inner`` and counts calls by method name."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    async def _before(self, method: str) -> None:
        self.calls[method] += 1

    async def create(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        expires_at: float,
        limit: int | None = None,
    ) -> Record | None:
        await self._before("create")
        return await self.inner.create(owner, group, key, value, expires_at=expires_at, limit=limit)

    async def get(
        self, owner: str, group: str, key: str, *, renew_until: float | None = None
    ) -> Record | None:
        await self._before("get")
        return await self.inner.get(owner, group, key, renew_until=renew_until)

    async def replace(
        self,
        owner: str,
        group: str,
        key: str,
        value: bytes,
        *,
        version: int,
        expires_at: float,
    ) -> Record | None:
        await self._before("replace")
        return await self.inner.replace(
            owner, group, key, value, version=version, expires_at=expires_at
        )

    async def delete(self, owner: str, group: str, key: str, *, version: int | None = None) -> bool:
        await self._before("delete")
        return await self.inner.delete(owner, group, key, version=version)

    async def list(self, owner: str, group: str) -> dict[str, Record]:
        await self._before("list")
        return await self.inner.list(owner, group)


class YieldingStore(CountingStore):
    """Yields to the event loop before every call, as a networked store would."""

    async def _before(self, method: str) -> None:
        await super()._before(method)
        await anyio.lowlevel.checkpoint()


class FailingStore(CountingStore):
    """Every call raises ``StoreUnavailable``."""

    async def _before(self, method: str) -> None:
        await super()._before(method)
        raise StoreUnavailable("connection refused", applied=False)


@dataclass
class Env:
    clock: ManualClock
    store: CountingStore
    manager: HandleManager


def make_env(store_type: type[CountingStore] = CountingStore, **options: Any) -> Env:
    """A manager over a counting ``MemoryStore``, all on one fake clock."""
    clock = ManualClock(T0)
    store = store_type(MemoryStore(clock=clock))
    manager = HandleManager(store, KINDS, secret_keys=KEY, clock=clock, **options)
    return Env(clock, store, manager)
