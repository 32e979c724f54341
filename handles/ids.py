"""Minting and checking handle ids: ``<prefix>_<body><tag>``, 47 characters for ``bsk``.

The body is 4 bytes of mint time (Unix seconds, so the absolute deadline is known
even after the record is gone) and 16 random bytes from ``secrets``; the tag is an
HMAC-SHA256 cut to 12 bytes over the body text and the owner's principal digest,
made with an itsdangerous ``Signer`` whose salt names the kind. Both are base64url
without padding (27 + 16 characters). The digest is signed, never embedded, so a
mistyped, forged, foreign or wrong-kind id fails verification before any store
access, and a foreign id cannot be told from an invented one.

Key ring order follows itsdangerous: oldest to newest, the **last** key signs and
every key verifies. (The MCP SDK's ``RequestStateSecurity`` seals with ``keys[0]``:
the opposite order.) To rotate, deploy ``[old, new]``, and drop ``old`` once the
handles it signed have expired.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from itsdangerous.encoding import base64_decode, base64_encode, want_bytes
from itsdangerous.exc import BadData
from itsdangerous.signer import Signer

from .errors import cut
from .kinds import HandleKind

__all__ = [
    "PLACEHOLDER_MARKS",
    "HandleCodec",
    "SecretKeys",
    "parse_secret_keys",
    "redact",
    "secret_keys_from_environment",
]

_log = logging.getLogger("handles")

SecretKeys = str | bytes | Sequence[str | bytes]

MIN_SECRET_BYTES = 32
_TIME_BYTES, _RANDOM_BYTES, _TAG_BYTES = 4, 16, 12
_BODY_CHARS, _TAG_CHARS = 27, 16  # base64url, unpadded, of 20 and 12 bytes
_MAX_VERIFIED = 8192
_ALPHABET = re.compile(rf"[A-Za-z0-9_-]{{{_BODY_CHARS + _TAG_CHARS}}}")
_SALT = "mcp-handles/v1:{name}:{prefix}"


class _Tags:
    """The tags of one kind: HMAC-SHA256 cut to 12 bytes, under each key of the ring.

    Each key is derived once with itsdangerous's ``Signer`` (HMAC derivation, salted
    per kind); a tag copies an ``hmac`` object prepared for its key. Tags are
    base64url without padding, as ``Signer`` writes them, and compared in constant
    time.
    """

    def __init__(self, secret_keys: list[bytes], salt: str) -> None:
        signer = Signer(secret_keys, salt=salt, key_derivation="hmac", digest_method=hashlib.sha256)
        derived = [signer.derive_key(key) for key in reversed(signer.secret_keys)]
        self._newest_first = [hmac.new(key, digestmod=hashlib.sha256) for key in derived]

    def sign(self, value: str) -> str:
        """The tag of ``value`` under the newest key."""
        return base64_encode(_tag(self._newest_first[0], value.encode())).decode()

    def verify(self, value: str, tag: str) -> bool:
        """Whether ``tag`` is ``value``'s tag under any key of the ring."""
        try:
            raw = base64_decode(tag)
        except BadData:
            return False
        data = value.encode()
        return any(hmac.compare_digest(_tag(mac, data), raw) for mac in self._newest_first)


def _tag(prepared: hmac.HMAC, data: bytes) -> bytes:
    mac = prepared.copy()
    mac.update(data)
    return mac.digest()[:_TAG_BYTES]


@dataclass(frozen=True, slots=True)
class _Spec:
    kind: HandleKind[Any]
    head: str
    tags: _Tags


