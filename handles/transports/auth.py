"""Bearer-token authentication for the HTTP transport: who is calling, and may they.

A ``TokenVerifier`` turns the bearer token of a request into a ``Principal`` (or
``None``). Two come built in: ``StaticTokenVerifier`` (fixed tokens, for
development and demos) and ``handles.transports.jwt.JWTVerifier`` (signed JWTs). A verifier
written for the official MCP SDK, which returns an ``AccessToken``, plugs in
through ``adapt_sdk_verifier``.

``BearerAuth`` is what the transport runs per request: it reads the
``Authorization`` header, checks the required scopes, and builds the 401/403
challenges and the RFC 9728 Protected Resource Metadata document.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from ..principal import Principal

__all__ = [
    "AccessTokenLike",
    "BearerAuth",
    "Challenge",
    "SDKTokenVerifier",
    "StaticTokenVerifier",
    "TokenVerifier",
    "adapt_sdk_verifier",
    "principal_from_access_token",
]

logger = logging.getLogger("handles.transports.auth")
WELL_KNOWN = "/.well-known/oauth-protected-resource"


@runtime_checkable
class TokenVerifier(Protocol):
    """Checks a bearer token; return the caller, or ``None`` to refuse it.

    Check everything that makes the token valid for *this* server: signature or
    introspection, expiry, issuer, and that its audience is this resource.
    Scopes go into ``Principal.scopes``; the transport checks the required ones.
    """

    async def verify_token(self, token: str) -> Principal | None:
        """The principal the token stands for, or ``None`` if it is not valid here."""
        ...


class StaticTokenVerifier:
    """Fixed tokens mapped to principals: for development, tests and demos.

    Args:
        tokens: token -> ``Principal``, or token -> subject (a principal with
            ``issuer`` and ``scopes`` below).
        issuer: The issuer of principals given by subject only.
        scopes: The scopes of principals given by subject only.
    """

    def __init__(
        self,
        tokens: Mapping[str, Principal | str],
        *,
        issuer: str = "static",
        scopes: Iterable[str] = (),
    ) -> None:
        granted = frozenset(scopes)
        self._tokens: dict[bytes, Principal] = {
            _digest(token.encode()): (
                p if isinstance(p, Principal) else Principal(p, issuer, None, granted)
            )
            for token, p in tokens.items()
        }

    async def verify_token(self, token: str) -> Principal | None:
        """One dict lookup by the token's SHA-256, whatever the number of tokens.

        Looking up a digest tells a timing observer nothing about the token: to
        probe the table bytewise they would need inputs with chosen digest prefixes.
        """
        return self._tokens.get(_digest(token.encode()))


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


class AccessTokenLike(Protocol):
    """The fields of the MCP SDK's ``mcp.server.auth.provider.AccessToken`` we read."""

    @property
    def client_id(self) -> str: ...
    @property
    def scopes(self) -> list[str]: ...
    @property
    def expires_at(self) -> int | None: ...
    @property
    def resource(self) -> str | None: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def claims(self) -> dict[str, Any] | None: ...


class SDKTokenVerifier(Protocol):
    """A token verifier written for the MCP SDK (``mcp.server.auth.provider.TokenVerifier``)."""

    async def verify_token(self, token: str) -> AccessTokenLike | None:
        """The SDK's answer: an ``AccessToken``, or ``None``."""
        ...


def principal_from_access_token(token: AccessTokenLike) -> Principal:
    """The principal of an SDK ``AccessToken``: ``(iss, sub, client_id)``.

    Without a subject it is the client acting as itself (``Principal.for_client``),
    which never shares a digest with a user whose subject equals the client id.
    """
    return Principal.from_access_token(token)


