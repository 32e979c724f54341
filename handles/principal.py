"""``Principal``: the authenticated caller, and the digest that keys its state.

Identity is ``(issuer, subject, client_id)``, as the MCP SDK's
``principal_components``; scopes say what the caller may do, not who it is, so they
are not part of the digest. Stores and indexes only ever see ``digest``.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

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
    digest: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.subject:
            raise ValueError("a principal needs a non-empty subject")
        canonical = json.dumps([self.issuer, self.subject, self.client_id]).encode()
        object.__setattr__(self, "digest", hashlib.sha256(canonical).hexdigest()[:32])

    @classmethod
    def from_environment(cls, variable: str = "HANDLES_PRINCIPAL") -> Principal:
        """The stdio caller: ``$HANDLES_PRINCIPAL``, else the OS user name."""
        return cls(subject=os.environ.get(variable) or getpass.getuser(), issuer="local")

    @classmethod
    def from_access_token(cls, token: _Token) -> Principal:
        """The principal of an SDK or FastMCP ``AccessToken``: ``(iss, sub or client_id,
        client_id)``.

        Like the SDK's ``principal_components`` it is who issued the token, for whom and
        through which client, so two users of one client are two principals; the digest
        is ours, not the SDK's ``json.dumps`` of the three.
        """
        issuer = (token.claims or {}).get("iss")
        return cls(
            subject=token.subject or token.client_id,
            issuer=str(issuer) if issuer is not None else None,
            client_id=token.client_id,
            scopes=frozenset(token.scopes),
        )
