from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

import anyio.lowlevel
import pytest

from handles.errors import (
    HandleClosed,
    HandleExpired,
    QuotaExceeded,
    StorageUnavailable,
    UnknownHandle,
    WrongKind,
)
from handles.handle import Handle
from handles.manager import HandleManager
from stores.base import StoreUnavailable
from stores.memory import MemoryStore

from .support import (
    ALICE,
    BASKET,
    BOB,
    CART,
    KEY,
    T0,
    TICKET,
    Basket,
    Cart,
    FailingStore,
    make_env,
)

pytestmark = pytest.mark.anyio

POLICY = "baskets expire after 30 minutes without use and 24 hours after creation"
START_NEW = "Call create_basket to start a new basket."


def add(sku: str) -> Callable[[Basket], int]:
    def apply(basket: Basket) -> int:
        basket.items[sku] = basket.items.get(sku, 0) + 1
        basket.count += 1
        return basket.count

    return apply


async def test_create_returns_a_fresh_handle() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    assert handle.id.startswith("bsk_") and len(handle.id) == 47
    assert handle.kind is BASKET
    assert handle.state == Basket()
    assert (handle.version, handle.created_at, handle.expires_at) == (1, T0, T0 + 1800)
    assert handle.created_at_iso == "2026-11-29T23:59:00Z"
    assert handle.expires_at_iso == "2026-11-30T00:29:00Z"


async def test_create_with_an_initial_state() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET, Basket(items={"pear": 2}, count=2))
    assert (await env.manager.get(ALICE, BASKET, handle.id)).state.items == {"pear": 2}


async def test_create_rejects_a_state_of_another_model() -> None:
    env = make_env()
    with pytest.raises(TypeError, match="Basket"):
        await env.manager.create(ALICE, BASKET, cast(Any, Cart()))


async def test_get_reads_and_renews_the_idle_lifetime() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    env.clock.advance(1000)
    got = await env.manager.get(ALICE, BASKET, handle.id)
    assert (got.id, got.version, got.state) == (handle.id, 1, Basket())
    assert (got.created_at, got.expires_at) == (T0, T0 + 2800)


async def test_idle_expiry_says_expired_honestly() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    env.clock.advance(1800)
    with pytest.raises(HandleExpired) as caught:
        await env.manager.get(ALICE, BASKET, handle.id)
    assert caught.value.expired_at is None
    assert str(caught.value) == (
        f"Basket '{handle.id}' has expired; the exact time is not known ({POLICY}). {START_NEW}"
    )


async def test_use_renews_but_never_past_the_absolute_deadline() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    hard = T0 + 86400
    use = 0
    while env.clock.now + 1700 < hard:
        env.clock.advance(1700)
        if use % 2:
            got = await env.manager.get(ALICE, BASKET, handle.id)
        else:
            got = (await env.manager.update(ALICE, BASKET, handle.id, add("fig"))).handle
        assert got.expires_at == min(env.clock.now + 1800, hard)
        use += 1
    assert got.expires_at == hard
    env.clock.now = hard
    calls = sum(env.store.calls.values())
    with pytest.raises(HandleExpired) as caught:
        await env.manager.get(ALICE, BASKET, handle.id)
    assert sum(env.store.calls.values()) == calls  # known from the id alone
    assert caught.value.expired_at == hard
    assert str(caught.value) == (
        f"Basket '{handle.id}' expired at 2026-11-30T23:59:00Z ({POLICY}). {START_NEW}"
    )


async def test_an_absolute_only_kind_is_not_renewed() -> None:
    env = make_env()
    ticket = await env.manager.create(ALICE, TICKET)
    env.clock.advance(3000)
    assert (await env.manager.get(ALICE, TICKET, ticket.id)).expires_at == T0 + 3600
    env.clock.advance(600)
    with pytest.raises(HandleExpired, match="expired at 2026-11-30T00:59:00Z"):
        await env.manager.get(ALICE, TICKET, ticket.id)


async def test_update_applies_and_passes_the_result_back() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    updated = await env.manager.update(ALICE, BASKET, handle.id, add("apple"))
    assert updated.result == 1
    assert (updated.handle.version, updated.handle.state.items) == (2, {"apple": 1})
    handle_, result = updated
    assert isinstance(handle_, Handle) and result == 1
    assert (await env.manager.get(ALICE, BASKET, handle.id)).state.items == {"apple": 1}


