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

__all__ = ["Principal"]


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
