"""``JWTVerifier``: accept signed JWT access tokens issued for this server.

Needs the ``jwt`` extra (``pip install mcp-handles[jwt]``, which brings joserfc).
HS256 takes a shared secret; RS256 (and other asymmetric algorithms) take the
authorization server's JWKS document, as a dict or from a file. A token passes
when its signature verifies, it has not expired (``exp``, with a small leeway)
and is already valid (``nbf``), its ``iss`` is the configured issuer, and its
``aud`` is, or contains, this server's resource URL.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from ..principal import Principal

if TYPE_CHECKING:
    from joserfc.jwk import KeyFlexible
    from joserfc.jwt import JWTClaimsRegistry

__all__ = ["JWTVerifier"]

logger = logging.getLogger("handles.transports.jwt")
DEFAULT_LEEWAY_SECONDS = 30
DEFAULT_MAX_LIFETIME_SECONDS = 24 * 3600
"""The furthest in the future a token's ``exp`` may be (a longer-lived token is refused)."""
MIN_HS256_SECRET_BYTES = 32
"""RFC 7518 §3.2: an HS256 key must be at least as long as the hash output."""


class JWTVerifier:
    """A ``TokenVerifier`` for JWT access tokens.

    The principal is ``(iss, sub, client_id or azp)``; its scopes come from
    ``scope`` (space-separated) or ``scp`` (a list or a space-separated string).

    Args:
        issuer: The required ``iss``.
        audience: The resource URL the tokens must be issued for (``aud``).
        secret: The HS256 shared secret, at least 32 bytes (RFC 7518 §3.2).
        jwks: The JWKS document (``{"keys": [...]}``) for RS256 and friends.
        algorithms: The accepted ``alg`` values; by default HS256 with a
            secret, RS256 with a JWKS.
        leeway: Seconds of clock skew tolerated on ``exp`` and ``nbf``.
        max_lifetime: The furthest in the future ``exp`` may be, in seconds; a
            token claiming to live longer (``exp: 1e300``) is refused.
        clock: The current time, in Unix seconds (for tests).

    Raises:
        ImportError: joserfc is not installed.
        ValueError: Not exactly one of ``secret`` and ``jwks`` was given, or the
            secret is shorter than 32 bytes.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        secret: str | bytes | None = None,
        jwks: Mapping[str, Any] | None = None,
        algorithms: Collection[str] | None = None,
        leeway: int = DEFAULT_LEEWAY_SECONDS,
        max_lifetime: float = DEFAULT_MAX_LIFETIME_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        joserfc = _import_joserfc()
        if (secret is None) == (jwks is None):
            raise ValueError("give JWTVerifier exactly one of secret= (HS256) or jwks= (RS256)")
        self._key: KeyFlexible
        if secret is not None:
            size = len(secret.encode() if isinstance(secret, str) else secret)
            if size < MIN_HS256_SECRET_BYTES:
                raise ValueError(
                    f"the HS256 secret is {size} bytes; it must be at least "
                    f"{MIN_HS256_SECRET_BYTES} (e.g. secrets.token_urlsafe(32))"
                )
            self._key = joserfc.jwk.OctKey.import_key(secret)
            self._algorithms = list(algorithms or ("HS256",))
        else:
            self._key = joserfc.jwk.KeySet.import_key_set(dict(jwks or {}))
            self._algorithms = list(algorithms or ("RS256",))
        self._claims: JWTClaimsRegistry = joserfc.jwt.JWTClaimsRegistry(
            leeway=leeway,
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": audience},
            exp={"essential": True},
        )
        self._errors: tuple[type[Exception], ...] = (joserfc.errors.JoseError, ValueError)
        self._leeway, self._max_lifetime, self._clock = leeway, max_lifetime, clock

    @classmethod
    def from_jwks_file(
        cls, path: str | os.PathLike[str], *, issuer: str, audience: str, **options: Any
    ) -> JWTVerifier:
        """A verifier whose keys are the JWKS document in the JSON file at ``path``."""
        with open(path, encoding="utf-8") as file:
            jwks = json.load(file)
        return cls(issuer=issuer, audience=audience, jwks=jwks, **options)

    async def verify_token(self, token: str) -> Principal | None:
        """The token's principal, or ``None`` if any check fails (the reason is logged)."""
        from joserfc import jwt

        try:
            claims = jwt.decode(token, self._key, algorithms=self._algorithms).claims
            self._claims.validate(claims)
        except self._errors as exc:
            logger.info("refused a JWT: %s", type(exc).__name__)
            return None
        if not self._exp_in_bounds(claims.get("exp")):
            return None
        return _principal(claims)

    def _exp_in_bounds(self, exp: Any) -> bool:
        if isinstance(exp, bool) or not isinstance(exp, int | float) or not math.isfinite(exp):
            logger.info("refused a JWT: its exp is not a number")
            return False
        if exp > self._clock() + self._max_lifetime + self._leeway:
            logger.info("refused a JWT: its exp is more than %gs away", self._max_lifetime)
            return False
        return True


def _principal(claims: dict[str, Any]) -> Principal | None:
    """A user for a token with ``sub``; without one, the client as itself (never a user)."""
    client_id = claims.get("client_id") or claims.get("azp")
    client_id = client_id if isinstance(client_id, str) and client_id else None
    subject = claims.get("sub")
    issuer, scopes = str(claims["iss"]), _scopes(claims)
    if isinstance(subject, str) and subject:
        return Principal(subject, issuer, client_id, scopes)
    if subject is None and client_id is not None:
        return Principal.for_client(client_id, issuer, scopes)
    logger.info("refused a JWT: it names no subject and no client")
    return None


def _scopes(claims: dict[str, Any]) -> frozenset[str]:
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(s for s in value if isinstance(s, str))
    return frozenset()


def _import_joserfc() -> Any:
    try:
        import joserfc.errors
        import joserfc.jwk
        import joserfc.jwt
    except ImportError as exc:
        raise ImportError(
            "JWTVerifier needs joserfc: install mcp-handles[jwt] (pip install 'mcp-handles[jwt]')"
        ) from exc
    return joserfc
