"""Possession of a handle is never authorization: the figures behind that claim.

- 1,000 cross-principal attempts through the basket tools: 0 succeed, and each reads
  exactly like a made-up id;
- 100,000 random, tampered, truncated, foreign and wrong-kind ids through the
  manager: 0 accepted, 0 store calls;
- handles past their lifetime are refused, whatever the pattern of use (injected clock);
- after a key rotation, old handles work until the old key is removed, then read
  "unknown".
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from example_basket.app import build_server as build_basket
from handles.errors import HandleError, HandleExpired, UnknownHandle
from handles.kinds import HandleKind, Lifetime
from handles.manager import HandleManager
from handles.principal import Principal
from handles.server.dispatch import Connection, Server
from stores.memory import MemoryStore
from stores.testing import ManualClock
from tests.handles.support import (
    ALICE,
    BASKET,
    BOB,
    CART,
    KEY,
    KINDS,
    T0,
    Basket,
    CountingStore,
    make_env,
)

pytestmark = pytest.mark.anyio

CROSS_PRINCIPAL_ATTEMPTS = 1_000
FORGED_IDS = 100_000
BASKET_ID = re.compile(r"bsk_[A-Za-z0-9_-]{43}")
SKU = "MUG-12"


class Caller:
    """One principal talking to a server in process, through ``Server.handle``."""

    def __init__(self, server: Server, principal: Principal) -> None:
        self.server, self.connection, self.ids = server, Connection(principal, "legacy"), 0

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        self.ids += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        response = await self.server.handle(message, self.connection)
        assert response is not None and "result" in response, response
        result: dict[str, Any] = response["result"]
        return result


def noop(state: Basket) -> None:
    return None


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_a_thousand_cross_principal_attempts_all_fail() -> None:
    server = build_basket(MemoryStore(), secret_keys=KEY)
    alice = Caller(server, ALICE)
    baskets = []
    for _ in range(10):
        created = await alice.call("create_basket")
        basket_id = created["structuredContent"]["basket_id"]
        await alice.call("add_item", basket_id=basket_id, sku=SKU, quantity=2)
        baskets.append(basket_id)
    before = [await alice.call("get_basket", basket_id=b) for b in baskets]
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("get_basket", {}),
        ("add_item", {"sku": SKU}),
        ("remove_item", {"sku": SKU}),
        ("checkout", {"confirm": True}),
        ("close_basket", {}),
    ]
    succeeded = made = 0
    for number in range(CROSS_PRINCIPAL_ATTEMPTS):
        intruder = Caller(server, Principal(f"intruder-{number % 50}", issuer="https://id.example"))
        if number % 10 == 9:  # listing: the intruder's own list never shows alice's baskets
            listed = (await intruder.call("list_baskets"))["structuredContent"]["baskets"]
            succeeded += any(entry["basket_id"] in baskets for entry in listed)
            made += 1
            continue
        basket_id = baskets[number % len(baskets)]
        tool, arguments = attempts[number % len(attempts)]
        result = await intruder.call(tool, basket_id=basket_id, **arguments)
        made_up = basket_id[:-4] + ("AAAA" if basket_id[-4:] != "AAAA" else "BBBB")
        invented = await intruder.call(tool, basket_id=made_up, **arguments)
        succeeded += not result["isError"]
        assert text(result).replace(basket_id, "X") == text(invented).replace(made_up, "X")
        made += 1
    assert (made, succeeded) == (CROSS_PRINCIPAL_ATTEMPTS, 0)
    assert [await alice.call("get_basket", basket_id=b) for b in baskets] == before


def forgeries(valid: list[str], foreign: list[str], other_kind: list[str]) -> list[str]:
    """``FORGED_IDS`` ids that must all be refused, mixed from seven recipes."""
    rng = random.Random(6)
    alphabet = string.ascii_letters + string.digits + "-_"

    def flip(handle_id: str) -> str:
        position = rng.randrange(4, len(handle_id))
        char = rng.choice(alphabet.replace(handle_id[position], ""))
        return handle_id[:position] + char + handle_id[position + 1 :]

    recipes = [
        lambda: "bsk_" + "".join(rng.choices(alphabet, k=43)),  # random, well formed
        lambda: flip(rng.choice(valid)),  # one character changed
        lambda: flip(flip(rng.choice(valid))),  # two characters changed
        lambda: rng.choice(valid)[: rng.randrange(0, 47)],  # truncated
        lambda: rng.choice(valid) + rng.choice(alphabet),  # extended
        lambda: rng.choice(foreign),  # another principal's real handle
        lambda: rng.choice(other_kind).replace("crt_", "bsk_", 1),  # a cart id relabelled
        lambda: "".join(rng.choices(string.printable, k=rng.randrange(0, 80))),  # junk
    ]
    return [recipes[number % len(recipes)]() for number in range(FORGED_IDS)]


async def test_a_hundred_thousand_forged_ids_are_refused_before_the_store() -> None:
    env = make_env()
    valid = [(await env.manager.create(ALICE, BASKET)).id for _ in range(3)]
    foreign = [(await env.manager.create(BOB, BASKET)).id for _ in range(3)]
    carts = [(await env.manager.create(ALICE, CART)).id for _ in range(3)]
    ids = [i for i in forgeries(valid, foreign, carts) if i not in valid]
    env.store.calls.clear()
    accepted = 0

    async def attempt(number: int, handle_id: str) -> None:
        if number % 3 == 0:
            await env.manager.get(ALICE, BASKET, handle_id)
        elif number % 3 == 1:
            await env.manager.update(ALICE, BASKET, handle_id, noop)
        else:
            await env.manager.close(ALICE, BASKET, handle_id)

    for number, handle_id in enumerate(ids):
        try:
            await attempt(number, handle_id)
        except UnknownHandle:
            continue
        accepted += 1
    assert len(ids) > 0.99 * FORGED_IDS
    assert (accepted, sum(env.store.calls.values())) == (0, 0)


async def test_rotating_the_demos_key_keeps_old_baskets_until_the_old_key_goes() -> None:
    store, old, new = MemoryStore(), "o" * 32, "n" * 32
    before = Caller(build_basket(store, secret_keys=[old]), ALICE)
    baskets = [(await before.call("create_basket"))["structuredContent"] for _ in range(100)]
    ids = [basket["basket_id"] for basket in baskets]
    rotating = Caller(build_basket(store, secret_keys=[old, new]), ALICE)
    results = [await rotating.call("add_item", basket_id=i, sku=SKU) for i in ids]
    assert sum(not r["isError"] for r in results) == 100
    fresh = (await rotating.call("create_basket"))["structuredContent"]["basket_id"]
    rotated = Caller(build_basket(store, secret_keys=[new]), ALICE)
    results = [await rotated.call("get_basket", basket_id=i) for i in ids]
    assert all(
        text(r).startswith(f"Unknown basket '{i}'.") for r, i in zip(results, ids, strict=True)
    )
    assert not (await rotated.call("get_basket", basket_id=fresh))["isError"]


# Expiry under an injected clock: for any pattern of use, a handle is usable exactly
# until its deadline (idle since last use, or absolute since creation), never after.

lifetimes = st.one_of(
    st.builds(lambda idle: Lifetime(idle=idle), st.integers(1, 600)),
    st.builds(lambda absolute: Lifetime(absolute=absolute), st.integers(1, 600)),
    st.integers(1, 600).flatmap(
        lambda idle: st.builds(
            lambda absolute: Lifetime(idle=idle, absolute=absolute), st.integers(idle, 1200)
        )
    ),
)
uses = st.lists(
    st.tuples(st.sampled_from(["get", "update", "list"]), st.floats(0, 700, allow_nan=False)),
    min_size=1,
    max_size=12,
)


@settings(deadline=None, max_examples=150)
@given(lifetime=lifetimes, uses=uses)
def test_expired_handles_are_always_refused(
    lifetime: Lifetime, uses: list[tuple[str, float]]
) -> None:
    anyio.run(_check_lifetime, lifetime, uses)


async def _check_lifetime(lifetime: Lifetime, uses: list[tuple[str, float]]) -> None:
    kind = HandleKind("basket", "bsk", Basket, lifetime)
    clock = ManualClock(T0)
    store = CountingStore(MemoryStore(clock=clock))
    manager = HandleManager(store, [kind], secret_keys=KEY, clock=clock)
    handle = await manager.create(ALICE, kind)
    created = int(clock())
    hard = created + lifetime.absolute if lifetime.absolute else float("inf")
    deadline = lifetime.deadline(created, clock())
    for operation, gap in uses:
        clock.advance(gap)
        now, alive = clock(), clock() < deadline
        if operation == "list":
            listed = [h.id for h in await manager.list(ALICE, kind)]
            assert listed == ([handle.id] if alive else [])
            continue
        call = (
            manager.get(ALICE, kind, handle.id)
            if operation == "get"
            else manager.update(ALICE, kind, handle.id, noop)
        )
        if alive:
            await call
            deadline = min(now + (lifetime.idle or float("inf")), hard)
        else:
            with pytest.raises(HandleExpired):
                await call
            return


async def test_every_refusal_is_a_handle_error_never_a_crash() -> None:
    env = make_env()
    for handle_id in ["", "bsk_", "\x00" * 47, "bsk_" + "é" * 43, "bsk_" + "A" * 10_000]:
        with pytest.raises(HandleError):
            await env.manager.get(ALICE, BASKET, handle_id)
    assert KINDS and sum(env.store.calls.values()) == 0
