from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from handles.errors import (
    HandleClosed,
    HandleConflict,
    HandleError,
    HandleExpired,
    QuotaExceeded,
    StorageUnavailable,
    TransientHandleError,
    UnknownHandle,
    WrongKind,
    echo,
)
from handles.kinds import HandleKind, Lifetime


class Basket(BaseModel):
    items: dict[str, int] = {}


BASKET = HandleKind(
    "basket", "bsk", Basket, Lifetime(idle=1800, absolute=86400), close_tool="close_basket"
)
CART = HandleKind("cart", "crt", Basket, Lifetime(idle=600))
ORDER = HandleKind("order", "ord", Basket, Lifetime(absolute=3600))
BSK = "bsk_" + "A" * 43
AT = datetime(2026, 11, 30, 0, 29, tzinfo=UTC).timestamp()


def test_str_is_message_then_hint() -> None:
    error = HandleError("Something happened.", "Call fix_it.")
    assert (error.message, error.hint) == ("Something happened.", "Call fix_it.")
    assert str(error) == "Something happened. Call fix_it."


def test_unknown() -> None:
    error = UnknownHandle(BASKET, "bsk_123")
    assert error.code == "unknown"
    assert str(error) == (
        "Unknown basket 'bsk_123'. Copy the basket_id exactly as create_basket returned it, "
        "call list_baskets to see your open baskets, or call create_basket to start a new one."
    )


def test_wrong_kind() -> None:
    error = WrongKind(BASKET, ORDER, "ord_x")
    assert error.code == "wrong_kind"
    assert error.actual == "order"
    assert str(error) == (
        "'ord_x' is an order id, not a basket id. Pass a basket_id exactly as create_basket "
        "returned it, or call list_baskets to see your open baskets."
    )
    assert str(WrongKind(ORDER, CART, "crt_y")).startswith("'crt_y' is a cart id, not an order")


def test_expired_at_a_known_time() -> None:
    error = HandleExpired(BASKET, BSK, AT)
    assert (error.code, error.expired_at) == ("expired", AT)
    assert str(error) == (
        f"Basket '{BSK}' expired at 2026-11-30T00:29:00Z (baskets expire after 30 minutes "
        "without use and 24 hours after creation). Call create_basket to start a new basket."
    )


def test_expired_at_an_unknown_time_says_so() -> None:
    assert str(HandleExpired(CART, "crt_1", None)) == (
        "Cart 'crt_1' has expired; the exact time is not known (carts expire after "
        "10 minutes without use). Call create_cart to start a new cart."
    )


def test_closed() -> None:
    error = HandleClosed(BASKET, BSK, "checked out", AT)
    assert (error.code, error.reason, error.closed_at) == ("closed", "checked out", AT)
    assert str(error) == (
        f"Basket '{BSK}' was checked out at 2026-11-30T00:29:00Z and can no longer be used. "
        "Call create_basket to start a new basket."
    )


def test_quota_names_the_close_tool() -> None:
    error = QuotaExceeded(BASKET, 100)
    assert (error.code, error.limit) == ("quota_exceeded", 100)
    assert str(error) == (
        "You already have 100 open baskets, the most allowed. Call close_basket on one you "
        "no longer need (list_baskets lists them), or wait for one to expire: baskets expire "
        "after 30 minutes without use and 24 hours after creation."
    )


def test_quota_without_a_close_tool() -> None:
    assert str(QuotaExceeded(CART, 3)) == (
        "You already have 3 open carts, the most allowed. Wait for one to expire "
        "(carts expire after 10 minutes without use); list_carts lists them."
    )


def test_storage_unavailable_is_transient() -> None:
    error = StorageUnavailable(BASKET)
    assert (error.code, error.retryable) == ("store_unavailable", True)
    assert str(error) == (
        "The basket store is temporarily unavailable. Retry this call in a few seconds."
    )


def test_conflict_is_transient() -> None:
    error = HandleConflict(BASKET, "bsk_1", "changed since it was read")
    assert (error.code, error.retryable) == ("conflict", True)
    assert str(error) == (
        "Basket 'bsk_1' changed since it was read; this change was not applied. "
        "Retry this call shortly."
    )


PERMANENT: list[type[HandleError]] = [
    UnknownHandle,
    WrongKind,
    HandleExpired,
    HandleClosed,
    QuotaExceeded,
]
TRANSIENT: list[type[HandleError]] = [StorageUnavailable, HandleConflict]


def test_tree() -> None:
    for cls in PERMANENT:
        assert issubclass(cls, HandleError)
        assert not cls.retryable
    for cls in TRANSIENT:
        assert issubclass(cls, TransientHandleError)
        assert cls.retryable
    assert issubclass(TransientHandleError, HandleError)
    assert issubclass(HandleError, Exception)


def test_codes_are_distinct() -> None:
    classes = PERMANENT + TRANSIENT
    assert len({cls.code for cls in classes}) == len(classes)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("bsk_1", "'bsk_1'"),
        ("x" * 60, "'" + "x" * 60 + "'"),
        ("x" * 61, "'" + "x" * 60 + "…'"),
        ("a'b", '"a\'b"'),
        ("line\nbreak", "'line\\nbreak'"),
    ],
)
def test_echo_quotes_and_truncates(value: str, shown: str) -> None:
    assert echo(value) == shown


def test_unknown_echo_of_a_long_value_is_truncated() -> None:
    error = UnknownHandle(BASKET, "z" * 500)
    assert error.message == f"Unknown basket '{'z' * 60}…'."
