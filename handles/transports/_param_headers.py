"""``Mcp-Param-*`` headers (SEP-2243): screened before the body, then checked against it.

A tool's ``inputSchema`` may mark an argument with ``x-mcp-header: <Name>``; a
2026-07-28 client then mirrors that argument of each ``tools/call`` into an
``Mcp-Param-<Name>`` header, so that a gateway can route or limit on it without
parsing JSON. Two steps here, both pure functions of the request:

* ``screen``, before the body is read: a header whose name has a screen (a handle
  kind registers one: one HMAC, no store access) and whose value the screen refuses
  decides the call's answer there and then: the screen's text as its ``isError``
  result, the same text the tool would give (the model never sees headers: its
  client writes them from the arguments). The body is still drained (keep-alive
  needs it) and parsed for its id, but its arguments are not validated and no
  tool runs.
* ``check``, once the body is parsed: for the called tool, each declared header is
  present exactly when its argument is, and its value, with the ``=?base64?…?=``
  sentinel decoded (anything else is literal), equals the argument as the client
  would render it. Otherwise ``-32020`` (header mismatch, HTTP 400), as the spec
  and the conformance scenario ``http-custom-header-server-validation`` require.

Only modern requests are checked: a 2025-11-25 client never sends these headers.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any, NoReturn

from ..principal import Principal
from ..server.dispatch import Server
from ..server.jsonrpc import HEADER_MISMATCH, Message, ProtocolError

__all__ = ["check", "decode_value", "screen"]

_PREFIX = b"mcp-param-"
_B64_HEAD, _B64_TAIL = "=?base64?", "?="
_OWS = " \t"
_SHOWN = 60


def decode_value(raw: str) -> str | None:
    """A header value as the argument it mirrors; ``None`` for a malformed sentinel.

    Surrounding whitespace is not part of a value (RFC 9110 §5.5); a value that
    starts with ``=?base64?`` and ends with ``?=`` is strict, padded base64 of
    UTF-8; anything else, including a value with only one of the two, is literal.
    """
    value = raw.strip(_OWS)
    if not (
        value.startswith(_B64_HEAD)
        and value.endswith(_B64_TAIL)
        and len(value) >= len(_B64_HEAD) + len(_B64_TAIL)
    ):
        return value
    payload = value[len(_B64_HEAD) : -len(_B64_TAIL)]
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _param_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, list[str]]:
    """The request's ``Mcp-Param-*`` headers by lower-case name, every copy kept."""
    found: dict[str, list[str]] = {}
    for name, value in raw:
        lower = name.lower()
        if lower.startswith(_PREFIX):
            found.setdefault(lower.decode("latin-1"), []).append(value.decode("latin-1"))
    return found


def screen(server: Server, principal: Principal, raw: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The refusal of a screened ``Mcp-Param-*`` header, or ``None``; needs no body.

    A value that does not decode is left to ``check``, which names the mismatch.
    """
    screens = server.header_screens
    if not screens:
        return None
    for name, values in _param_headers(raw).items():
        guard = screens.get(name)
        if guard is None or len(values) != 1:
            continue
        value = decode_value(values[0])
        if value is None:
            continue
        refusal = guard(principal, value)
        if refusal is not None:
            return refusal
    return None


def check(server: Server, message: Message, raw: Iterable[tuple[bytes, bytes]]) -> None:
    """Check a modern ``tools/call``'s ``Mcp-Param-*`` headers against its arguments.

    Raises:
        ProtocolError: ``-32020`` naming the header, what is wrong and its value.
    """
    if message.get("method") != "tools/call":
        return
    params = message["params"]
    tool = server.get_tool(params.get("name")) if isinstance(params.get("name"), str) else None
    if tool is None or not tool.headers:
        return
    arguments = params.get("arguments")
    arguments = arguments if isinstance(arguments, dict) else {}
    headers = _param_headers(raw)
    for argument, (header, kind) in tool.headers.items():
        name = f"Mcp-Param-{header}"
        values = headers.get(f"mcp-param-{header.lower()}")
        rendered = _rendered(arguments.get(argument))
        if values is not None and len(values) > 1:
            _mismatch(message, f"the {name} header is sent {len(values)} times; send it once")
        if rendered is None:
            if values is not None:
                _mismatch(
                    message,
                    f"the {name} header is sent ({_shown(values[0])}) but the body has no "
                    f"{argument!r} argument; send both or neither",
                )
            continue
        if values is None:
            _mismatch(
                message,
                f"the {name} header is missing and the body's {argument!r} argument is "
                f"{_shown(rendered)}; mirror the argument into the header",
            )
        decoded = decode_value(values[0]) if values is not None else None
        if decoded is None:
            _mismatch(
                message,
                f"the {name} header {_shown(values[0] if values else '')} is not valid "
                "=?base64?…?= (strict, padded base64 of UTF-8)",
            )
        if not _matches(kind, decoded, rendered):
            _mismatch(
                message,
                f"the {name} header says {_shown(decoded or '')} but the body's {argument!r} "
                f"argument is {_shown(rendered)}; send the same value in both",
            )


def _rendered(value: Any) -> str | None:
    """An argument as a client writes it into a header; ``None`` when it has no header."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _matches(kind: str, decoded: str | None, rendered: str) -> bool:
    if decoded == rendered:
        return True
    if kind != "integer" or decoded is None:
        return False
    whole, dot, fraction = decoded.partition(".")  # "42.0" is the integer 42
    digits = whole[1:] if whole.startswith("-") else whole
    return (
        digits.isdigit()
        and (not dot or (fraction.isdigit() and set(fraction) == {"0"}))
        and rendered.lstrip("-").isdigit()
        and int(whole) == int(rendered)
    )


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "…")


def _mismatch(message: Message, text: str) -> NoReturn:
    id = message.get("id")
    raise ProtocolError(
        HEADER_MISMATCH, f"Header mismatch: {text}", id=id if isinstance(id, str | int) else None
    )
