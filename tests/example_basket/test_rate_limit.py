"""The demo's rate limit: on by default over HTTP (600 calls a minute per caller), off on stdio."""

from __future__ import annotations

import re
import time

import pytest
from mcp.types import TextContent

from example_basket.app import build_server
from example_basket.cli import HTTP_RATE_LIMIT, load_tokens, parse_args, rate_limit
from handles import RateLimiter
from handles.principal import Principal
from stores.memory import MemoryStore

from .support import SECRET, call_in_process, connect, ok, server_params
from .support import call as call_over

pytestmark = pytest.mark.anyio
ALICE, BOB = Principal("alice"), Principal("bob")
TOO_MANY = re.compile(
    r"Too many calls: at most 3 calls per minute per caller; try again in \d+ s\."
)


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([], {}, 0),
        (["--http"], {}, HTTP_RATE_LIMIT),
        (["--http", "--rate-limit", "0"], {}, 0),
        (["--rate-limit", "5"], {}, 5),
        ([], {"BASKET_RATE_LIMIT": "7"}, 7),
        (["--http"], {"BASKET_RATE_LIMIT": "0"}, 0),
        (["--rate-limit", "9"], {"BASKET_RATE_LIMIT": "7"}, 9),
    ],
)
def test_the_default_depends_on_the_transport(
    argv: list[str], env: dict[str, str], expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BASKET_RATE_LIMIT", raising=False)
    monkeypatch.delenv("BASKET_HTTP", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert rate_limit(parse_args(argv)) == expected


def test_a_bad_environment_value_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASKET_RATE_LIMIT", "lots")
    with pytest.raises(SystemExit, match=r"BASKET_RATE_LIMIT='lots': expected a whole number"):
        parse_args([])


call = call_in_process


async def test_every_tool_counts_per_caller() -> None:
    # One instant throughout: on the real clock a fixed window could end between two
    # calls and reset the count (the limiter and its store must share the clock).
    now = time.time()
    server = build_server(MemoryStore(clock=lambda: now), secret_keys=SECRET, rate_limit=3)
    assert isinstance(server.rate_limit, RateLimiter)
    server.rate_limit._clock = lambda: now
    created = await call(server, ALICE, "create_basket")
    basket_id = created["structuredContent"]["basket_id"]
    assert not (await call(server, ALICE, "search_catalog", query="mug"))["isError"]
    assert not (await call(server, ALICE, "get_basket", basket_id=basket_id))["isError"]
    over = await call(server, ALICE, "list_baskets")
    assert over["isError"] and TOO_MANY.fullmatch(over["content"][0]["text"])
    assert not (await call(server, BOB, "list_baskets"))["isError"]


async def test_no_limit_by_default() -> None:
    server = build_server(MemoryStore(), secret_keys=SECRET)
    assert server.rate_limit is None
    for _ in range(20):
        assert not (await call(server, ALICE, "search_catalog", query="mug"))["isError"]


async def test_the_flag_over_stdio_with_the_official_client() -> None:
    params = server_params()
    params.args = [*params.args, "--rate-limit", "3"]
    async with connect(params) as client:
        for _ in range(3):
            await ok(client, "search_catalog", query="cup")
        # The server counts in fixed one-minute windows of the real clock. Should one
        # end between these calls, the next window admits three more: of four more
        # calls, one is refused whenever the windows turn.
        more = [await call_over(client, "search_catalog", query="cup") for _ in range(4)]
    refusals = [result.content[0] for result in more if result.is_error]
    assert refusals, "the limit never refused a call"
    assert all(isinstance(r, TextContent) and TOO_MANY.fullmatch(r.text) for r in refusals)


def test_a_long_inline_token_list_is_not_taken_for_a_file_name() -> None:
    inline = ",".join(f"token-{n}-{'t' * 20}:client-{n}" for n in range(64))
    assert len(load_tokens(inline)) == 64
