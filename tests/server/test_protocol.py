"""Protocol versions, era detection, and the modern per-request ``_meta`` envelope."""

from __future__ import annotations

from typing import Any

import pytest

from handles.server.jsonrpc import ProtocolError
from handles.server.protocol import (
    LATEST_LEGACY_VERSION,
    SUPPORTED_VERSIONS,
    RequestMeta,
    is_modern,
    legacy_meta,
    read_modern_meta,
)

VERSION = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"


def meta(**extra: Any) -> dict[str, Any]:
    return {"_meta": {VERSION: "2026-07-28", CAPABILITIES: {}, **extra}}


def test_versions() -> None:
    assert SUPPORTED_VERSIONS == (
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    )
    assert LATEST_LEGACY_VERSION == "2025-11-25"


@pytest.mark.parametrize(
    ("params", "modern"),
    [
        (meta(), True),
        ({"_meta": {VERSION: "1900-01-01"}}, True),  # modern by shape; the version is checked later
        ({}, False),
        ({"_meta": {}}, False),
        ({"_meta": {"progressToken": 1}}, False),
        ({"_meta": "2026-07-28"}, False),
        ({VERSION: "2026-07-28"}, False),
    ],
)
def test_is_modern(params: dict[str, Any], modern: bool) -> None:
    assert is_modern(params) is modern


def test_a_complete_envelope() -> None:
    params = meta(**{CLIENT_INFO: {"name": "c", "version": "1"}, "progressToken": "p"})
    params["_meta"][CAPABILITIES] = {"elicitation": {}}
    read = read_modern_meta(params)
    assert read == RequestMeta("2026-07-28", {"elicitation": {}}, "p")
    assert read.era == "modern"


def test_client_info_is_optional() -> None:
    assert read_modern_meta(meta()) == RequestMeta("2026-07-28", {}, None)


@pytest.mark.parametrize(
    ("token", "read"), [(0, 0), ("", ""), (True, None), (1.5, None), ([], None)]
)
def test_progress_tokens_are_strings_or_integers(token: Any, read: str | int | None) -> None:
    assert read_modern_meta(meta(progressToken=token)).progress_token == read


def invalid(params: dict[str, Any]) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        read_modern_meta(params)
    return caught.value


@pytest.mark.parametrize("params", [{}, {"_meta": None}, {"_meta": []}])
def test_meta_is_required(params: dict[str, Any]) -> None:
    error = invalid(params)
    assert (error.code, error.message, error.data) == (
        -32602,
        "params._meta is required in protocol 2026-07-28",
        None,
    )


@pytest.mark.parametrize(
    ("keys", "missing"),
    [
        ({VERSION: "2026-07-28"}, CAPABILITIES),
        ({CAPABILITIES: {}}, VERSION),
        ({}, f"{VERSION}, {CAPABILITIES}"),
        ({VERSION: "2099-01-01"}, CAPABILITIES),  # missing keys are reported before the version
    ],
)
def test_missing_keys_are_invalid_params(keys: dict[str, Any], missing: str) -> None:
    error = invalid({"_meta": keys})
    assert (error.code, error.message) == (
        -32602,
        f"params._meta is missing required key(s): {missing}",
    )


@pytest.mark.parametrize(
    ("version", "requested"),
    [
        ("2099-01-01", "2099-01-01"),
        ("2025-11-25", "2025-11-25"),  # a legacy version in a modern envelope
        (20260728, "20260728"),
        (None, "None"),
        ("9" * 100, "9" * 64),
    ],
)
def test_unsupported_versions(version: Any, requested: str) -> None:
    error = invalid({"_meta": {VERSION: version, CAPABILITIES: {}}})
    assert (error.code, error.message) == (-32022, "Unsupported protocol version")
    assert error.data == {"supported": list(SUPPORTED_VERSIONS), "requested": requested}


@pytest.mark.parametrize("capabilities", [None, [], "x"])
def test_capabilities_must_be_an_object(capabilities: Any) -> None:
    error = invalid({"_meta": {VERSION: "2026-07-28", CAPABILITIES: capabilities}})
    assert (error.code, error.message) == (
        -32602,
        f"params._meta.{CAPABILITIES} must be an object",
    )


def test_legacy_meta() -> None:
    assert legacy_meta({}, "2025-06-18") == RequestMeta("2025-06-18", {}, None)
    assert legacy_meta({"_meta": {"progressToken": 9}}, "2024-11-05").progress_token == 9
    assert legacy_meta({"_meta": "junk"}, "2025-11-25").progress_token is None
    assert legacy_meta({}, "2025-11-25").era == "legacy"