class _AdaptedVerifier:
    def __init__(
        self, verifier: SDKTokenVerifier, resource_url: str | None, clock: Callable[[], float]
    ) -> None:
        self._verifier, self._resource_url, self._clock = verifier, resource_url, clock

    async def verify_token(self, token: str) -> Principal | None:
        access = await self._verifier.verify_token(token)
        if access is None:
            return None
        if access.expires_at is not None and access.expires_at < self._clock():
            return None
        if self._resource_url is not None and access.resource not in (None, self._resource_url):
            return None
        return principal_from_access_token(access)


def adapt_sdk_verifier(
    verifier: SDKTokenVerifier,
    *,
    resource_url: str | None = None,
    clock: Callable[[], float] = time.time,
) -> TokenVerifier:
    """Use a token verifier written for the MCP SDK here.

    Like the SDK's bearer middleware, the adapted verifier refuses an expired
    ``AccessToken`` (``expires_at`` in the past) and, given ``resource_url``, one
    whose ``resource`` names another server.
    """
    return _AdaptedVerifier(verifier, resource_url, clock)


@dataclass(frozen=True, slots=True)
class Challenge:
    """A refusal: the HTTP status, its ``WWW-Authenticate`` header and a JSON body."""

    status: int
    www_authenticate: str
    body: bytes


@dataclass(frozen=True)
class BearerAuth:
    """Per-request bearer authentication for one protected resource (the MCP endpoint).

    Args:
        verifier: Checks the tokens.
        resource_url: This endpoint's canonical URL, e.g. ``https://mcp.example.com/mcp``:
            the audience tokens must be issued for.
        authorization_servers: Issuer URLs of the authorization servers clients
            should get tokens from (listed in the metadata document).
        required_scopes: Scopes every request needs; a token without them gets 403.
    """

    verifier: TokenVerifier
    resource_url: str
    authorization_servers: tuple[str, ...] = ()
    required_scopes: tuple[str, ...] = ()
    metadata_url: str = field(init=False)
    metadata_document: bytes = field(init=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.resource_url)
        if not parts.scheme or not parts.netloc:
            raise ValueError(f"resource_url must be an absolute URL, got {self.resource_url!r}")
        path = WELL_KNOWN + parts.path.rstrip("/")
        url = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
        object.__setattr__(self, "metadata_url", url)
        object.__setattr__(self, "metadata_document", json.dumps(self.metadata()).encode())

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 Protected Resource Metadata for this resource."""
        document: dict[str, Any] = {"resource": self.resource_url}
        if self.authorization_servers:
            document["authorization_servers"] = list(self.authorization_servers)
        if self.required_scopes:
            document["scopes_supported"] = list(self.required_scopes)
        document["bearer_methods_supported"] = ["header"]
        return document

    async def authenticate(self, authorization: str | None) -> Principal | Challenge:
        """The caller behind an ``Authorization`` header value, or the challenge to send."""
        token = _bearer_token(authorization)
        if token is None:  # RFC 6750 §3.1: no error code when no credentials were sent
            text = "Authentication required: send Authorization: Bearer <access token>"
            return self._challenge(401, None, text)
        try:
            principal = await self.verifier.verify_token(token)
        except Exception:
            logger.exception("the token verifier failed")
            principal = None
        if principal is None:
            return self._challenge(401, "invalid_token", "The access token is invalid or expired")
        missing = [scope for scope in self.required_scopes if scope not in principal.scopes]
        if missing:
            text = f"The access token lacks the scope(s): {' '.join(missing)}"
            return self._challenge(403, "insufficient_scope", text)
        return principal

    def _challenge(self, status: int, error: str | None, description: str) -> Challenge:
        params = [] if error is None else [("error", error), ("error_description", description)]
        if self.required_scopes:
            params.append(("scope", " ".join(self.required_scopes)))
        params.append(("resource_metadata", self.metadata_url))
        header = "Bearer " + ", ".join(f'{k}="{_quote(v)}"' for k, v in params)
        document = {"error_description": description}
        if error is not None:
            document = {"error": error} | document
        return Challenge(status, header, json.dumps(document).encode())


def _bearer_token(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
