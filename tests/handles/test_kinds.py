from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import BaseModel

from handles.kinds import HandleKind, Lifetime, humanize_duration, iso_utc


class Basket(BaseModel):
    items: dict[str, int] = {}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1, "1 second"),
        (45, "45 seconds"),
        (60, "1 minute"),
        (90, "90 seconds"),
        (1800, "30 minutes"),
        (3600, "1 hour"),
        (5400, "90 minutes"),
        (7200, "2 hours"),
        (86400, "24 hours"),
        (129600, "36 hours"),
        (172800, "2 days"),
        (604800, "7 days"),
        (0.5, "0.5 seconds"),
        (90.5, "90.5 seconds"),
    ],
)
def test_humanize_duration(seconds: float, text: str) -> None:
    assert humanize_duration(seconds) == text


def kind(lifetime: Lifetime, **options: object) -> HandleKind[Basket]:
    return HandleKind("basket", "bsk", Basket, lifetime, **options)  # type: ignore[arg-type]


def test_sentence_idle_only() -> None:
    sentence = kind(Lifetime(idle=timedelta(minutes=30))).lifetime_sentence
    assert sentence == "Baskets expire after 30 minutes without use."


def test_sentence_absolute_only() -> None:
    sentence = kind(Lifetime(absolute=timedelta(hours=24))).lifetime_sentence
    assert sentence == "Baskets expire 24 hours after creation."


def test_sentence_both() -> None:
    lifetime = Lifetime(idle=timedelta(minutes=30), absolute=timedelta(days=1))
    assert kind(lifetime).lifetime_sentence == (
        "Baskets expire after 30 minutes without use and 24 hours after creation."
    )


def test_sentence_uses_the_plural() -> None:
    box = HandleKind("box", "box", Basket, Lifetime(absolute=7 * 86400), plural="boxes")
    assert box.lifetime_sentence == "Boxes expire 7 days after creation."


def test_lifetime_keeps_whole_days_of_a_timedelta() -> None:
    # timedelta(days=1).seconds is 0: the Litestar bug this guards against.
    assert Lifetime(absolute=timedelta(days=1)).absolute == 86400.0


@pytest.mark.parametrize(
    "arguments",
    [{}, {"idle": 0}, {"absolute": -5}, {"idle": timedelta(0)}, {"idle": 100, "absolute": 50}],
)
def test_lifetime_rejects_bad_policies(arguments: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"lifetime|idle timeout"):
        Lifetime(**arguments)


def test_deadline_is_renewed_by_use_and_capped_by_creation() -> None:
    both = Lifetime(idle=1800, absolute=86400)
    assert both.deadline(1000, 1000) == 2800
    assert both.deadline(1000, 5000) == 6800
    assert both.deadline(1000, 86000) == 87400
    assert Lifetime(idle=1800).deadline(1000, 5000) == 6800
    assert Lifetime(absolute=86400).deadline(1000, 5000) == 87400


def test_absolute_deadline() -> None:
    assert Lifetime(idle=60, absolute=120).absolute_deadline(1000) == 1120
    assert Lifetime(idle=60).absolute_deadline(1000) is None


def test_kind_defaults() -> None:
    basket = kind(Lifetime(idle=60))
    assert basket.plural == "baskets"
    assert basket.create_tool == "create_basket"
    assert basket.list_tool == "list_baskets"
    assert basket.close_tool is None
    assert basket.id_param == "basket_id"
    assert basket.quota == 100
    assert basket.label == "basket"


def test_multiword_kind() -> None:
    cart = HandleKind("shopping_cart", "sc", Basket, Lifetime(idle=60))
    assert cart.label == "shopping cart"
    assert cart.plural == "shopping carts"
    assert cart.list_tool == "list_shopping_carts"
    assert cart.create_tool == "create_shopping_cart"
    assert cart.lifetime_sentence == "Shopping carts expire after 1 minute without use."


def test_kind_overrides() -> None:
    basket = kind(
        Lifetime(idle=60),
        create_tool="open_basket",
        list_tool="my_baskets",
        close_tool="checkout",
        id_param="basket",
        quota=None,
    )
    assert (basket.create_tool, basket.list_tool, basket.close_tool) == (
        "open_basket",
        "my_baskets",
        "checkout",
    )
    assert basket.id_param == "basket"
    assert basket.quota is None


@pytest.mark.parametrize("name", ["", "Basket", "1basket", "bas-ket", "bas ket"])
def test_kind_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        HandleKind(name, "bsk", Basket, Lifetime(idle=60))


@pytest.mark.parametrize("prefix", ["", "b", "BSK", "bs_k", "abcdefghi", "1bs"])
def test_kind_rejects_bad_prefixes(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        HandleKind("basket", prefix, Basket, Lifetime(idle=60))


def test_kind_rejects_a_zero_quota() -> None:
    with pytest.raises(ValueError, match="quota"):
        kind(Lifetime(idle=60), quota=0)


def test_iso_utc_has_seconds_precision() -> None:
    moment = datetime(2026, 11, 29, 23, 59, tzinfo=UTC).timestamp()
    assert iso_utc(moment) == "2026-11-29T23:59:00Z"
    assert iso_utc(moment + 0.75) == "2026-11-29T23:59:00Z"
