"""The MCP Inspector CLI (Node) lists and calls tools on the stdio demo server, in both eras.

The Node tools come from ``.ci/install-node-tools`` (into ``$MCP_HANDLES_NODE_DIR``,
default ``~/.cache/mcp-handles-node``). Without them these tests are skipped, except
in CI (``$CI`` set), where that is a failure. Marked ``node``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..node_tools import require_node_tools
from .demo_server import TOOL_NAMES

pytestmark = pytest.mark.node
ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
"""Upper bound for one Inspector run (Node start-up, a server start and a few requests)."""
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "1.2.3"}}
ALL_TOOLS = TOOL_NAMES


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


RUNS: dict[str, list[str]] = {
    "list-legacy": ["--protocol-era", "legacy", "--method", "tools/list"],
    "list-modern": ["--protocol-era", "modern", "--method", "tools/list"],
    **{
        f"call-{era}": [
            *("--protocol-era", era, "--method", "tools/call", "--tool-name", "add"),
            *("--tool-args-json", '{"a": 1, "b": 2}', "--format", "json"),
        ]
        for era in ("legacy", "modern")
    },
    "bad-arguments": [
        *("--protocol-era", "modern", "--method", "tools/call", "--tool-name", "add"),
        *("--tool-args-json", '{"a": 1, "b": 200}', "--format", "json"),
    ],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """Every Inspector command of this module, run concurrently, once."""
    tools = require_node_tools("mcp-inspector")
    home = tmp_path_factory.mktemp("inspector-home")  # the Inspector writes ~/.mcp-inspector
    env = {**tools.env(), "HOME": str(home), "HANDLES_PRINCIPAL": "inspector-tester"}
    target = [sys.executable, "-m", "tests.transports.demo_server"]
    processes = {
        name: subprocess.Popen(
            [str(tools.bin("mcp-inspector")), "--cli", *target, *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in RUNS.items()
    }
    try:
        results = {}
        for name, process in processes.items():
            stdout, stderr = process.communicate(timeout=WAIT)
            results[name] = Run(process.returncode, stdout, stderr)
        yield results
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_lists_every_page(runs: dict[str, Run], era: str) -> None:
    run = runs[f"list-{era}"]
    assert run.code == 0, run.stderr
    listing = run.json()
    assert [tool["name"] for tool in listing["tools"]] == ALL_TOOLS
    add = listing["tools"][0]
    assert add["inputSchema"]["properties"]["b"] == {
        "default": 1,
        "description": "The second number.",
        "maximum": 50,
        "minimum": 0,
        "title": "B",
        "type": "integer",
    }


def test_calls_a_tool_in_the_legacy_era(runs: dict[str, Run]) -> None:
    run = runs["call-legacy"]
    assert run.code == 0, run.stderr
    # No _meta: the Inspector spoke the legacy era (initialize) and got legacy results.
    assert run.json() == {
        "result": {
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"result": 3},
            "isError": False,
        }
    }


def test_calls_a_tool_in_the_modern_era(runs: dict[str, Run]) -> None:
    run = runs["call-modern"]
    assert run.code == 0, run.stderr
    assert run.json() == {
        "result": {
            "_meta": SERVER_INFO,
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"result": 3},
            "isError": False,
        }
    }


def test_bad_arguments_are_a_tool_error(runs: dict[str, Run]) -> None:
    run = runs["bad-arguments"]
    assert run.code == 5  # the Inspector's exit code for isError:true
    assert run.json() == {
        "result": {
            "_meta": SERVER_INFO,
            "content": [
                {
                    "type": "text",
                    "text": "Input validation error in add: b: must be at most 50, got 200.",
                }
            ],
            "isError": True,
        }
    }
