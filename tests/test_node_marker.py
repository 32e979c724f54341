"""Every test module that uses the Node tools is marked ``node``, so ``-m "not node"`` skips it."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_node_test_module_is_marked_node() -> None:
    users = [
        path
        for path in TESTS.rglob("test_*.py")
        if path != Path(__file__).resolve() and "node_tools import" in path.read_text()
    ]
    assert users, "no test module uses tests/node_tools.py"
    unmarked = [p.relative_to(TESTS) for p in users if "pytest.mark.node" not in p.read_text()]
    assert not unmarked, f"use the Node tools but are not marked node: {unmarked}"
