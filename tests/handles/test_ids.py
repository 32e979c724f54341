from __future__ import annotations

import base64
import hashlib
import logging
import re

import pytest
from itsdangerous import Signer
from itsdangerous.signer import HMACAlgorithm
from pydantic import BaseModel

from handles.ids import HandleCodec, redact
from handles.kinds import HandleKind, Lifetime
from handles.principal import Principal


class Basket(BaseModel):
    items: dict[str, int] = {}


BASKET = HandleKind("basket", "bsk", Basket, Lifetime(idle=1800, absolute=86400))
CART = HandleKind("cart", "crt", Basket, Lifetime(idle=600))
KEY, OTHER_KEY = b"k" * 32, b"o" * 32
ALICE, BOB = Principal("alice").digest, Principal("bob").digest
NOW = 1_796_000_000.25
URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.fixture
def codec() -> HandleCodec:
    return HandleCodec([BASKET, CART], KEY)


def random_part(handle_id: str) -> bytes:
    body = handle_id[4:31]
    return base64.urlsafe_b64decode(body + "=")[4:]


def test_format(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    assert len(handle_id) == 47
    assert re.fullmatch(r"bsk_[A-Za-z0-9_-]{43}", handle_id)


def test_verify_returns_the_mint_time(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    assert codec.verify(BASKET, handle_id, ALICE) == int(NOW)
    assert codec.minted_at(handle_id) == int(NOW)


def test_principal_digest_is_not_in_the_id(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    assert ALICE not in handle_id
    assert ALICE[:8] not in base64.urlsafe_b64decode(handle_id[4:31] + "=").hex()


def test_ids_are_unique(codec: HandleCodec) -> None:
    ids = {codec.mint(BASKET, ALICE, NOW) for _ in range(20_000)}
    assert len(ids) == 20_000


def test_random_part_has_128_balanced_bits(codec: HandleCodec) -> None:
    parts = [random_part(codec.mint(BASKET, ALICE, NOW)) for _ in range(4000)]
    assert {len(part) for part in parts} == {16}
    numbers = [int.from_bytes(part, "big") for part in parts]
    for bit in range(128):
        ones = sum(number >> bit & 1 for number in numbers)
        assert 1700 < ones < 2300, f"bit {bit} set {ones} times in 4000"


def test_every_single_character_change_is_refused(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    for position in range(len(handle_id)):
        for char in URLSAFE + "+/=.~ ":
            if char != handle_id[position]:
                forged = handle_id[:position] + char + handle_id[position + 1 :]
                assert codec.verify(BASKET, forged, ALICE) is None, (position, char)


@pytest.mark.parametrize(
    "junk",
    ["", "bsk_", "bsk", "bsk_" + "A" * 42, "bsk_" + "A" * 44, "x" * 47, "bsk_" + "é" * 43],
)
def test_junk_is_refused(codec: HandleCodec, junk: str) -> None:
    assert codec.verify(BASKET, junk, ALICE) is None
    assert codec.kind_of(junk, ALICE) is None


def test_truncation_and_extension_are_refused(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    assert codec.verify(BASKET, handle_id[:-1], ALICE) is None
    assert codec.verify(BASKET, handle_id + "A", ALICE) is None
    assert codec.verify(BASKET, " " + handle_id, ALICE) is None


def test_another_principal_is_refused(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    assert codec.verify(BASKET, handle_id, BOB) is None
    assert codec.kind_of(handle_id, BOB) is None


def test_a_wrong_key_is_refused(codec: HandleCodec) -> None:
    handle_id = HandleCodec([BASKET], OTHER_KEY).mint(BASKET, ALICE, NOW)
    assert codec.verify(BASKET, handle_id, ALICE) is None


def test_another_kind_is_refused_and_identified(codec: HandleCodec) -> None:
    cart_id = codec.mint(CART, ALICE, NOW)
    assert codec.verify(BASKET, cart_id, ALICE) is None
    assert codec.kind_of(cart_id, ALICE) is CART
    # Swapping the prefix does not help: the salt names the kind.
    assert codec.verify(BASKET, "bsk_" + cart_id[4:], ALICE) is None
    assert codec.kind_of("bsk_" + cart_id[4:], ALICE) is None


def test_key_rotation() -> None:
    old, new = b"1" * 32, b"2" * 32
    before = HandleCodec([BASKET], [old])
    during = HandleCodec([BASKET], [old, new])
    after = HandleCodec([BASKET], [new])
    old_id = before.mint(BASKET, ALICE, NOW)
    new_id = during.mint(BASKET, ALICE, NOW)
    assert during.verify(BASKET, old_id, ALICE) == int(NOW)  # old keys still verify
    assert after.verify(BASKET, new_id, ALICE) == int(NOW)  # the newest key signs
    assert before.verify(BASKET, new_id, ALICE) is None
    assert after.verify(BASKET, old_id, ALICE) is None  # until the old key is removed


def test_string_keys_are_accepted() -> None:
    codec = HandleCodec([BASKET], "s" * 32)
    assert codec.verify(BASKET, codec.mint(BASKET, ALICE, NOW), ALICE) == int(NOW)


@pytest.mark.parametrize("keys", [b"short", [KEY, b"x" * 31], "é" * 15])
def test_short_keys_are_rejected(keys: bytes | str | list[bytes]) -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        HandleCodec([BASKET], keys)


def test_an_empty_ring_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        HandleCodec([BASKET], [])


def test_without_a_key_an_ephemeral_one_is_used_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="handles"):
        first, second = HandleCodec([BASKET], None), HandleCodec([BASKET], None)
    warnings = [r for r in caplog.records if r.name == "handles" and r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "will not survive a restart or work across replicas" in warnings[0].getMessage()
    assert second.verify(BASKET, first.mint(BASKET, ALICE, NOW), ALICE) is None


def test_kinds_must_be_unique() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        HandleCodec([BASKET, BASKET], KEY)
    clash = HandleKind("other", "bsk", Basket, Lifetime(idle=60))
    with pytest.raises(ValueError, match="registered twice"):
        HandleCodec([BASKET, clash], KEY)


def test_an_unregistered_kind_is_a_programming_error() -> None:
    codec = HandleCodec([BASKET], KEY)
    with pytest.raises(ValueError, match="not registered"):
        codec.mint(CART, ALICE, NOW)


class Truncated(HMACAlgorithm):
    """HMAC-SHA256 cut to 12 bytes, as itsdangerous users would write it."""

    def get_signature(self, key: bytes, value: bytes) -> bytes:
        return super().get_signature(key, value)[:12]


def test_tags_match_a_plain_itsdangerous_signer(codec: HandleCodec) -> None:
    """So ids minted before and after a change of the tag code verify alike."""
    plain = Signer(
        KEY,
        salt="mcp-handles/v1:basket:bsk",
        key_derivation="hmac",
        digest_method=hashlib.sha256,
        algorithm=Truncated(hashlib.sha256),
    )
    handle_id = codec.mint(BASKET, ALICE, NOW)
    body, tag = handle_id[4:31], handle_id[31:]
    assert plain.get_signature(body + ALICE).decode() == tag
    assert plain.verify_signature(body + ALICE, tag)


def test_redact_never_logs_a_whole_id(codec: HandleCodec) -> None:
    handle_id = codec.mint(BASKET, ALICE, NOW)
    shown = redact(handle_id)
    assert shown == repr(handle_id[:8] + "…")
    assert handle_id[8:] not in shown
    assert len(redact("x" * 10_000)) < 20