def _ring(secret_keys: SecretKeys | None) -> list[bytes]:
    if secret_keys is None:
        _log.warning(
            "handles: no secret key configured; using an ephemeral key, so handles will "
            "not survive a restart or work across replicas. Pass secret_keys (each at "
            "least %d bytes, e.g. from secrets.token_urlsafe(32)).",
            MIN_SECRET_BYTES,
        )
        return [secrets.token_bytes(MIN_SECRET_BYTES)]
    raw = [secret_keys] if isinstance(secret_keys, str | bytes) else list(secret_keys)
    keys = [want_bytes(key) for key in raw]
    if not keys:
        raise ValueError("secret_keys is empty: give at least one key of 32 bytes or more")
    for number, key in enumerate(keys):
        if not key.strip():
            raise ValueError(
                f"secret key #{number} is blank; give each key at least {MIN_SECRET_BYTES} "
                "random bytes (e.g. secrets.token_urlsafe(32)), with no empty entries"
            )
        if len(key) < MIN_SECRET_BYTES:
            raise ValueError(
                f"secret key #{number} is {len(key)} bytes; each secret key must be at "
                f"least {MIN_SECRET_BYTES} bytes (e.g. secrets.token_urlsafe(32))"
            )
        if len(set(key)) == 1:
            raise ValueError(
                f"secret key #{number} is one character repeated ({len(key)} times), not a "
                "secret; use random bytes (e.g. secrets.token_urlsafe(32))"
            )
    return keys


#: Fragments of the placeholder keys that docs and examples show; a real key has none.
PLACEHOLDER_MARKS = ("replace-with", "replace-me", "changeme", "change-me", "your-secret")


def parse_secret_keys(text: str) -> list[str]:
    """A comma-separated key ring, oldest first, newest last (the newest signs).

    Blanks around keys are ignored; an empty entry is an error (``" , ,"`` or
    ``"key,"`` is a mistake, not a request for an ephemeral key).

    Raises:
        ValueError: No key, a blank entry, a key that is one character repeated, a key
            shorter than 32 bytes, or a placeholder copied from the docs; the message
            names the key by its place (from 1), never its text.
    """
    keys = [key.strip() for key in text.split(",")]
    if not any(keys):
        raise ValueError("no key in it")
    for number, key in enumerate(keys, 1):
        if not key:
            raise ValueError(f"key {number} is blank")
        if len(set(key)) == 1:
            raise ValueError(f"key {number} is one character repeated")
        size = len(key.encode())
        if size < MIN_SECRET_BYTES:
            raise ValueError(f"key {number} has {size} bytes")
        if any(mark in key.lower() for mark in PLACEHOLDER_MARKS):
            raise ValueError(f"key {number} is a placeholder copied from the docs")
    return keys


def secret_keys_from_environment(variable: str = "HANDLES_SECRET") -> list[str] | None:
    """The key ring in ``$HANDLES_SECRET`` (see ``parse_secret_keys``), or ``None``.

    Pass the result as ``HandleManager(secret_keys=...)``: ``None`` (unset or empty)
    leaves the manager on an ephemeral key, which it warns about. Only blanks and
    commas (``" , ,"``) is an error, not that fallback.

    Raises:
        ValueError: A key is blank, one character repeated, too short or a
            placeholder; the message starts with the variable's name
            (``HANDLES_SECRET: key 2 has 8 bytes``).
    """
    text = os.environ.get(variable, "")
    if not text:
        return None
    try:
        return parse_secret_keys(text)
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None


def _mint_time(body: str) -> int:
    return int.from_bytes(base64_decode(body[:8])[:_TIME_BYTES], "big")


def redact(handle_id: str) -> str:
    """A handle cut to its prefix and a few characters, quoted, for logs."""
    return repr(cut(handle_id, 8))