async def test_update_accepts_an_async_function() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)

    async def add_pear(basket: Basket) -> str:
        await anyio.lowlevel.checkpoint()
        basket.items["pear"] = 1
        return "added"

    updated = await env.manager.update(ALICE, BASKET, handle.id, add_pear)
    assert updated.result == "added"
    assert (await env.manager.get(ALICE, BASKET, handle.id)).state.items == {"pear": 1}


async def test_a_failing_update_writes_nothing() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET, Basket(items={"kiwi": 1}))
    env.clock.advance(100)

    def spoil(basket: Basket) -> None:
        basket.items.clear()
        raise RuntimeError("out of stock")

    with pytest.raises(RuntimeError, match="out of stock"):
        await env.manager.update(ALICE, BASKET, handle.id, spoil)
    assert env.store.calls["replace"] == 0
    got = await env.manager.get(ALICE, BASKET, handle.id)
    assert (got.version, got.state.items) == (1, {"kiwi": 1})


async def test_update_renews() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    env.clock.advance(1500)
    updated = await env.manager.update(ALICE, BASKET, handle.id, add("fig"))
    assert updated.handle.expires_at == T0 + 1500 + 1800


async def test_a_closed_handle_says_closed_everywhere() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    env.clock.advance(600)
    await env.manager.close(ALICE, BASKET, handle.id)
    env.clock.advance(60)
    expected = (
        f"Basket '{handle.id}' was closed at 2026-11-30T00:09:00Z and can no longer be used. "
        f"{START_NEW}"
    )
    for attempt in (
        env.manager.get(ALICE, BASKET, handle.id),
        env.manager.update(ALICE, BASKET, handle.id, add("fig")),
        env.manager.close(ALICE, BASKET, handle.id),
    ):
        with pytest.raises(HandleClosed) as caught:
            await attempt
        assert str(caught.value) == expected


async def test_a_checkout_says_checked_out() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    await env.manager.close(ALICE, BASKET, handle.id, reason="checked out")
    with pytest.raises(HandleClosed, match="was checked out at 2026-11-29T23:59:00Z") as caught:
        await env.manager.get(ALICE, BASKET, handle.id)
    assert caught.value.reason == "checked out"


async def test_a_tombstone_lasts_until_the_absolute_deadline() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    await env.manager.close(ALICE, BASKET, handle.id)
    env.clock.advance(86399)
    with pytest.raises(HandleClosed):
        await env.manager.get(ALICE, BASKET, handle.id)
    env.clock.advance(1)
    with pytest.raises(HandleExpired, match="expired at 2026-11-30T23:59:00Z"):
        await env.manager.get(ALICE, BASKET, handle.id)


async def test_tombstone_retention_for_idle_only_kinds() -> None:
    env = make_env(closed_retention=3600)
    cart = await env.manager.create(ALICE, CART)
    await env.manager.close(ALICE, CART, cart.id)
    env.clock.advance(3599)
    with pytest.raises(HandleClosed):
        await env.manager.get(ALICE, CART, cart.id)
    env.clock.advance(1)
    with pytest.raises(HandleExpired, match="the exact time is not known"):
        await env.manager.get(ALICE, CART, cart.id)


async def test_closing_an_expired_handle_says_expired() -> None:
    env = make_env()
    cart = await env.manager.create(ALICE, CART)
    env.clock.advance(600)
    with pytest.raises(HandleExpired):
        await env.manager.close(ALICE, CART, cart.id)
    with pytest.raises(HandleExpired):  # and left no tombstone behind
        await env.manager.get(ALICE, CART, cart.id)


async def test_list_shows_the_callers_live_handles_of_one_kind() -> None:
    env = make_env()
    first = await env.manager.create(ALICE, BASKET, Basket(count=1))
    env.clock.advance(10)
    second = await env.manager.create(ALICE, BASKET, Basket(count=2))
    third = await env.manager.create(ALICE, BASKET)
    await env.manager.create(ALICE, CART)
    await env.manager.create(BOB, BASKET)
    listed = await env.manager.list(ALICE, BASKET)
    assert [h.id for h in listed] == [first.id, *sorted([second.id, third.id])]
    assert {h.id: h.state.count for h in listed} == {first.id: 1, second.id: 2, third.id: 0}
    assert all(h.kind is BASKET and h.version == 1 for h in listed)
    assert (listed[0].created_at, listed[0].expires_at) == (T0, T0 + 1800)
    assert [h.kind for h in await env.manager.list(BOB, BASKET)] == [BASKET]
    await env.manager.close(ALICE, BASKET, second.id)
    assert [h.id for h in await env.manager.list(ALICE, BASKET)] == [first.id, third.id]
    env.clock.advance(1800)
    assert await env.manager.list(ALICE, BASKET) == []


