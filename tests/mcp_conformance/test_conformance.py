"""The MCP conformance suite against our core, served over HTTP (``tests.mcp_conformance.server``).

Every server scenario the installed suite offers is either run, at every spec
version it covers (``RUN``), or left out with the reason (``LEFT_OUT``);
``test_every_offered_scenario_is_run_or_left_out`` keeps the two honest when
the suite grows. A check that fails or warns fails its scenario's test, unless
``EXPECTED`` names it with the reason.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..node_tools import NodeTools, require_node_tools
from .runner import ScenarioRun, offered_scenarios, run_scenarios

pytestmark = [pytest.mark.node, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[2]
ALL = ("2025-06-18", "2025-11-25", "2026-07-28")

RUN: dict[str, tuple[str, ...]] = {
    "server-initialize": ("2025-06-18", "2025-11-25"),
    "server-session-lifecycle": ("2025-03-26", "2025-06-18", "2025-11-25"),
    "server-stateless": ("2026-07-28",),
    "ping": ("2025-06-18", "2025-11-25"),
    "tools-list": ALL,
    "tools-call-simple-text": ALL,
    "tools-call-image": ALL,
    "tools-call-audio": ALL,
    "tools-call-embedded-resource": ALL,
    "tools-call-mixed-content": ALL,
    "tools-call-error": ALL,
    "tools-call-with-progress": ALL,
    "json-schema-2020-12": ("2025-11-25", "2026-07-28"),
    "server-sse-multiple-streams": ("2025-11-25", "2026-07-28"),
    "server-sse-polling": ("2025-11-25",),
    "dns-rebinding-protection": ("2025-11-25", "2026-07-28"),
    "caching": ("2026-07-28",),
    "http-header-validation": ("2026-07-28",),
    "http-custom-header-server-validation": ("2026-07-28",),
    "logging-set-level": ("2025-06-18", "2025-11-25"),
    "tools-call-with-logging": ("2025-06-18", "2025-11-25"),
    "tools-call-sampling": ("2025-06-18", "2025-11-25"),
    "tools-call-elicitation": ("2025-06-18", "2025-11-25"),
    "elicitation-sep1034-defaults": ("2025-11-25",),
    "elicitation-sep1330-enums": ("2025-11-25",),
    **{
        f"input-required-result-{name}": ("2026-07-28",)
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "missing-input-response",
            "result-type",
            "unsupported-methods",
            "tampered-state",
            "capability-check",
            "ignore-extra-params",
            "validate-input",
        )
    },
}
"""Scenarios about tools or the transport, with the spec versions to run each at."""

_NO_RESOURCES = "resources: the core serves tools only"
_NO_PROMPTS = "prompts: the core serves tools only"
LEFT_OUT: dict[str, str] = {
    "completion-complete": "completions (of prompt and resource arguments): tools only",
    "resources-list": _NO_RESOURCES,
    "resources-read-text": _NO_RESOURCES,
    "resources-read-binary": _NO_RESOURCES,
    "resources-templates-read": _NO_RESOURCES,
    "resources-subscribe": _NO_RESOURCES,
    "resources-unsubscribe": _NO_RESOURCES,
    "sep-2164-resource-not-found": _NO_RESOURCES,
    "prompts-list": _NO_PROMPTS,
    "prompts-get-simple": _NO_PROMPTS,
    "prompts-get-with-args": _NO_PROMPTS,
    "prompts-get-embedded-resource": _NO_PROMPTS,
    "prompts-get-with-image": _NO_PROMPTS,
    "input-required-result-non-tool-request": "input required on prompts/get: " + _NO_PROMPTS,
    **{
        f"sep-2640-skills-{part}": "the skills extension (optional, not implemented)"
        for part in ("directory", "enumeration", "manifest")
    },
    **{
        f"tasks-{part}": "the tasks extension (optional, not implemented)"
        for part in (
            "lifecycle",
            "capability-negotiation",
            "wire-fields",
            "request-state-removal",
            "mrtr-input",
            "request-headers",
            "dispatch-and-envelope",
            "status-notifications",
            "required-task-error",
            "mrtr-composition",
        )
    },
}
"""Every other scenario the suite offers, with why it is not run."""

_STATELESS = "a stateless server issues no session id, which the legacy stream checks want"
EXPECTED: dict[str, dict[str, str]] = {
    "caching": {
        "sep-2549-prompts-list-caching-hints": _NO_PROMPTS,
        "sep-2549-resources-list-caching-hints": _NO_RESOURCES,
        "sep-2549-resources-templates-list-caching-hints": _NO_RESOURCES,
    },
    "server-sse-multiple-streams": {"server-sse-multiple-streams-session": _STATELESS},
    "server-sse-polling": {"server-sse-polling-session": _STATELESS},
}
"""Checks allowed to fail or warn (by scenario, at any version), with why."""

PAIRS = [(scenario, version) for scenario, versions in RUN.items() for version in versions]


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return require_node_tools("conformance")


@pytest.fixture(scope="module")
def server_url(tools: NodeTools) -> Iterator[str]:
    """The conformance server in a subprocess, on a socket that listens before it starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        command = [sys.executable, "-m", "tests.mcp_conformance.server", "--fd", str(sock.fileno())]
        server = subprocess.Popen(command, cwd=ROOT, pass_fds=[sock.fileno()])
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.fixture(scope="module")
def runs(server_url: str, tools: NodeTools) -> dict[tuple[str, str], ScenarioRun]:
    # A principal per run: runs in parallel must not share a 2025-era handshake.
    per_run = server_url.removesuffix("/mcp") + "/run/{}/mcp"
    return run_scenarios(per_run.format, PAIRS, tools=tools)


@pytest.mark.parametrize(("scenario", "version"), PAIRS, ids=[f"{s}@{v}" for s, v in PAIRS])
def test_scenario(runs: dict[tuple[str, str], ScenarioRun], scenario: str, version: str) -> None:
    run = runs[scenario, version]
    problems = run.problems(EXPECTED.get(scenario))
    assert not problems, f"{scenario} at {version}, {run.counts()}:\n" + "\n".join(problems)


def test_every_offered_scenario_is_run_or_left_out(tools: NodeTools) -> None:
    offered = offered_scenarios(tools)
    assert not set(RUN) & set(LEFT_OUT)
    assert set(offered) == set(RUN) | set(LEFT_OUT)
    assert {s: offered[s] for s in RUN} == RUN, "a scenario now covers other spec versions"
