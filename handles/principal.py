"""``Principal``: the authenticated caller, and the digest that keys its state.

Identity is ``(issuer, subject, client_id)``, as the MCP SDK's
``principal_components``; scopes say what the caller may do, not who it is, so they
are not part of the digest. Stores and indexes only ever see ``digest``.

A principal is a user (a token with a subject) or a client acting as itself (a
client-credentials token, which has no ``sub``): ``kind="client"``. The two never
share a digest, even when a user's subject equals the client's id.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["Principal"]


class _Token(Protocol):
    """What we read of the MCP SDK's and FastMCP's ``AccessToken``."""

    @property
    def client_id(self) -> str: ...
    @property
    def scopes(self) -> list[str]: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def claims(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the subject, who vouched for it, and through which client."""

    subject: str
    issuer: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    kind: Literal["user", "client"] = "user"
    digest: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.subject:
            raise ValueError("a principal needs a non-empty subject")
        parts: list[str | None] = [self.issuer, self.subject, self.client_id]
        if self.kind == "client":
            parts.append("client")  # four parts: never equal to a user's three
        elif self.kind != "user":
            raise ValueError(f"a principal's kind is 'user' or 'client', got {self.kind!r}")
        canonical = json.dumps(parts).encode()
        object.__setattr__(self, "digest", hashlib.sha256(canonical).hexdigest()[:32])

    @classmethod
    def for_client(
        cls, client_id: str, issuer: str | None = None, scopes: frozenset[str] = frozenset()
    ) -> Principal:
        """A client acting as itself (a token without a subject): its own principal."""
        return cls(client_id, issuer, client_id, scopes, kind="client")

    @classmethod
    def from_environment(cls, variable: str = "HANDLES_PRINCIPAL") -> Principal:
        """The stdio caller: ``$HANDLES_PRINCIPAL``, else the OS user name."""
        return cls(subject=os.environ.get(variable) or getpass.getuser(), issuer="local")

    @classmethod
    def from_access_token(cls, token: _Token) -> Principal:
        """The principal of an SDK or FastMCP ``AccessToken``: ``(iss, sub, client_id)``;
        without a subject, ``for_client(client_id)``, which never equals a user.

        Like the SDK's ``principal_components`` it is who issued the token, for whom and
        through which client, so two users of one client are two principals; the digest
        is ours, not the SDK's ``json.dumps`` of the three.
        """
        claim = (token.claims or {}).get("iss")
        issuer = str(claim) if claim is not None else None
        scopes = frozenset(token.scopes)
        if not token.subject:  # a client-credentials token: the client as itself
            return cls.for_client(token.client_id, issuer, scopes)
        return cls(token.subject, issuer, token.client_id, scopes)