async def test_list_does_not_renew() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    env.clock.advance(1000)
    await env.manager.list(ALICE, BASKET)
    env.clock.advance(800)
    with pytest.raises(HandleExpired):
        await env.manager.get(ALICE, BASKET, handle.id)


async def test_quota_of_live_handles_per_principal_and_kind() -> None:
    env = make_env()
    handles = [await env.manager.create(ALICE, BASKET) for _ in range(3)]
    with pytest.raises(QuotaExceeded) as caught:
        await env.manager.create(ALICE, BASKET)
    assert caught.value.limit == 3
    assert str(caught.value) == (
        "You already have 3 open baskets, the most allowed. Call close_basket on one you no "
        f"longer need (list_baskets lists them), or wait for one to expire: {POLICY}."
    )
    await env.manager.create(BOB, BASKET)
    await env.manager.create(ALICE, CART)
    await env.manager.close(ALICE, BASKET, handles[0].id)
    await env.manager.create(ALICE, BASKET)
    env.clock.advance(1800)
    await env.manager.create(ALICE, BASKET)


async def test_unknown_ids_get_the_unknown_text() -> None:
    env = make_env()
    with pytest.raises(UnknownHandle) as caught:
        await env.manager.get(ALICE, BASKET, "bsk_a1b2c3")
    assert str(caught.value) == (
        "Unknown basket 'bsk_a1b2c3'. Copy the basket_id exactly as create_basket returned "
        "it, call list_baskets to see your open baskets, or call create_basket to start a "
        "new one."
    )


async def test_a_foreign_id_reads_exactly_like_an_invented_one() -> None:
    env = make_env()
    live = await env.manager.create(ALICE, BASKET)
    closed = await env.manager.create(ALICE, BASKET)
    await env.manager.close(ALICE, BASKET, closed.id)
    for handle_id in (live.id, closed.id):
        with pytest.raises(UnknownHandle) as caught:
            await env.manager.get(BOB, BASKET, handle_id)
        assert str(caught.value) == str(UnknownHandle(BASKET, handle_id))
        invented = "bsk_" + "Q" * 43
        with pytest.raises(UnknownHandle) as made_up:
            await env.manager.get(BOB, BASKET, invented)
        assert str(made_up.value).replace(invented, handle_id) == str(caught.value)


async def test_wrong_kind_only_for_the_callers_own_handle() -> None:
    env = make_env()
    cart = await env.manager.create(ALICE, CART)
    with pytest.raises(WrongKind) as caught:
        await env.manager.update(ALICE, BASKET, cart.id, add("fig"))
    assert str(caught.value) == (
        f"'{cart.id}' is a cart id, not a basket id. Pass a basket_id exactly as "
        "create_basket returned it, or call list_baskets to see your open baskets."
    )
    with pytest.raises(UnknownHandle):
        await env.manager.get(BOB, BASKET, cart.id)


async def test_store_unavailable_is_a_transient_error() -> None:
    env = make_env(FailingStore)
    handle_id = HandleManager(MemoryStore(), [BASKET], secret_keys=KEY)
    real = await handle_id.create(ALICE, BASKET)
    attempts = [
        env.manager.create(ALICE, BASKET),
        env.manager.get(ALICE, BASKET, real.id),
        env.manager.update(ALICE, BASKET, real.id, add("fig")),
        env.manager.close(ALICE, BASKET, real.id),
        env.manager.list(ALICE, BASKET),
    ]
    for attempt in attempts:
        with pytest.raises(StorageUnavailable) as caught:
            await attempt
        assert caught.value.retryable
        assert isinstance(caught.value.__cause__, StoreUnavailable)
        assert str(caught.value) == (
            "The basket store is temporarily unavailable. Retry this call in a few seconds."
        )


async def test_logs_say_why_without_the_whole_id(caplog: pytest.LogCaptureFixture) -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    with caplog.at_level(logging.DEBUG, logger="handles"), pytest.raises(UnknownHandle):
        await env.manager.get(BOB, BASKET, handle.id)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "tag does not verify" in text
    assert handle.id not in text and handle.id[8:20] not in text
