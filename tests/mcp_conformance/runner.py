"""Run the MCP conformance suite's server scenarios against a URL and read the verdicts.

Reusable for any server under test: ``run_scenarios(url, [(scenario, version), ...])``
returns one ``ScenarioRun`` per pair, built from the ``checks.json`` the suite
writes; ``ScenarioRun.problems()`` names the checks that failed or warned.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..node_tools import NodeTools

__all__ = ["Check", "ScenarioRun", "offered_scenarios", "run_scenario", "run_scenarios"]

SCENARIO_SECONDS = 120
"""Upper bound for one scenario run (Node start-up plus the scenario's own timeouts)."""
BAD = ("FAILURE", "WARNING")
_LISTED = re.compile(r"^\s+- (\S+) \[([^\]]*)\]$")


@dataclass(frozen=True)
class Check:
    """One check of a scenario: its id, status (SUCCESS, FAILURE, WARNING, INFO, SKIPPED)."""

    id: str
    name: str
    status: str
    message: str

    def __str__(self) -> str:
        return f"{self.id} ({self.name}) {self.status}: {self.message}".rstrip(": ")


@dataclass(frozen=True)
class ScenarioRun:
    """One run of one scenario at one spec version."""

    scenario: str
    version: str
    returncode: int
    checks: tuple[Check, ...]
    output: str

    def problems(self, expected: Mapping[str, str] | None = None) -> list[str]:
        """What is wrong: failing or warning checks not in ``expected`` (check id -> why)."""
        expected = expected or {}
        found = [str(c) for c in self.checks if c.status in BAD and c.id not in expected]
        if not self.checks:
            found.append(f"no checks were reported (exit {self.returncode}): {self._tail()}")
        elif self.returncode not in (0, 1) or (
            self.returncode == 1 and not any(c.status == "FAILURE" for c in self.checks)
        ):
            found.append(f"the suite exited {self.returncode}: {self._tail()}")
        return found

    def counts(self) -> str:
        passed = sum(c.status == "SUCCESS" for c in self.checks)
        return f"{passed}/{len(self.checks)} passed"

    def _tail(self) -> str:
        return self.output[-2000:]


def run_scenario(
    url: str, scenario: str, version: str, *, tools: NodeTools, timeout: float = SCENARIO_SECONDS
) -> ScenarioRun:
    """Run one server scenario at one spec version against ``url``."""
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        command = [
            str(tools.bin("conformance")),
            *("server", "--url", url, "--scenario", scenario),
            *("--spec-version", version, "--output-dir", out),
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, env=tools.env(), timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return ScenarioRun(scenario, version, -1, (), f"timed out after {timeout} s")
        checks = tuple(_read_checks(Path(out)))
    return ScenarioRun(scenario, version, done.returncode, checks, done.stdout + done.stderr)


def run_scenarios(
    url: str | Callable[[int], str],
    pairs: Iterable[tuple[str, str]],
    *,
    tools: NodeTools,
    workers: int = 4,
) -> dict[tuple[str, str], ScenarioRun]:
    """Run each ``(scenario, version)``, ``workers`` at a time; results by pair.

    ``url`` may be a function of the run's number, giving each run an endpoint
    of its own (see ``tests.mcp_conformance.server.PerRun``).
    """
    pairs = list(pairs)
    url_for = url if callable(url) else lambda _: url

    def run(numbered: tuple[int, tuple[str, str]]) -> ScenarioRun:
        number, (scenario, version) = numbered
        return run_scenario(url_for(number), scenario, version, tools=tools)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = pool.map(run, enumerate(pairs))
        return dict(zip(pairs, runs, strict=True))


def offered_scenarios(tools: NodeTools) -> dict[str, tuple[str, ...]]:
    """Every server scenario the installed suite offers, with the spec versions it covers.

    Extension scenarios have the single "version" ``extension``.
    """
    done = subprocess.run(
        [str(tools.bin("conformance")), "list", "--server"],
        capture_output=True,
        text=True,
        env=tools.env(),
        timeout=SCENARIO_SECONDS,
        check=True,
    )
    found = (_LISTED.match(line) for line in done.stdout.splitlines())
    return {m[1]: tuple(m[2].split(",")) for m in found if m}


def _read_checks(out: Path) -> list[Check]:
    checks = []
    for path in sorted(out.glob("*/checks.json")):
        for raw in json.loads(path.read_text()):
            message = raw.get("errorMessage") or ""
            checks.append(Check(raw["id"], raw.get("name", ""), raw["status"], message))
    return checks
