"""The MCP Inspector CLI (Node) lists and calls tools over the HTTP transport, in both eras.

uvicorn serves in-process (asyncio only); the Inspector runs as a subprocess.
Skipped without the Node tools (a failure under ``$CI``): see ``.ci/install-node-tools``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from handles.transports.auth import StaticTokenVerifier
from handles.transports.http import http_app

from ..node_tools import NodeTools, require_node_tools
from .http_support import ALICE, BOB, build_server, serving

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.timeout(120)]
WAIT = 60.0
"""Upper bound for one Inspector run (Node start-up and a few requests)."""
ERAS = ["legacy", "modern"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return require_node_tools("mcp-inspector")


@pytest.fixture(scope="module")
async def url() -> AsyncIterator[str]:
    verifier = StaticTokenVerifier({"tok-alice": ALICE, "tok-bob": BOB})
    app = http_app(build_server(), verifier=verifier, resource_url="http://127.0.0.1/mcp")
    async with serving(app) as url:
        yield url


async def inspector(tools: NodeTools, url: str, era: str, *args: str) -> tuple[int, Any]:
    command = [str(tools.bin("mcp-inspector")), "--cli", url, "--protocol-era", era]
    command += ["--header", "Authorization: Bearer tok-alice", *args]
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(command, env=tools.env(), check=False)
    assert done.stdout, done.stderr.decode()
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("era", ERAS)
async def test_lists_every_page(tools: NodeTools, url: str, era: str) -> None:
    code, output = await inspector(tools, url, era, "--method", "tools/list")
    assert code == 0
    names = [tool["name"] for tool in output["tools"]]
    assert names == ["add", "whoami", "crash", "refuse", "progress", "wait"]


@pytest.mark.parametrize("era", ERAS)
async def test_calls_a_tool(tools: NodeTools, url: str, era: str) -> None:
    args = ["--method", "tools/call", "--tool-name", "add", "--format", "json"]
    code, output = await inspector(tools, url, era, *args, "--tool-args-json", '{"a": 1, "b": 2}')
    assert code == 0
    assert output["result"]["structuredContent"] == {"result": 3}
    assert ("_meta" in output["result"]) is (era == "modern")


@pytest.mark.parametrize("era", ERAS)
async def test_calls_as_the_token_s_principal(tools: NodeTools, url: str, era: str) -> None:
    args = ["--method", "tools/call", "--tool-name", "whoami", "--format", "json"]
    code, output = await inspector(tools, url, era, *args)
    assert code == 0
    assert output["result"]["structuredContent"] == {"result": "alice"}
