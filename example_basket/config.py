"""Settings read from flags and environment variables, checked in one place.

A ``Setting`` names its flag, its environment variable, its default and its rule.
``load_settings`` reads the command line first, so ``--help`` and ``--version`` work
whatever the environment holds; then it takes each value from its flag, else its
variable (an empty variable counts as unset), else its default, and checks it. A bad
value raises ``ConfigError`` with one line naming where the value came from, the value
and the rule, never a traceback. Nothing here is specific to the basket demo: a server
of your own can declare its settings the same way.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from handles.ids import parse_secret_keys

__all__ = [
    "PLACEHOLDER_SECRET",
    "ConfigError",
    "Setting",
    "Source",
    "boolean",
    "choice",
    "environment_help",
    "integer",
    "load_settings",
    "seconds",
    "secret_keys",
    "subject",
]

T = TypeVar("T")


class ConfigError(ValueError):
    """A setting's value breaks its rule; the message is one line, fit for a user."""


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One setting: where it is read from, its default and the rule its value must follow.

    Attributes:
        name: The attribute name in the loaded settings.
        parse: Turns the text into a value, or raises ``ValueError``; its message, if
            any, follows the rule in the error, so keep it short and free of secrets.
        rule: What a good value is, e.g. "a whole number from 1 to 65535".
        help: One line for ``--help``.
        env: The environment variable, or ``None`` for a flag only.
        flag: The flag, ``None`` for a variable only (secrets do not belong in ``ps``).
        default: The default as text, parsed like any value; ``None`` means unset.
        shown_default: How ``--help`` shows the default, when the text alone would not say.
        switch: The flag takes no argument and means "1".
        secret: Error messages show only the first characters of the value.
    """

    name: str
    parse: Callable[[str], T]
    rule: str
    help: str
    env: str | None = None
    flag: str | None = None
    default: str | None = None
    shown_default: str | None = None
    switch: bool = False
    secret: bool = False


@dataclass(frozen=True)
class Source:
    """Where a value came from, as a user would write it: ``--port 8000``, ``BASKET_PORT=abc``."""

    kind: str  # "flag", "env" or "default"
    text: str

    def __str__(self) -> str:
        return self.text


def load_settings(
    settings: Sequence[Setting[Any]],
    argv: Sequence[str] | None,
    environ: Mapping[str, str],
    *,
    parser: argparse.ArgumentParser,
    checks: Sequence[Callable[[dict[str, Any], dict[str, Source]], None]] = (),
) -> tuple[argparse.Namespace, dict[str, Any], dict[str, Source]]:
    """Parse ``argv`` with ``parser`` plus a flag per setting, then read and check each value.

    Returns the parsed namespace (for the parser's own arguments), the values and their
    sources. ``checks`` run last, on all values, and raise ``ConfigError`` for rules that
    tie settings together.
    """
    for setting in settings:
        if setting.flag is None:
            continue
        if setting.switch:
            parser.add_argument(
                setting.flag,
                dest=setting.name,
                action="store_const",
                const="1",
                default=None,
                help=_help(setting),
            )
        else:
            parser.add_argument(
                setting.flag,
                dest=setting.name,
                default=None,
                metavar=_metavar(setting),
                help=_help(setting),
            )
    namespace = parser.parse_args(argv)
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for setting in settings:
        text, source = _raw(setting, namespace, environ)
        values[setting.name] = None if text is None else _parse(setting, text, source)
        sources[setting.name] = source
    for check in checks:
        check(values, sources)
    return namespace, values, sources


def _raw(
    setting: Setting[Any], namespace: argparse.Namespace, environ: Mapping[str, str]
) -> tuple[str | None, Source]:
    given = getattr(namespace, setting.name, None) if setting.flag else None
    if given is not None:
        shown = setting.flag if setting.switch else f"{setting.flag} {_shown(setting, given)}"
        return given, Source("flag", str(shown))
    if setting.env and environ.get(setting.env, ""):
        value = environ[setting.env]
        return value, Source("env", f"{setting.env}={_shown(setting, value)}")
    label = setting.env or setting.flag or setting.name
    return setting.default, Source("default", f"{label} default {setting.default}")


def _parse(setting: Setting[T], text: str, source: Source) -> T:
    try:
        return setting.parse(text)
    except ValueError as exc:
        detail = f" ({exc})" if str(exc) else ""
        raise ConfigError(f"{source}: expected {setting.rule}{detail}") from None


def _shown(setting: Setting[Any], value: str) -> str:
    if setting.secret:
        return repr(value[:4] + "…") + f" ({len(value)} characters)"
    return repr(value if len(value) <= 60 else value[:60] + "…")


def _metavar(setting: Setting[Any]) -> str:
    return (setting.env or setting.name).rsplit("_", 1)[-1].upper()


def _help(setting: Setting[Any]) -> str:
    default = setting.shown_default or ("off" if setting.switch else setting.default)
    where = f"env {setting.env}; " if setting.env else ""
    return f"{setting.help} ({where}default: {default})"


def environment_help(settings: Sequence[Setting[Any]]) -> str:
    """The lines of ``--help`` for the settings that have a variable and no flag."""
    lines = []
    for setting in settings:
        if setting.flag is None and setting.env:
            lines.append(f"  {setting.env:<19} {setting.help}")
            lines.append(f"  {'':<19} (default: {setting.shown_default or setting.default})")
    return "\n".join(lines)


# Parsers: each raises ValueError, with a detail message only when the rule alone
# would not say what is wrong.


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number, at least ``low`` (and at most ``high``)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError from None
        if value < low or (high is not None and value > high):
            raise ValueError
        return value

    return parse


def seconds(text: str) -> float:
    """A number of seconds greater than 0."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError
    return value


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def boolean(text: str) -> bool:
    """``1``/``0``, ``true``/``false``, ``yes``/``no``, ``on``/``off``."""
    lowered = text.strip().lower()
    if lowered not in (*_TRUE, *_FALSE):
        raise ValueError
    return lowered in _TRUE


def choice(*choices: str) -> Callable[[str], str]:
    """One of ``choices``, in any case; returns the upper-case form."""

    def parse(text: str) -> str:
        value = text.strip().upper()
        if value not in choices:
            raise ValueError
        return value

    return parse


PLACEHOLDER_SECRET = "replace-with-at-least-32-random-bytes-of-secret"
"""The placeholder the docs show in configuration examples; refused as a key."""


def secret_keys(text: str) -> list[str]:
    """A comma-separated key ring, oldest first: each key 32 bytes or more, none a placeholder,
    blank or one character repeated (see ``handles.ids.parse_secret_keys``)."""
    return parse_secret_keys(text)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def subject(text: str) -> str:
    """A principal's subject: 1 to 256 characters, no control characters."""
    if not text.strip() or len(text) > 256 or _CONTROL.search(text):
        raise ValueError
    return text
