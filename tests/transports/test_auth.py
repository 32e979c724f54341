"""Token verifiers (static, SDK-adapted, JWT) and the bearer challenges they lead to."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import OctKey, RSAKey

from handles.principal import Principal
from handles.transports.auth import (
    BearerAuth,
    Challenge,
    StaticTokenVerifier,
    TokenVerifier,
    adapt_sdk_verifier,
    principal_from_access_token,
)
from handles.transports.jwt import JWTVerifier

pytestmark = pytest.mark.anyio
RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://id.example.com"
SECRET = b"0123456789abcdef0123456789abcdef"
ALICE = Principal("alice", ISSUER, "app", frozenset({"read"}))


async def test_static_tokens_map_to_principals() -> None:
    verifier = StaticTokenVerifier({"t1": ALICE, "t2": "bob"}, issuer="dev", scopes=["x"])
    assert await verifier.verify_token("t1") == ALICE
    bob = await verifier.verify_token("t2")
    assert bob == Principal("bob", "dev", None, frozenset({"x"}))
    assert await verifier.verify_token("t3") is None
    assert await verifier.verify_token("") is None
    assert isinstance(verifier, TokenVerifier)


async def test_static_tokens_are_one_lookup_by_digest() -> None:
    """100,000 tokens: each is found, near misses are not (the lookup is a dict by SHA-256)."""
    tokens = {f"token-{n:06d}": f"user-{n}" for n in range(100_000)}
    verifier = StaticTokenVerifier(tokens)
    for n in (0, 41_234, 99_999):
        principal = await verifier.verify_token(f"token-{n:06d}")
        assert principal is not None and principal.subject == f"user-{n}"
    for miss in ("token-100000", "token-00000", "token-000000 ", "TOKEN-000000"):
        assert await verifier.verify_token(miss) is None
    assert all(len(key) == 32 for key in verifier._tokens)


@dataclass
class AccessToken:
    """The shape of ``mcp.server.auth.provider.AccessToken``."""

    token: str
    client_id: str
    scopes: list[str]
    expires_at: int | None = None
    resource: str | None = None
    subject: str | None = None
    claims: dict[str, Any] | None = field(default=None)


class SDKVerifier:
    def __init__(self, tokens: dict[str, AccessToken]) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)


async def test_an_sdk_verifier_adapts() -> None:
    now = 1_000_000.0
    tokens = {
        "good": AccessToken(
            "good", "app", ["read"], int(now) + 60, RESOURCE, "alice", {"iss": ISSUER}
        ),
        "expired": AccessToken("expired", "app", [], int(now) - 1),
        "elsewhere": AccessToken("elsewhere", "app", [], None, "https://other.example/mcp"),
        "client": AccessToken("client", "svc", ["a", "b"]),
    }
    verifier = adapt_sdk_verifier(SDKVerifier(tokens), resource_url=RESOURCE, clock=lambda: now)
    assert await verifier.verify_token("good") == ALICE
    assert await verifier.verify_token("expired") is None
    assert await verifier.verify_token("elsewhere") is None
    assert await verifier.verify_token("missing") is None
    client = await verifier.verify_token("client")
    assert client == Principal.for_client("svc", None, frozenset({"a", "b"}))


def test_principal_from_the_real_sdk_access_token() -> None:
    from mcp.server.auth.provider import AccessToken as SDKAccessToken

    token = SDKAccessToken(
        token="t", client_id="app", scopes=["read"], subject="alice", claims={"iss": ISSUER}
    )
    assert principal_from_access_token(token) == ALICE


def auth(verifier: TokenVerifier, scopes: tuple[str, ...] = ()) -> BearerAuth:
    return BearerAuth(verifier, RESOURCE, (ISSUER,), scopes)


async def test_bearer_auth_challenges() -> None:
    bearer = auth(StaticTokenVerifier({"t": ALICE}), ("read", "write"))
    assert bearer.metadata_url == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    missing = await bearer.authenticate(None)
    assert isinstance(missing, Challenge) and missing.status == 401
    assert missing.www_authenticate == (
        'Bearer scope="read write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
    )
    assert json.loads(missing.body) == {
        "error_description": "Authentication required: send Authorization: Bearer <access token>"
    }
    scope = await bearer.authenticate("bearer   t ")
    assert isinstance(scope, Challenge) and scope.status == 403
    assert scope.www_authenticate.startswith('Bearer error="insufficient_scope"')
    assert "write" in scope.www_authenticate


async def test_a_failing_verifier_refuses_without_details(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        async def verify_token(self, token: str) -> Principal | None:
            raise RuntimeError("database password is hunter2")

    refused = await auth(Broken()).authenticate("Bearer t")
    assert isinstance(refused, Challenge) and refused.status == 401
    assert b"hunter2" not in refused.body and "hunter2" not in refused.www_authenticate
    assert "token verifier failed" in caplog.text


def test_metadata_document_and_url_at_the_root() -> None:
    bearer = BearerAuth(StaticTokenVerifier({}), "http://127.0.0.1:8000/")
    assert bearer.metadata_url == "http://127.0.0.1:8000/.well-known/oauth-protected-resource"
    assert bearer.metadata() == {
        "resource": "http://127.0.0.1:8000/",
        "bearer_methods_supported": ["header"],
    }
    with pytest.raises(ValueError, match="absolute"):
        BearerAuth(StaticTokenVerifier({}), "/mcp")


# JWT


@pytest.fixture(scope="module")
def rsa_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": "k1"})


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "app",
        "exp": now + 300,
        "scope": "read",
    }
    return {k: v for k, v in (base | overrides).items() if v is not None}


def hs256(payload: dict[str, Any], secret: bytes = SECRET) -> str:
    return jwt.encode({"alg": "HS256"}, payload, OctKey.import_key(secret))


def rs256(payload: dict[str, Any], key: RSAKey) -> str:
    return jwt.encode({"alg": "RS256", "kid": key.kid}, payload, key)


def hs_verifier() -> JWTVerifier:
    return JWTVerifier(issuer=ISSUER, audience=RESOURCE, secret=SECRET)


async def test_hs256_good_token() -> None:
    assert await hs_verifier().verify_token(hs256(claims())) == ALICE


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (claims(exp=int(time.time()) - 120), "expired"),
        (claims(exp=None), "no exp"),
        (claims(nbf=int(time.time()) + 600), "not yet valid"),
        (claims(aud="https://other.example/mcp"), "wrong audience"),
        (claims(aud=None), "no audience"),
        (claims(iss="https://evil.example"), "wrong issuer"),
        (claims(sub=None, client_id=None), "no subject"),
    ],
)
async def test_hs256_refusals(payload: dict[str, Any], why: str) -> None:
    assert await hs_verifier().verify_token(hs256(payload)) is None, why


async def test_hs256_bad_signature_and_garbage() -> None:
    verifier = hs_verifier()
    assert (
        await verifier.verify_token(hs256(claims(), b"another secret of at least 32 bytes")) is None
    )
    token = hs256(claims())
    assert await verifier.verify_token(token[:-2] + ("AA" if token[-2:] != "AA" else "BB")) is None
    assert await verifier.verify_token("not.a.jwt") is None
    assert await verifier.verify_token("") is None


async def test_expiry_leeway_and_audience_lists() -> None:
    verifier = hs_verifier()
    recent = claims(exp=int(time.time()) - 5, aud=["https://other.example", RESOURCE])
    assert await verifier.verify_token(hs256(recent)) == ALICE


@pytest.mark.parametrize(
    ("extra", "scopes"),
    [
        ({"scope": "a b  c"}, {"a", "b", "c"}),
        ({"scope": None, "scp": ["a", "b"]}, {"a", "b"}),
        ({"scope": None, "scp": "a b"}, {"a", "b"}),
        ({"scope": None}, set()),
    ],
)
async def test_scopes_from_scope_or_scp(extra: dict[str, Any], scopes: set[str]) -> None:
    principal = await hs_verifier().verify_token(hs256(claims(**extra)))
    assert principal is not None and principal.scopes == scopes


async def test_azp_names_the_client_and_sub_may_be_missing() -> None:
    principal = await hs_verifier().verify_token(hs256(claims(client_id=None, azp="web")))
    assert principal == Principal("alice", ISSUER, "web", frozenset({"read"}))
    machine = await hs_verifier().verify_token(hs256(claims(sub=None, client_id="svc")))
    assert machine == Principal.for_client("svc", ISSUER, frozenset({"read"}))


async def test_a_token_without_sub_never_shares_a_principal_with_a_user() -> None:
    """A client-credentials token for client ``svc`` and a user token whose ``sub`` is ``svc``
    (through client ``svc``) are two principals with two digests: they share no state."""
    verifier = hs_verifier()
    machine = await verifier.verify_token(hs256(claims(sub=None, client_id="svc")))
    user = await verifier.verify_token(hs256(claims(sub="svc", client_id="svc")))
    assert machine is not None and user is not None
    assert (machine.kind, user.kind) == ("client", "user")
    assert machine != user
    assert machine.digest != user.digest
    sdk_machine = principal_from_access_token(AccessToken("t", "svc", [], claims={"iss": ISSUER}))
    sdk_user = principal_from_access_token(
        AccessToken("t", "svc", [], subject="svc", claims={"iss": ISSUER})
    )
    assert sdk_machine.digest == machine.digest
    assert sdk_user.digest == user.digest


@pytest.mark.parametrize("exp", [1e300, 2**62, "soon", True, float("inf")])
async def test_an_exp_out_of_bounds_is_refused(exp: Any) -> None:
    assert await hs_verifier().verify_token(hs256(claims(exp=exp))) is None


async def test_exp_may_be_up_to_max_lifetime_away() -> None:
    now = time.time()
    verifier = JWTVerifier(issuer=ISSUER, audience=RESOURCE, secret=SECRET, max_lifetime=3600)
    assert await verifier.verify_token(hs256(claims(exp=int(now) + 3500))) == ALICE
    assert await verifier.verify_token(hs256(claims(exp=int(now) + 7200))) is None


@pytest.mark.parametrize("secret", [b"short", "x" * 31, b""])
def test_a_short_hs256_secret_is_refused(secret: str | bytes) -> None:
    with pytest.raises(ValueError, match="at least 32"):
        JWTVerifier(issuer=ISSUER, audience=RESOURCE, secret=secret)


async def test_rs256_with_a_jwks(rsa_key: RSAKey, tmp_path: Path) -> None:
    jwks = {"keys": [rsa_key.as_dict(private=False)]}
    verifier = JWTVerifier(issuer=ISSUER, audience=RESOURCE, jwks=jwks)
    assert await verifier.verify_token(rs256(claims(), rsa_key)) == ALICE
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks))
    from_file = JWTVerifier.from_jwks_file(path, issuer=ISSUER, audience=RESOURCE)
    assert await from_file.verify_token(rs256(claims(), rsa_key)) == ALICE


async def test_rs256_refusals(rsa_key: RSAKey) -> None:
    verifier = JWTVerifier(
        issuer=ISSUER, audience=RESOURCE, jwks={"keys": [rsa_key.as_dict(private=False)]}
    )
    other = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    assert await verifier.verify_token(rs256(claims(), other)) is None
    assert await verifier.verify_token(rs256(claims(exp=int(time.time()) - 120), rsa_key)) is None
    assert await verifier.verify_token(rs256(claims(aud="https://x"), rsa_key)) is None
    assert await verifier.verify_token(hs256(claims())) is None, (
        "no HS256 with a JWKS (alg confusion)"
    )


async def test_missing_scope_through_bearer_auth() -> None:
    bearer = auth(hs_verifier(), ("write",))
    refused = await bearer.authenticate(f"Bearer {hs256(claims())}")
    assert isinstance(refused, Challenge) and refused.status == 403
    allowed = await bearer.authenticate(f"Bearer {hs256(claims(scope='read write'))}")
    assert isinstance(allowed, Principal) and allowed.subject == "alice"


def test_jwt_verifier_needs_exactly_one_key_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        JWTVerifier(issuer=ISSUER, audience=RESOURCE)
    with pytest.raises(ValueError, match="exactly one"):
        JWTVerifier(issuer=ISSUER, audience=RESOURCE, secret=SECRET, jwks={"keys": []})


def test_a_missing_joserfc_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "joserfc.jwk", None)
    with pytest.raises(ImportError, match=r"mcp-handles\[jwt\]"):
        hs_verifier()
