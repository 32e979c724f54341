"""The README's promises: its two commands, CI running the same test command, and its example."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest

from handles import Principal, Server
from handles.transports import MemoryClient, connect_memory

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert block is not None and README.index(block.group(0)) < 40, "README opens with commands"
    return block.group(1).strip().splitlines()


def test_readme_opens_with_the_demo_and_the_test_command() -> None:
    demo, test = _commands()
    assert demo.endswith("python -m example_basket demo")
    assert test.endswith("python -m pytest")


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _commands()[1] in ci


def _example() -> types.ModuleType:
    code = re.search(r"```python\n(.*?)```", README, re.S)
    assert code is not None
    module = types.ModuleType("readme_example")
    exec(compile(code.group(1), "README.md", "exec"), module.__dict__)
    return module


async def _call(client: MemoryClient, id: int, tool: str, **arguments: Any) -> dict[str, Any]:
    reply = await client.request(id, "tools/call", {"name": tool, "arguments": arguments})
    result: dict[str, Any] = reply["result"]
    return result


@pytest.mark.anyio
async def test_the_stateful_tool_example_runs() -> None:
    server: Server = _example().server
    create = next(t for t in server.tools if t.name == "create_tab").definition
    assert create["description"].endswith(
        "Tabs expire after 10 minutes without use and 1 hour after creation."
    )
    async with connect_memory(server, Principal("alice")) as alice:
        tab_id = (await _call(alice, 1, "create_tab"))["structuredContent"]["tab_id"]
        assert tab_id.startswith("tab_")
        await _call(alice, 2, "navigate", tab_id=tab_id, url="https://example.org")
        state = await _call(alice, 3, "navigate", tab_id=tab_id, url="https://example.org/a")
        assert state["structuredContent"] == {
            "url": "https://example.org/a",
            "history": ["about:blank", "https://example.org"],
        }
        history = await _call(alice, 4, "back_history", tab_id=tab_id)
        assert history["structuredContent"] == {"result": ["about:blank", "https://example.org"]}
    async with connect_memory(server, Principal("mallory")) as mallory:
        stolen = await _call(mallory, 1, "navigate", tab_id=tab_id, url="https://evil.example")
        assert stolen["isError"] is True
        assert stolen["content"][0]["text"].startswith(f"Unknown tab '{tab_id}'.")
