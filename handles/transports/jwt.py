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
import os
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from ..principal import Principal

if TYPE_CHECKING:
    from joserfc.jwk import KeyFlexible
    from joserfc.jwt import JWTClaimsRegistry

__all__ = ["JWTVerifier"]

logger = logging.getLogger("handles.transports.jwt")
DEFAULT_LEEWAY_SECONDS = 30


class JWTVerifier:
    """A ``TokenVerifier`` for JWT access tokens.

    The principal is ``(iss, sub, client_id or azp)``; its scopes come from
    ``scope`` (space-separated) or ``scp`` (a list or a space-separated string).

    Args:
        issuer: The required ``iss``.
        audience: The resource URL the tokens must be issued for (``aud``).
        secret: The HS256 shared secret (at least 32 bytes is wise).
        jwks: The JWKS document (``{"keys": [...]}``) for RS256 and friends.
        algorithms: The accepted ``alg`` values; by default HS256 with a
            secret, RS256 with a JWKS.
        leeway: Seconds of clock skew tolerated on ``exp`` and ``nbf``.

    Raises:
        ImportError: joserfc is not installed.
        ValueError: Not exactly one of ``secret`` and ``jwks`` was given.
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
    ) -> None:
        joserfc = _import_joserfc()
        if (secret is None) == (jwks is None):
            raise ValueError("give JWTVerifier exactly one of secret= (HS256) or jwks= (RS256)")
        self._key: KeyFlexible
        if secret is not None:
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
        return _principal(claims)


def _principal(claims: dict[str, Any]) -> Principal | None:
    client_id = claims.get("client_id") or claims.get("azp")
    subject = claims.get("sub") or client_id
    if not isinstance(subject, str) or not subject:
        logger.info("refused a JWT: it names no subject")
        return None
    return Principal(
        subject=subject,
        issuer=str(claims["iss"]),
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=_scopes(claims),
    )


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
