"""The demo's settings: every variable's bad value gets one line, and --help always works."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from example_basket.cli import SETTINGS, parse_args
from example_basket.config import PLACEHOLDER_SECRET

from .support import ROOT

GOOD_KEY = "k" * 32

# (variable, bad value, what the error must show of the value, the rule it must state)
BAD_VALUES = [
    ("BASKET_HTTP", "maybe", "'maybe'", "1/0, true/false, yes/no or on/off"),
    ("BASKET_HOST", "my host", "'my host'", "a host name or an IP address"),
    ("BASKET_PORT", "abc", "'abc'", "a whole number from 1 to 65535"),
    ("BASKET_PORT", "70000", "'70000'", "a whole number from 1 to 65535"),
    ("BASKET_STORE", "postgres://db", "'postgres://db'", "'memory' or a redis://"),
    ("BASKET_IDLE_TTL", "soon", "'soon'", "a number of seconds greater than 0"),
    ("BASKET_IDLE_TTL", "-5", "'-5'", "a number of seconds greater than 0"),
    ("BASKET_MAX_TTL", "nan", "'nan'", "a number of seconds greater than 0"),
    ("BASKET_QUOTA", "0", "'0'", "a whole number, 1 or more"),
    ("BASKET_RATE_LIMIT", "lots", "'lots'", "a whole number, 0 or more"),
    (
        "BASKET_TOKENS",
        "secret-token-without-subject",
        "'secr…' (28 characters)",
        "'token:subject' entries",
    ),
    ("BASKET_ALLOWED_ORIGINS", "app.example.com", "'app.example.com'", "comma-separated origins"),
    ("BASKET_LOG_LEVEL", "loud", "'loud'", "DEBUG, INFO, WARNING or ERROR"),
    ("BASKET_TUNED", "fast", "'fast'", "1/0, true/false, yes/no or on/off"),
    ("HANDLES_SECRET", "too-short", "'too-…' (9 characters)", "each at least 32 bytes"),
    ("HANDLES_SECRET", PLACEHOLDER_SECRET, "'repl…' (47 characters)", "none a placeholder"),
    ("HANDLES_PRINCIPAL", "alice\nroot", "'alice\\nroot'", "1 to 256 characters"),
]


def _error(argv: list[str], environ: dict[str, str]) -> str:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv, environ)
    message = str(exited.value.code)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(("variable", "value", "shown", "rule"), BAD_VALUES)
def test_a_bad_value_in_any_variable_gets_one_line_naming_it(
    variable: str, value: str, shown: str, rule: str
) -> None:
    message = _error([], {variable: value})
    assert message.startswith(f"python -m example_basket: {variable}={shown}: expected ")
    assert rule in message


def test_every_variable_has_a_bad_value_test() -> None:
    assert {s.env for s in SETTINGS} == {variable for variable, *_ in BAD_VALUES}


def test_a_secret_is_never_echoed_whole() -> None:
    secret = "s3cr3t-" * 3
    assert secret not in _error([], {"HANDLES_SECRET": secret})
    assert "tok-abcdef" not in _error([], {"BASKET_TOKENS": "tok-abcdef"})


def test_a_bad_flag_is_named_as_the_flag() -> None:
    message = _error(["--port", "abc"], {})
    assert message == (
        "python -m example_basket: --port 'abc': expected a whole number from 1 to 65535"
    )


def test_the_idle_timeout_cannot_outlive_the_absolute_lifetime() -> None:
    assert _error([], {"BASKET_MAX_TTL": "2"}) == (
        "python -m example_basket: the idle timeout (BASKET_IDLE_TTL default 1800) is longer "
        "than the absolute lifetime (BASKET_MAX_TTL='2'): a basket's idle timeout cannot be "
        "longer than its absolute lifetime"
    )
    message = _error(["--basket-idle-ttl", "60", "--basket-max-ttl", "30"], {})
    assert "(--basket-idle-ttl '60')" in message and "(--basket-max-ttl '30')" in message
    assert parse_args(["--basket-max-ttl", "2"], {"BASKET_IDLE_TTL": "2"}).basket_max_ttl == 2


def test_flags_win_over_variables_and_empty_variables_are_unset() -> None:
    args = parse_args(["--port", "9000"], {"BASKET_PORT": "9001", "BASKET_STORE": ""})
    assert (args.port, args.store, args.http) == (9000, "memory", False)
    environ = {"BASKET_HTTP": "yes", "BASKET_LOG_LEVEL": "debug", "HANDLES_SECRET": GOOD_KEY}
    args = parse_args([], environ)
    assert (args.http, args.log_level, args.secret_keys) == (True, "DEBUG", [GOOD_KEY])
    assert parse_args(["--http"], {"BASKET_HTTP": "0"}).http is True
    assert parse_args([], {}).secret_keys is None


def _cli(*argv: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"), **environ}
    return subprocess.run(
        [sys.executable, "-m", "example_basket", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_help_works_whatever_the_environment_holds() -> None:
    bad = {variable: value for variable, value, *_ in BAD_VALUES}
    done = _cli("--help", **bad)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # argparse wraps lines where it likes
    for setting in SETTINGS:
        assert setting.env is not None and setting.env in text
        assert f"default: {setting.shown_default or setting.default}" in text
        if setting.flag:
            assert setting.flag in text
    assert "idle timeout cannot be longer than the absolute lifetime" in text
    assert "examples:" in text


def test_a_bad_variable_stops_the_server_with_one_line_and_no_traceback() -> None:
    done = _cli(BASKET_PORT="abc")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "python -m example_basket: BASKET_PORT='abc': expected a whole number from 1 to 65535"
    ]


def test_version() -> None:
    done = _cli("--version")
    assert done.returncode == 0
    assert re.fullmatch(r"mcp-handles-basket \S+ \(Python 3\.\d+\.\d+\)\n", done.stdout)
