"""The public pieces for wiring by hand: key ring, principals, id type, models, hints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from handles import (
    HandleKind,
    HandleManager,
    HandleTools,
    Lifetime,
    Principal,
    QuotaExceeded,
    Server,
    UnknownHandle,
    secret_keys_from_environment,
)
from handles.transports import connect_memory
from handles.verbs import ANNOTATIONS
from stores import MemoryStore

pytestmark = pytest.mark.anyio


class Cart(BaseModel):
    items: list[str] = []


CART = HandleKind("cart", "crt", Cart, Lifetime(idle=600), close_tool="drop_cart")


def test_key_ring_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = "old-key-" + "o" * 24, "new-key-" + "n" * 32
    monkeypatch.setenv("HANDLES_SECRET", f" {old} , {new} ")
    assert secret_keys_from_environment() == [old, new]
    monkeypatch.setenv("HANDLES_SECRET", "")
    assert secret_keys_from_environment() is None
    monkeypatch.delenv("HANDLES_SECRET")
    assert secret_keys_from_environment() is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (" , ", "no key in it"),  # a mistake, not a request for an ephemeral key
        ("old-key-" + "o" * 24 + ",,", "key 2 is blank"),
        ("a" * 32, "key 1 is one character repeated"),
    ],
)
def test_a_blank_or_repeated_key_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("HANDLES_SECRET", value)
    with pytest.raises(ValueError, match=f"^HANDLES_SECRET: {message}$"):
        secret_keys_from_environment()


def test_a_short_key_names_the_variable_and_place_not_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEYS", f"{'ab' * 16},tooshort")
    with pytest.raises(ValueError, match=r"^MY_KEYS: key 2 has 8 bytes$") as caught:
        secret_keys_from_environment("MY_KEYS")
    assert "tooshort" not in str(caught.value)


def test_a_placeholder_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDLES_SECRET", "replace-with-a-real-key-of-32-bytes-or-more")
    with pytest.raises(ValueError, match=r"^HANDLES_SECRET: key 1 is a placeholder copied from"):
        secret_keys_from_environment()


def test_rotation_newest_last_verifies_the_old_keys_handles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, alice = MemoryStore(), Principal("alice")
    monkeypatch.setenv("HANDLES_SECRET", "old-key-" + "o" * 24)
    before = HandleManager(store, [CART], secret_keys=secret_keys_from_environment())
    monkeypatch.setenv("HANDLES_SECRET", f"{'old-key-' + 'o' * 24},{'new-key-' + 'n' * 24}")
    after = HandleManager(store, [CART], secret_keys=secret_keys_from_environment())

    async def run() -> None:
        old = await before.create(alice, CART)
        assert (await after.get(alice, CART, old.id)).id == old.id
        fresh = await after.create(alice, CART)
        with pytest.raises(UnknownHandle):
            await before.get(alice, CART, fresh.id)

    anyio.run(run)


@dataclass
class Token:
    client_id: str
    subject: str | None
    scopes: list[str] = field(default_factory=list)
    claims: dict[str, Any] | None = None


def test_two_users_of_one_client_are_two_principals() -> None:
    alice = Principal.from_access_token(Token("app", "alice", ["r"], {"iss": "https://idp"}))
    bob = Principal.from_access_token(Token("app", "bob", [], {"iss": "https://idp"}))
    assert alice != bob and alice.digest != bob.digest
    assert alice == Principal("alice", "https://idp", "app", frozenset({"r"}))
    machine = Principal.from_access_token(Token("svc", None))
    assert (machine.subject, machine.issuer, machine.client_id) == ("svc", None, "svc")


def test_from_environment_reads_handles_principal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDLES_PRINCIPAL", "carol")
    assert Principal.from_environment() == Principal("carol", "local")


def test_id_annotation_and_created_model() -> None:
    adapter: TypeAdapter[str] = TypeAdapter(CART.id_annotation)
    schema = adapter.json_schema()
    assert schema["maxLength"] == 256
    assert schema["description"] == (
        "The cart id, exactly as create_cart returned it (starts with crt_). "
        "Carts expire after 10 minutes without use."
    )
    with pytest.raises(ValidationError):
        adapter.validate_python("x" * 257)
    created = CART.created_model(cart_id="crt_1", expires_at="2027-01-01T00:00:00Z")
    assert created.model_dump() == {"cart_id": "crt_1", "expires_at": "2027-01-01T00:00:00Z"}
    assert CART.created_model is CART.created_model


def test_annotation_presets() -> None:
    assert ANNOTATIONS["reads"] == {"readOnlyHint": True, "openWorldHint": False}
    assert ANNOTATIONS["closes"]["destructiveHint"] is True
    with pytest.raises(TypeError):
        ANNOTATIONS["reads"]["readOnlyHint"] = False  # type: ignore[index]


def test_hints_follow_the_tool_names_given() -> None:
    error = QuotaExceeded(CART, 3)
    assert error.text() == str(error)
    assert error.text(lambda name: None) == (
        "You already have 3 open carts, the most allowed. "
        "Wait for one to expire (carts expire after 10 minutes without use)."
    )
    assert error.text(lambda name: f"x_{name}") == (
        "You already have 3 open carts, the most allowed. Call x_drop_cart on one you no "
        "longer need (x_list_carts lists them), or wait for one to expire: carts expire "
        "after 10 minutes without use."
    )


async def test_our_core_leaves_out_hints_naming_missing_tools() -> None:
    server = Server("carts")
    tools = HandleTools(
        server, HandleManager(MemoryStore(), [CART], secret_keys=["blocks-test-key-" + "s" * 17])
    )

    @tools.reads(CART)
    async def show_cart(state: Cart) -> Cart:
        """Show a cart."""
        return state

    result = await _call(server, "show_cart", {"cart_id": "crt_nope"})
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        "Unknown cart 'crt_nope'. Copy the cart_id exactly as it was given to you."
    )

    @tools.lists(CART)
    async def list_carts() -> list[str]:
        """List carts."""
        return []

    result = await _call(server, "show_cart", {"cart_id": "crt_nope"})
    assert result["content"][0]["text"] == (
        "Unknown cart 'crt_nope'. Copy the cart_id exactly as it was given to you, "
        "or call list_carts to see your open carts."
    )


async def _call(server: Server, name: str, arguments: dict[str, Any]) -> Any:
    async with connect_memory(server, Principal("alice")) as client:
        reply = await client.request(1, "tools/call", {"name": name, "arguments": arguments})
    return reply["result"]
