"""Hypothesis strategies for hostile JSON-RPC frames, and the oracle their replies must pass.

The frames mix well-formed requests to the basket demo (real tool names, real SKUs,
a live basket id, valid and broken ``_meta``) with every way a frame can be wrong:
random JSON, wrong types in the envelope, deep nesting, odd ids, raw bytes.

``FUZZ_EXAMPLES`` sets the examples per transport (default 200, so the usual run
stays quick); ``FUZZ_EXAMPLES=10000`` is the dedicated run. Runs over a real pipe
or socket use a tenth of it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from example_basket.catalog import CATALOG

__all__ = [
    "FORBIDDEN",
    "FUZZ_EXAMPLES",
    "NO_RESPONSE",
    "SECRET",
    "bind",
    "check_response",
    "expected_id",
    "frames",
    "fuzz_settings",
    "weighted",
]

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
"""Examples per in-process transport; the real pipe and socket runs use a tenth."""
SECRET = "fuzz-secret-" + "f" * 32
FORBIDDEN = ("Traceback", 'File "', "/work/", "site-packages", SECRET, "fuzz-token")
"""Nothing a client receives may contain these: tracebacks, paths, the key, a token."""
NO_RESPONSE = object()
"""``expected_id`` of a frame that must get no response (a notification, a blank line)."""
TOOLS = [
    "search_catalog",
    "create_basket",
    "add_item",
    "remove_item",
    "get_basket",
    "list_baskets",
    "checkout",
    "close_basket",
]
PLACEHOLDERS = ("@basket-0@", "@basket-1@", "@basket-tampered@")
"""Stand-ins for basket ids in generated frames: ids only exist once a server runs."""
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Each strategy drawn in proportion to its weight (``st.one_of`` would weigh a
    repeated branch as one)."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(lambda index: table[index])


def fuzz_settings(examples: int = FUZZ_EXAMPLES) -> settings:
    """Settings for a fuzz test: no deadline, shrink little, fixtures shared by examples."""
    return settings(
        max_examples=max(examples, 10),
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


surrogates = st.sampled_from(["\ud800", "a\udfff", "\ud83d\ude00"])
"""Two lone surrogates (no UTF-8 form) and a valid pair, as JSON can carry them."""


def _json_values() -> st.SearchStrategy[Any]:
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.integers(-(2**70), 2**70)
        | st.floats()  # NaN and Infinity too: Python's json reads them
        | st.text(max_size=30)
        | st.sampled_from(["", "bsk_", "\x00", "é" * 5, "\u202e", "${jndi}", "../../etc"])
        | surrogates
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=10,
    )


json_values = _json_values()


def _argument_value() -> st.SearchStrategy[Any]:
    return st.one_of(
        json_values,
        st.sampled_from(PLACEHOLDERS),
        st.sampled_from(sorted(CATALOG)),
        st.integers(-5, 1000),
        st.text(min_size=90, max_size=300),
    )


def _arguments() -> st.SearchStrategy[Any]:
    names = st.sampled_from(["basket_id", "sku", "quantity", "query", "limit", "confirm", "x"])
    as_object = st.dictionaries(names, _argument_value(), max_size=4)
    plausible = st.fixed_dictionaries(
        {},
        optional={
            "basket_id": st.sampled_from(PLACEHOLDERS),
            "sku": st.sampled_from(sorted(CATALOG)),
            "quantity": st.integers(1, 99),
            "query": st.sampled_from(["mug", "cup", "x", "Espresso", "é"]),
            "limit": st.integers(1, 50),
            "confirm": st.booleans(),
        },
    )
    return weighted((2, plausible), (1, as_object), (1, json_values))


def _meta() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.just(None),
        st.just(MODERN_META),
        st.just({**MODERN_META, "progressToken": "p"}),
        st.just({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        st.just({**MODERN_META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}),
        st.just({**MODERN_META, "io.modelcontextprotocol/clientCapabilities": 5}),
        json_values,
    )


def _tool_calls() -> st.SearchStrategy[dict[str, Any]]:
    """Each tool with arguments that fit its schema (on a live, other or altered basket)."""
    basket = {"basket_id": st.sampled_from(PLACEHOLDERS)}
    line = {**basket, "sku": st.sampled_from(sorted(CATALOG))}
    quantity = {"quantity": st.integers(1, 99)}
    query = st.sampled_from(["mug", "cup", "x", "Espresso", "é", "zzz"]) | surrogates
    shapes: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "search_catalog": ({"query": query}, {"limit": st.integers(1, 50)}),
        "create_basket": ({}, {}),
        "add_item": (line, quantity),
        "remove_item": (line, quantity),
        "get_basket": (basket, {}),
        "list_baskets": ({}, {}),
        "checkout": (basket, {"confirm": st.booleans()}),
        "close_basket": (basket, {}),
    }
    return st.one_of(
        [
            st.fixed_dictionaries(
                {"name": st.just(name), "arguments": st.fixed_dictionaries(needed, optional=extra)}
            )
            for name, (needed, extra) in shapes.items()
        ]
    )


def _call_params() -> st.SearchStrategy[dict[str, Any]]:
    meta = st.sampled_from([None, MODERN_META, {**MODERN_META, "progressToken": 1}])
    random_arguments = st.fixed_dictionaries(
        {"name": st.sampled_from(TOOLS), "arguments": _arguments()}
    )
    return st.tuples(weighted((2, _tool_calls()), (1, random_arguments)), meta).map(
        lambda pair: pair[0] if pair[1] is None else {**pair[0], "_meta": pair[1]}
    )


def _valid_requests() -> st.SearchStrategy[dict[str, Any]]:
    ids = weighted((3, st.integers(-(2**53), 2**53)), (3, st.text(max_size=10)), (1, surrogates))
    calls = st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": ids,
            "method": st.just("tools/call"),
            "params": _call_params(),
        }
    )
    others = st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "method": st.sampled_from(
                ["tools/list", "server/discover", "ping", "initialize", "notifications/x"]
            ),
        },
        optional={"id": ids, "params": st.just({"_meta": MODERN_META}) | st.just({})},
    )
    return weighted((4, calls), (1, others))


def _params() -> st.SearchStrategy[Any]:
    call = st.fixed_dictionaries(
        {"name": st.sampled_from(TOOLS) | st.text(max_size=20) | json_values},
        optional={
            "arguments": _arguments(),
            "_meta": _meta(),
            "cursor": json_values,
            "inputResponses": json_values,
            "requestState": json_values,
        },
    )
    other = st.dictionaries(st.text(max_size=10), json_values, max_size=3)
    return weighted((3, call), (1, other), (1, json_values))


def _messages() -> st.SearchStrategy[dict[str, Any]]:
    method = st.sampled_from(
        [
            "tools/call",
            "tools/call",
            "tools/call",
            "tools/list",
            "server/discover",
            "initialize",
            "ping",
            "notifications/cancelled",
            "notifications/initialized",
            "resources/list",
        ]
    )
    version = weighted((3, st.just("2.0")), (1, json_values))
    full = st.fixed_dictionaries(
        {"jsonrpc": version, "method": weighted((3, method), (1, json_values))},
        optional={
            "id": st.integers() | st.text(max_size=10) | json_values,
            "params": _params(),
            "result": json_values,
        },
    )
    missing = st.tuples(full, st.sampled_from(["jsonrpc", "method", "params", "id"])).map(
        lambda pair: {key: value for key, value in pair[0].items() if key != pair[1]}
    )
    return weighted((3, full), (1, missing))


def _encode(pair: tuple[Any, bool]) -> bytes:
    """JSON, as ASCII (a lone surrogate becomes a valid \\ud800 escape) or as raw UTF-8
    (where a lone surrogate makes the bytes invalid)."""
    message, ascii = pair
    return json.dumps(message, ensure_ascii=ascii).encode("utf-8", "surrogatepass")


def _encode_valid(pair: tuple[Any, bool]) -> bytes:
    """JSON as raw UTF-8 or ASCII, but always valid UTF-8 (ASCII if it must be)."""
    message, ascii = pair
    try:
        return json.dumps(message, ensure_ascii=ascii).encode()
    except UnicodeEncodeError:  # a lone surrogate: only an escape can carry it
        return json.dumps(message).encode()


def _deep(depth: int) -> bytes:
    inner = "[" * depth + "]" * depth
    return f'{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{inner}}}}}'.encode()


def frames(*, line: bool = False) -> st.SearchStrategy[bytes]:
    """Encoded frames; with ``line``, none contains a newline (stdio framing).

    Basket ids appear as placeholders; ``bind`` puts real ones in.
    """
    encoded = st.tuples(_messages(), st.booleans()).map(_encode)
    raw = st.one_of(
        st.binary(max_size=60),
        st.sampled_from([b"[]", b"[{}]", b"null", b"1", b'"x"', b"{", b"{}", b"   "]),
        st.integers(60, 2000).map(_deep),
        encoded.map(lambda data: data[: len(data) // 2]),
    )
    valid = st.tuples(_valid_requests(), st.booleans()).map(_encode_valid)
    strategy = weighted((6, valid), (2, encoded), (1, raw))
    if line:
        strategy = strategy.map(lambda data: data.replace(b"\n", b" ").replace(b"\r", b" "))
    return strategy


def bind(frame: bytes, basket_ids: list[str]) -> bytes:
    """``frame`` with its placeholders replaced by live basket ids (or altered ones)."""
    live, other = basket_ids
    tampered = live[:-1] + ("A" if live[-1] != "A" else "B")
    for placeholder, value in zip(PLACEHOLDERS, (live, other, tampered), strict=True):
        frame = frame.replace(placeholder.encode(), value.encode())
    return frame


def expected_id(frame: bytes, *, line: bool = False) -> Any:
    """The id the response to ``frame`` must carry, or ``NO_RESPONSE``.

    Written from the JSON-RPC rules, not from the server's code: a request gets a
    response with its id (``None`` if the id cannot be read); a valid
    notification gets nothing; anything that is not a message gets an error
    with a null id.
    """
    if line and not frame.strip():
        return NO_RESPONSE
    try:
        message = json.loads(frame.decode())  # MCP is strict UTF-8
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict):
        return None
    id = message.get("id")
    readable = isinstance(id, str | int) and not isinstance(id, bool)
    if _deeper_than_64(message):
        return None
    if "id" in message:
        return id if readable else None
    envelope_ok = (
        message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and (message.get("params") is None or isinstance(message.get("params"), dict))
    )
    return NO_RESPONSE if envelope_ok else None


def _deeper_than_64(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > 64:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def check_response(data: bytes | str, id: Any) -> dict[str, Any]:
    """Assert ``data`` is one strict JSON-RPC response for ``id``; return it."""
    text = data.decode() if isinstance(data, bytes) else data
    for word in FORBIDDEN:
        assert word not in text, (word, text[:500])
    response = json.loads(text, parse_constant=_no_constants)
    assert isinstance(response, dict) and response.get("jsonrpc") == "2.0", text[:500]
    assert response.get("id") == id and type(response.get("id")) is type(id), (id, text[:300])
    assert ("result" in response) != ("error" in response), text[:500]
    if "error" in response:
        error = response["error"]
        assert isinstance(error["code"], int) and isinstance(error["message"], str)
        assert error["code"] != -32603, text[:500]  # no internal error, ever
        event(f"error {error['code']}")
    else:
        _check_result(response["result"], text)
        result = response["result"]
        event(f"result ({_kind(result)})")
    return response


def _check_result(result: Any, text: str) -> None:
    assert isinstance(result, dict), text[:500]
    if "content" in result:
        assert isinstance(result["content"], list) and isinstance(result["isError"], bool)
        for block in result["content"]:
            shown = block.get("text", "")
            assert "internal error in the server" not in shown, text[:500]


def _kind(result: dict[str, Any]) -> str:
    if "content" not in result:
        return str(result.get("resultType", "other"))
    if not result["isError"]:
        return "tool ran"
    text = str(result["content"][0].get("text", "")) if result["content"] else ""
    return "input refused" if text.startswith("Input validation error") else "tool refused"


def _no_constants(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")
