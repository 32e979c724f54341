from __future__ import annotations

import pytest

from handles.errors import HandleError, HandleExpired, UnknownHandle, WrongKind
from handles.manager import HandleManager
from handles.principal import Principal

from .support import ALICE, BASKET, BOB, CART, KEY, KINDS, TICKET, Basket, make_env

pytestmark = pytest.mark.anyio


def noop(basket: Basket) -> None:
    return None


async def test_refused_ids_cause_zero_store_calls() -> None:
    env = make_env()
    basket = await env.manager.create(ALICE, BASKET)
    cart = await env.manager.create(ALICE, CART)
    ticket = await env.manager.create(ALICE, TICKET)
    env.clock.advance(3600)  # the ticket is past its absolute deadline
    flipped = basket.id[:10] + ("A" if basket.id[10] != "A" else "B") + basket.id[11:]
    cases: list[tuple[str, Principal, str, type[HandleError]]] = [
        ("invented", ALICE, "bsk_" + "x" * 43, UnknownHandle),
        ("mistyped", ALICE, flipped, UnknownHandle),
        ("truncated", ALICE, basket.id[:-2], UnknownHandle),
        ("junk", ALICE, "'; DROP TABLE baskets; --", UnknownHandle),
        ("huge", ALICE, "bsk_" + "A" * 100_000, UnknownHandle),
        ("foreign", BOB, basket.id, UnknownHandle),
        ("wrong kind", ALICE, cart.id, WrongKind),
        ("foreign wrong kind", BOB, cart.id, UnknownHandle),
    ]
    env.store.calls.clear()
    for _, principal, handle_id, error in cases:
        for attempt in (
            env.manager.get(principal, BASKET, handle_id),
            env.manager.update(principal, BASKET, handle_id, noop),
            env.manager.close(principal, BASKET, handle_id),
        ):
            with pytest.raises(error):
                await attempt
    with pytest.raises(HandleExpired):
        await env.manager.get(ALICE, TICKET, ticket.id)
    assert sum(env.store.calls.values()) == 0


async def test_foreign_text_does_not_depend_on_the_record() -> None:
    env = make_env()
    live = await env.manager.create(ALICE, BASKET)
    texts = set()
    for change in ("live", "closed", "expired"):
        if change == "closed":
            await env.manager.close(ALICE, BASKET, live.id)
        if change == "expired":
            env.clock.advance(86400)
        with pytest.raises(UnknownHandle) as caught:
            await env.manager.get(BOB, BASKET, live.id)
        texts.add((caught.value.code, str(caught.value)))
    assert texts == {("unknown", str(UnknownHandle(BASKET, live.id)))}


async def test_every_single_character_change_reads_unknown_without_store_calls() -> None:
    env = make_env()
    handle = await env.manager.create(ALICE, BASKET)
    env.store.calls.clear()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for position in range(len(handle.id)):
        for char in alphabet:
            if char == handle.id[position]:
                continue
            forged = handle.id[:position] + char + handle.id[position + 1 :]
            with pytest.raises(UnknownHandle):
                await env.manager.get(ALICE, BASKET, forged)
    assert sum(env.store.calls.values()) == 0


async def test_key_rotation_through_the_manager() -> None:
    env = make_env()
    old, new = KEY, b"guard-new-key-" + b"n" * 18
    created = await env.manager.create(ALICE, BASKET)
    rotating = HandleManager(env.store, KINDS, secret_keys=[old, new], clock=env.clock)
    assert (await rotating.get(ALICE, BASKET, created.id)).id == created.id
    fresh = await rotating.create(ALICE, BASKET)
    rotated = HandleManager(env.store, KINDS, secret_keys=[new], clock=env.clock)
    assert (await rotated.get(ALICE, BASKET, fresh.id)).id == fresh.id
    with pytest.raises(UnknownHandle):
        await rotated.get(ALICE, BASKET, created.id)
    with pytest.raises(UnknownHandle):  # a wrong key, however the store looks
        await HandleManager(env.store, KINDS, secret_keys=b"wrong-key-" + b"w" * 22).get(
            ALICE, BASKET, fresh.id
        )
