"""The built distributions, as a new user gets them: sdist, wheel, a clean venv, no repository.

The sdist is built first and the wheel from it (``python -m build``), so a file the sdist
forgets breaks the wheel too. The wheel is installed with the ``demo`` extra into a fresh
venv in a temporary directory, and everything runs from there, never from the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _run(*command: str | Path, cwd: Path, timeout: float = 600) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=out)
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("user")
    _run(sys.executable, "-m", "venv", home / "venv", cwd=home)
    wheel = next(dist.glob("mcp_handles-*.whl"))
    _run(home / "venv/bin/python", "-m", "pip", "install", "-q", f"{wheel}[demo]", cwd=home)
    yield home / "venv"


def test_the_sdist_and_the_wheel_carry_the_license_and_the_three_packages(dist: Path) -> None:
    wheel = next(dist.glob("mcp_handles-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.startswith("mcp_handles-")}
    assert tops == {"handles", "stores", "example_basket"}
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "handles/py.typed" in names
    metadata = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    )
    assert "License-Expression: MIT" in metadata
    assert "Provides-Extra: dev" not in metadata, "dev tools are dependency groups, not extras"
    sdist = next(dist.glob("mcp_handles-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[-1] for name in archive.getnames()}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= members


def test_the_demo_runs_from_the_installed_wheel(venv: Path) -> None:
    elsewhere = venv.parent
    where = _run(
        venv / "bin/python",
        "-c",
        "import example_basket; print(example_basket.__file__)",
        cwd=elsewhere,
    )
    assert where.startswith(str(venv)), where
    out = _run(venv / "bin/python", "-m", "example_basket", "demo", cwd=elsewhere, timeout=120)
    assert "# The server offers 8 tools:" in out
    assert out.rstrip().endswith("what went wrong and what to call.")


def test_the_console_script_serves_the_demo_over_stdio(venv: Path) -> None:
    script = venv / "bin/mcp-handles-basket"
    assert _run(script, "--version", cwd=venv.parent).startswith("mcp-handles-basket ")
    client = textwrap.dedent(
        f"""
        import anyio
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        async def main():
            server = StdioServerParameters(command={str(script)!r}, args=[])
            async with Client(server) as client:
                tools = await client.list_tools()
                print(sorted(tool.name for tool in tools.tools))
                result = await client.call_tool("search_catalog", {{"query": "mug"}})
                print(result.is_error)

        anyio.run(main)
        """
    )
    out = _run(venv / "bin/python", "-c", client, cwd=venv.parent, timeout=120)
    assert out.splitlines() == [
        "['add_item', 'checkout', 'close_basket', 'create_basket', 'get_basket', "
        "'list_baskets', 'remove_item', 'search_catalog']",
        "False",
    ]
