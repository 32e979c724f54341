"""The adapter docs show the examples the tests run, and each example stays short."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastmcp.client.transports import StdioTransport
from mcp.client.stdio import StdioServerParameters

from .examples import EXAMPLES
from .support import ENV, ROOT, fastmcp_caller, sdk_caller

DOCS = ROOT / "docs"
PAGES = {"fastmcp_basket": "fastmcp.md", "sdk_basket": "mcp-sdk.md"}
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("example", sorted(PAGES))
def test_the_page_shows_the_example_verbatim(example: str) -> None:
    code = (EXAMPLES / f"{example}.py").read_text()
    assert f"```python\n{code}```" in (DOCS / PAGES[example]).read_text()


@pytest.mark.parametrize("example", sorted(PAGES))
def test_the_example_is_at_most_25_lines_below_its_imports(example: str) -> None:
    lines = (EXAMPLES / f"{example}.py").read_text().splitlines()
    last_import = max(i for i, line in enumerate(lines) if line.startswith(("from ", "import ")))
    body = [line for line in lines[last_import + 1 :] if line.strip()]
    assert len(body) <= 25, len(body)


def test_the_pages_link_each_other_and_the_readme_links_them() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in ("docs/fastmcp.md", "docs/mcp-sdk.md", "docs/migration.md"):
        assert page in readme
        assert (ROOT / page).is_file()


async def test_the_fastmcp_example_runs_as_a_script(tmp_path: Path) -> None:
    script = str(EXAMPLES / "fastmcp_basket.py")
    transport = StdioTransport(
        sys.executable, [script], env=ENV, cwd=str(ROOT), log_file=tmp_path / "log"
    )
    async with fastmcp_caller(transport) as call:
        created = await call("create_basket", {})
        added = await call("add_item", {"basket_id": created.structured["basket_id"], "sku": "a"})
    assert added.structured == {"items": {"a": 1}}


async def test_the_sdk_example_runs_as_a_script() -> None:
    script = str(EXAMPLES / "sdk_basket.py")
    params = StdioServerParameters(command=sys.executable, args=[script], cwd=ROOT, env=ENV)
    async with sdk_caller(params) as call:
        created = await call("create_basket", {})
        added = await call("add_item", {"basket_id": created.structured["basket_id"], "sku": "a"})
    assert added.structured == {"items": {"a": 1}}
