"""Checkout through the TypeScript SDK v1 client (2025-11-25 only), over stdio and HTTP.

``ts_checkout.cjs`` connects, declares elicitation (or not), fills a basket and
checks it out, answering the ``elicitation/create`` it gets as told. The SDK
validates the request against its own schema before the handler sees it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..example_basket_http.support import DemoServer, demo_server
from ..node_tools import NodeTools, require_node_tools
from .support import WAIT, server_env

pytestmark = pytest.mark.node
SCRIPT = Path(__file__).with_name("ts_checkout.cjs")
SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Place the order"}},
    "required": ["confirm"],
}


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return require_node_tools(packages=("@modelcontextprotocol/sdk",))


@pytest.fixture(scope="module")
def http_server() -> Iterator[DemoServer]:
    with demo_server("--tokens", "tok-a:alice") as server:
        yield server


def run(tools: NodeTools, transport: str, answer: str, http_server: DemoServer) -> dict[str, Any]:
    node = str(tools.node_dir / "node")
    env = {**tools.env(), "NODE_PATH": str(tools.root / "node_modules")}
    if transport == "stdio":
        env.update(server_env("alice"))
        env["PATH"] = tools.env()["PATH"]
        args = [node, str(SCRIPT), "stdio", sys.executable, answer]
    else:
        args = [node, str(SCRIPT), "http", http_server.url, "tok-a", answer]
    done = subprocess.run(
        args, capture_output=True, text=True, env=env, cwd=SCRIPT.parents[2], timeout=4 * WAIT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


def text(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_user_accepts(tools: NodeTools, http_server: DemoServer, transport: str) -> None:
    outcome = run(tools, transport, "accept", http_server)
    basket_id = outcome["basketId"]
    message = f"Place the order for basket {basket_id}, total 39.80 EUR?"
    assert outcome["asked"] == [{"mode": "form", "message": message, "requestedSchema": SCHEMA}]
    checkout = outcome["checkout"]
    assert checkout["isError"] is False
    assert checkout["structuredContent"]["basket_id"] == basket_id
    assert checkout["structuredContent"]["total"] == 39.8
    assert outcome["after"]["isError"] is True
    assert text(outcome["after"]).startswith(f"Basket '{basket_id}' was checked out at ")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_user_declines(tools: NodeTools, http_server: DemoServer, transport: str) -> None:
    outcome = run(tools, transport, "decline", http_server)
    basket_id = outcome["basketId"]
    assert len(outcome["asked"]) == 1
    assert outcome["checkout"]["isError"] is True
    assert text(outcome["checkout"]) == (
        f"The user did not confirm the order, so nothing was ordered; basket {basket_id} "
        "is still open."
    )
    assert outcome["after"]["isError"] is False  # the basket is still open
    assert outcome["after"]["structuredContent"]["basket_id"] == basket_id


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_without_elicitation_the_confirm_argument_is_asked_for(
    tools: NodeTools, http_server: DemoServer, transport: str
) -> None:
    outcome = run(tools, transport, "none", http_server)
    assert outcome["asked"] == []
    assert text(outcome["checkout"]) == (
        "Checkout is irreversible: the order total is 39.80 EUR. Ask the user, "
        "then call checkout again with confirm: true."
    )
    assert outcome["after"]["isError"] is False
