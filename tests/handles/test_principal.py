"""Principals: a user and a client acting as itself never share a digest."""

from __future__ import annotations

import pytest

from handles.principal import Principal


def test_a_users_digest_is_what_it_was() -> None:
    """Handles are bound to digests: a user's digest must not change across versions."""
    user = Principal("alice", "https://id.example", "app")
    assert user.digest == "a86983cbdb27c4b009619d3640d1b2a6"


def test_a_client_is_never_a_user() -> None:
    client = Principal.for_client("svc", "https://id.example")
    user = Principal("svc", "https://id.example", "svc")
    assert (client.subject, client.client_id, client.kind) == ("svc", "svc", "client")
    assert client != user
    assert client.digest != user.digest
    assert Principal("svc", "https://id.example", "svc", kind="client") == client


def test_a_kind_is_user_or_client() -> None:
    with pytest.raises(ValueError, match="'user' or 'client'"):
        Principal("x", kind="robot")  # type: ignore[arg-type]