class HandleCodec:
    """Mints and verifies the ids of registered kinds.

    Args:
        kinds: The kinds; names and prefixes must be unique.
        secret_keys: One key or a ring, oldest to newest, each at least 32 bytes.
            ``None`` generates an ephemeral key and logs a warning.

    Raises:
        ValueError: A key is too short, the ring is empty, or two kinds clash.

    A verified id is remembered with its owner (up to 8192 of them), so the next call
    with the same id and owner is a dict lookup rather than an HMAC: the answer cannot
    change, as the keys are fixed for the codec's life. Ids that fail are never
    remembered.
    """

    def __init__(self, kinds: Iterable[HandleKind[Any]], secret_keys: SecretKeys | None) -> None:
        keys = _ring(secret_keys)
        self._verified: dict[tuple[str, str], tuple[str, int]] = {}
        self._by_name: dict[str, _Spec] = {}
        self._by_prefix: dict[str, _Spec] = {}
        for kind in kinds:
            if kind.name in self._by_name or kind.prefix in self._by_prefix:
                raise ValueError(f"kind {kind.name!r} or prefix {kind.prefix!r} registered twice")
            salt = _SALT.format(name=kind.name, prefix=kind.prefix)
            spec = _Spec(kind, f"{kind.prefix}_", _Tags(keys, salt))
            self._by_name[kind.name] = self._by_prefix[kind.prefix] = spec

    @property
    def kinds(self) -> list[HandleKind[Any]]:
        """The registered kinds, in registration order."""
        return [spec.kind for spec in self._by_name.values()]

    def mint(self, kind: HandleKind[Any], owner: str, now: float) -> str:
        """A new id of ``kind`` for the principal digest ``owner``, minted at ``now``."""
        spec = self._spec(kind)
        raw = int(now).to_bytes(_TIME_BYTES, "big") + secrets.token_bytes(_RANDOM_BYTES)
        body = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        tag = spec.tags.sign(body + owner)
        handle_id = f"{spec.head}{body}{tag}"
        self._remember(handle_id, owner, kind.name, int(now))
        return handle_id

    def verify(self, kind: HandleKind[Any], handle_id: str, owner: str) -> int | None:
        """The mint time of ``handle_id`` if ``owner`` holds it as a ``kind``, else ``None``."""
        spec = self._spec(kind)
        known = self._verified.get((handle_id, owner))
        if known is not None:
            name, created = known
            return created if name == kind.name else None
        start = len(spec.head)
        if (
            len(handle_id) != start + _BODY_CHARS + _TAG_CHARS
            or not handle_id.startswith(spec.head)
            or _ALPHABET.fullmatch(handle_id, start) is None
        ):
            return None
        body, tag = handle_id[start:-_TAG_CHARS], handle_id[-_TAG_CHARS:]
        if not spec.tags.verify(body + owner, tag):
            return None
        created = _mint_time(body)
        self._remember(handle_id, owner, kind.name, created)
        return created

    def minted_at(self, handle_id: str) -> int:
        """The mint time of an id already known to be valid (e.g. from a store index)."""
        return _mint_time(handle_id.partition("_")[2])

    def kind_of(self, handle_id: str, owner: str) -> HandleKind[Any] | None:
        """The registered kind whose prefix ``handle_id`` has and whose tag verifies."""
        spec = self._by_prefix.get(handle_id.partition("_")[0])
        if spec is None or self.verify(spec.kind, handle_id, owner) is None:
            return None
        return spec.kind

    def explain(self, kind: HandleKind[Any], handle_id: str) -> str:
        """Why ``handle_id`` failed to verify, for the debug log only."""
        spec = self._spec(kind)
        if len(handle_id) != len(spec.head) + _BODY_CHARS + _TAG_CHARS:
            return "wrong length"
        if not handle_id.startswith(spec.head):
            return "wrong prefix"
        if _ALPHABET.fullmatch(handle_id, len(spec.head)) is None:
            return "characters outside base64url"
        return "tag does not verify for this caller (forged, foreign, or an old key)"

    def _remember(self, handle_id: str, owner: str, name: str, created: int) -> None:
        if len(self._verified) >= _MAX_VERIFIED:
            self._verified.clear()
        self._verified[handle_id, owner] = (name, created)

    def _spec(self, kind: HandleKind[Any]) -> _Spec:
        spec = self._by_name.get(kind.name)
        if spec is None:
            raise ValueError(f"kind {kind.name!r} is not registered with this manager")
        return spec
