"""An authorization server's signing keys, fetched from its ``jwks_uri`` and kept fresh.

``RemoteKeys`` fetches the JWKS document over HTTPS with httpx, keeps it for
``ttl`` seconds, and fetches it again at most once per ``refetch_interval`` when a
token names a key id it does not hold (the server rotated its keys). When a fetch
fails, the keys already held keep serving for up to ``max_stale`` seconds past
their ``ttl``: a brief outage at the issuer does not lock every caller out. Only
one fetch runs at a time; the other requests wait for it.

Discovery (``discover_jwks_uri``) reads the issuer's RFC 8414 metadata
(``/.well-known/oauth-authorization-server``, then OpenID Connect's
``/.well-known/openid-configuration``) and checks that it names the same issuer.
Plain HTTP is refused unless ``allow_http_loopback`` is set and the host is a
loopback address: for tests against a local server, never for a deployment.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio

__all__ = ["JWKSError", "RemoteKeys", "check_url", "discover_jwks_uri"]

logger = logging.getLogger("handles.transports.jwt")
MAX_DOCUMENT_BYTES = 1024 * 1024


class JWKSError(Exception):
    """The keys or the metadata could not be fetched or read (the reason is the message)."""


def check_url(url: str, *, allow_http_loopback: bool, what: str) -> None:
    """Raise ``ValueError`` unless ``url`` is HTTPS (or loopback HTTP when allowed)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and _is_loopback(parts.hostname):
        if allow_http_loopback:
            return
        raise ValueError(
            f"{what} {url[:80]!r} is plain HTTP; keys must come over HTTPS "
            "(allow_http_loopback=True allows a loopback URL, for tests only)"
        )
    raise ValueError(f"{what} must be an https:// URL, got {url[:80]!r}")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _get_json(client: Any, url: str) -> Any:
    """GET ``url`` and parse its JSON body (at most 1 MiB); ``JWKSError`` on any failure."""
    import httpx

    try:
        async with client.stream("GET", url, headers={"accept": "application/json"}) as reply:
            if reply.status_code != 200:
                raise JWKSError(f"GET {url} answered {reply.status_code}")
            body = b""
            async for chunk in reply.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise JWKSError(f"GET {url}: the document is over {MAX_DOCUMENT_BYTES} bytes")
    except httpx.HTTPError as exc:
        raise JWKSError(f"GET {url} failed: {type(exc).__name__}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise JWKSError(f"GET {url}: the body is not JSON") from None


async def discover_jwks_uri(client: Any, issuer: str, *, allow_http_loopback: bool) -> str:
    """The ``jwks_uri`` of ``issuer``'s authorization server metadata (RFC 8414, or OIDC)."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    candidates = [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]
    failures = []
    for url in dict.fromkeys(candidates):
        try:
            metadata = await _get_json(client, url)
        except JWKSError as exc:
            failures.append(str(exc))
            continue
        if not isinstance(metadata, dict) or metadata.get("issuer") != issuer:
            failures.append(f"{url} names another issuer")
            continue
        jwks_uri = metadata.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise JWKSError(f"{url} has no jwks_uri")
        check_url(jwks_uri, allow_http_loopback=allow_http_loopback, what="the jwks_uri")
        return jwks_uri
    raise JWKSError(f"no authorization server metadata for {issuer}: {'; '.join(failures)}")


class RemoteKeys:
    """The JWKS at ``jwks_uri`` (or discovered from ``issuer``), cached and refreshed."""

    def __init__(
        self,
        *,
        jwks_uri: str | None,
        issuer: str,
        ttl: float,
        refetch_interval: float,
        max_stale: float,
        timeout: float,
        allow_http_loopback: bool,
        clock: Callable[[], float],
        import_keys: Callable[[dict[str, Any]], Any],
    ) -> None:
        if jwks_uri is not None:
            check_url(jwks_uri, allow_http_loopback=allow_http_loopback, what="jwks_uri")
        else:
            check_url(issuer, allow_http_loopback=allow_http_loopback, what="the issuer")
        self._uri, self._issuer = jwks_uri, issuer
        self._ttl, self._interval, self._max_stale = ttl, refetch_interval, max_stale
        self._timeout, self._allow_http = timeout, allow_http_loopback
        self._clock, self._import = clock, import_keys
        self._keys: Any = None
        self._kids: frozenset[str] = frozenset()
        self._fetched_at = float("-inf")  # when the keys held were fetched
        self._tried_at = float("-inf")  # when a fetch was last tried
        self._lock: anyio.Lock | None = None
        self.fetches = 0
        """How many fetches of the JWKS were tried (for tests and metrics)."""

    async def keys_for(self, kid: str | None) -> Any:
        """The key set to verify a token whose header names ``kid``; ``None`` if none is held.

        Fetches when the keys are older than ``ttl``, or when ``kid`` is unknown
        (at most once per ``refetch_interval`` either way).
        """
        now = self._clock()
        stale = now - self._fetched_at > self._ttl
        unknown = kid is not None and kid not in self._kids
        if (stale or unknown) and now - self._tried_at >= self._interval:
            if self._lock is None:
                self._lock = anyio.Lock()
            async with self._lock:
                # Another request may have fetched while this one waited.
                now = self._clock()
                stale = now - self._fetched_at > self._ttl
                unknown = kid is not None and kid not in self._kids
                if (stale or unknown) and now - self._tried_at >= self._interval:
                    await self._fetch()
        if self._keys is None:
            return None
        if self._clock() - self._fetched_at > self._ttl + self._max_stale:
            logger.warning("refused a JWT: the cached keys are older than ttl + max_stale")
            return None
        return self._keys

    async def _fetch(self) -> None:
        import httpx

        self._tried_at = self._clock()
        self.fetches += 1
        try:
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
                if self._uri is None:
                    self._uri = await discover_jwks_uri(
                        client, self._issuer, allow_http_loopback=self._allow_http
                    )
                document = await _get_json(client, self._uri)
            if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
                raise JWKSError(f"{self._uri} is not a JWKS document (no keys list)")
            keys = self._import(document)
        except (JWKSError, ValueError) as exc:
            held = "keeping the keys held" if self._keys is not None else "no keys held"
            logger.warning("could not refresh the JWKS (%s): %s", held, exc)
            return
        except Exception as exc:  # a malformed key, from joserfc
            logger.warning("could not read the JWKS at %s: %s", self._uri, type(exc).__name__)
            return
        self._keys = keys
        self._kids = frozenset(
            kid
            for key in document["keys"]
            if isinstance(key, dict) and isinstance(kid := key.get("kid"), str)
        )
        self._fetched_at = self._tried_at
        logger.info("fetched %d key(s) from %s", len(document["keys"]), self._uri)
