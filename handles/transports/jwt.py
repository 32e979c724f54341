"""``JWTVerifier``: accept signed JWT access tokens issued for this server.

Needs the ``jwt`` extra (``pip install mcp-handles[jwt]``, which brings joserfc
and httpx). HS256 takes a shared secret; RS256 (and other asymmetric algorithms)
take the authorization server's JWKS: a document (a dict, or a file), a
``jwks_uri`` fetched over HTTPS and kept fresh, or the issuer alone
(``JWTVerifier.from_issuer``), whose metadata names the ``jwks_uri``. A token passes
when its signature verifies, it has not expired (``exp``, with a small leeway)
and is already valid (``nbf``), its ``iss`` is the configured issuer, and its
``aud`` is, or contains, this server's resource URL.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import os
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from ..principal import Principal
from ._jwks import RemoteKeys

if TYPE_CHECKING:
    from joserfc.jwk import KeyFlexible
    from joserfc.jwt import JWTClaimsRegistry

__all__ = ["JWTVerifier"]

logger = logging.getLogger("handles.transports.jwt")
DEFAULT_LEEWAY_SECONDS = 30
DEFAULT_MAX_LIFETIME_SECONDS = 24 * 3600
"""The furthest in the future a token's ``exp`` may be (a longer-lived token is refused)."""
DEFAULT_JWKS_TTL_SECONDS = 300
"""How long fetched keys are used before they are fetched again."""
DEFAULT_JWKS_REFETCH_SECONDS = 30
"""The least time between two fetches (an unknown ``kid``, or a failing issuer)."""
DEFAULT_JWKS_MAX_STALE_SECONDS = 3600
"""How long past their TTL cached keys keep serving while the issuer cannot be reached."""
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
        jwks_uri: Where to fetch the JWKS (HTTPS). It is kept ``jwks_ttl``
            seconds, fetched again at most once per ``jwks_refetch_interval``
            when a token names an unknown ``kid`` (key rotation), and, when a
            fetch fails, served from the cache for up to ``jwks_max_stale``
            seconds more.
        discover: Find the ``jwks_uri`` in the issuer's metadata instead (see
            ``from_issuer``).
        allow_http_loopback: Allow plain-HTTP loopback URLs for the issuer and
            ``jwks_uri``: for tests against a local server only.
        http_timeout: Seconds for each fetch.
        algorithms: The accepted ``alg`` values; by default HS256 with a
            secret, RS256 with a JWKS.
        leeway: Seconds of clock skew tolerated on ``exp`` and ``nbf``.
        max_lifetime: The furthest in the future ``exp`` may be, in seconds; a
            token claiming to live longer (``exp: 1e300``) is refused.
        clock: The current time, in Unix seconds (for tests).

    Raises:
        ImportError: joserfc is not installed.
        ValueError: Not exactly one of ``secret``, ``jwks``, ``jwks_uri`` and
            ``discover`` was given, the secret is shorter than 32 bytes, or a URL
            is not HTTPS.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        secret: str | bytes | None = None,
        jwks: Mapping[str, Any] | None = None,
        jwks_uri: str | None = None,
        discover: bool = False,
        algorithms: Collection[str] | None = None,
        leeway: int = DEFAULT_LEEWAY_SECONDS,
        max_lifetime: float = DEFAULT_MAX_LIFETIME_SECONDS,
        jwks_ttl: float = DEFAULT_JWKS_TTL_SECONDS,
        jwks_refetch_interval: float = DEFAULT_JWKS_REFETCH_SECONDS,
        jwks_max_stale: float = DEFAULT_JWKS_MAX_STALE_SECONDS,
        http_timeout: float = 5.0,
        allow_http_loopback: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        joserfc = _import_joserfc()
        sources = [secret is not None, jwks is not None, jwks_uri is not None, discover]
        if sum(sources) != 1:
            raise ValueError(
                "give JWTVerifier exactly one of secret= (HS256), jwks=, jwks_uri= or "
                "discover=True (RS256)"
            )
        self._key: KeyFlexible | None = None
        self._remote: RemoteKeys | None = None
        if jwks_uri is not None or discover:
            _import_httpx()
            self._remote = RemoteKeys(
                jwks_uri=jwks_uri,
                issuer=issuer,
                ttl=jwks_ttl,
                refetch_interval=jwks_refetch_interval,
                max_stale=jwks_max_stale,
                timeout=http_timeout,
                allow_http_loopback=allow_http_loopback,
                clock=clock,
                import_keys=joserfc.jwk.KeySet.import_key_set,
            )
            self._algorithms = list(algorithms or ("RS256",))
        elif secret is not None:
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
    def from_issuer(cls, issuer: str, *, audience: str, **options: Any) -> JWTVerifier:
        """A verifier for ``issuer``'s tokens, its keys found from its metadata.

        The ``jwks_uri`` is read from ``{issuer}/.well-known/oauth-authorization-server``
        (RFC 8414) or ``/.well-known/openid-configuration``, on the first token, and
        must name the same issuer. ``options`` are the constructor's.
        """
        return cls(issuer=issuer, audience=audience, discover=True, **options)

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

        key = self._key
        if self._remote is not None:
            key = await self._remote.keys_for(_kid(token))
            if key is None:
                logger.info("refused a JWT: no signing keys are available")
                return None
        assert key is not None
        try:
            claims = jwt.decode(token, key, algorithms=self._algorithms).claims
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


def _kid(token: str) -> str | None:
    """The ``kid`` in a compact JWT's header, if it names one (unverified: for lookup only)."""
    head = token.partition(".")[0]
    if len(head) > 4096:
        return None
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error):
        return None
    kid = header.get("kid") if isinstance(header, dict) else None
    return kid if isinstance(kid, str) else None


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


def _import_httpx() -> None:
    try:
        import httpx  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "JWTVerifier(jwks_uri=...) needs httpx: install mcp-handles[jwt]"
        ) from exc


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
