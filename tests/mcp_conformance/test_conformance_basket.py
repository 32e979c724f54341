"""The MCP conformance suite against the basket demo: ``python -m example_basket --http``.

The second target, after our core with the suite's test tools (``test_conformance``).
The demo has only its eight basket tools, so only the scenarios that need no
tool of the suite's run here (``RUN``): the handshake and ``ping``, ``tools/list``,
the stateless-era rules, the caching hints of ``tools/list`` and
``server/discover``, the HTTP header rules and DNS-rebinding protection. Every
other scenario the suite offers is left out with the reason (``LEFT_OUT``):
those the core target leaves out, for the same reasons, and those that call a
test tool of the suite (they run against the core target). ``json-schema-2020-12``
is one of them: it looks for the suite's ``json_schema_2020_12_tool``.

Versions: a scenario covering both eras runs at the newest version of each
(2025-11-25 and 2026-07-28); 2025-06-18 takes the same legacy path as 2025-11-25
and is covered on the core target. That is nine runs of a few seconds each (Node
start-up dominates), four at a time: about 15 s.

Expectations are exact: every check of a run passes, except those in
``NOT_PASSING`` (check id -> status and why), and each of those has exactly
that status, so the list cannot go stale. The demo runs without ``--tokens``
(the suite sends no bearer token), serving one local principal on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..example_basket_http.support import DemoServer, demo_server
from ..node_tools import NodeTools, require_node_tools
from .runner import ScenarioRun, offered_scenarios, run_scenarios
from .test_conformance import LEFT_OUT as CORE_LEFT_OUT
from .test_conformance import RUN as CORE_RUN

pytestmark = [pytest.mark.node, pytest.mark.timeout(180)]
LEGACY, MODERN = "2025-11-25", "2026-07-28"

RUN: dict[str, tuple[str, ...]] = {
    "server-initialize": (LEGACY,),
    "ping": (LEGACY,),
    "server-stateless": (MODERN,),
    "tools-list": (LEGACY, MODERN),
    "caching": (MODERN,),
    "http-header-validation": (MODERN,),
    "http-custom-header-server-validation": (MODERN,),
    "dns-rebinding-protection": (LEGACY, MODERN),
}
"""Scenarios that need no tool of the suite's, with the versions to run each at."""

_SUITE_TOOLS = "calls a test tool of the suite that the demo does not have (run on the core target)"
LEFT_OUT: dict[str, str] = {
    **CORE_LEFT_OUT,
    **{scenario: _SUITE_TOOLS for scenario in CORE_RUN if scenario not in RUN},
    "server-session-lifecycle": (
        "legacy session lifecycle: the stateless transport issues no session id, so the suite "
        "skips every check (run on the core target)"
    ),
}
"""Every other scenario the suite offers, with why it is not run against the demo."""

_DIAGNOSTIC = "not testable: needs the suite's diagnostic tool {} (passes on the core target)"
_NO_SUBSCRIPTIONS = "the server declares no subscriptions (tools only, a fixed list)"
_NO_RESOURCES = "resources: the core serves tools only"
NOT_PASSING: dict[str, dict[str, tuple[str, str]]] = {
    "server-initialize": {
        "server-session-id-visible-ascii": ("INFO", "stateless: no session id to check"),
    },
    "server-stateless": {
        "sep-2575-server-rejects-undeclared-capability": (
            "FAILURE",
            _DIAGNOSTIC.format("test_missing_capability"),
        ),
        "sep-2575-missing-capability-http-400": (
            "FAILURE",
            _DIAGNOSTIC.format("test_missing_capability"),
        ),
        "sep-2575-http-server-no-independent-requests-on-stream": (
            "FAILURE",
            _DIAGNOSTIC.format("test_streaming_elicitation"),
        ),
        "sep-2575-server-no-log-without-loglevel": (
            "FAILURE",
            _DIAGNOSTIC.format("test_logging_tool"),
        ),
        **{
            f"sep-2575-server-{check}": ("SKIPPED", _NO_SUBSCRIPTIONS)
            for check in (
                "sends-subscription-ack",
                "tags-subscription-id",
                "honors-notification-filter",
                "sends-prompts-list-changed-on-subscription",
                "sends-tools-list-changed-on-subscription",
            )
        },
    },
    "caching": {
        "sep-2549-prompts-list-caching-hints": ("FAILURE", "prompts: the core serves tools only"),
        "sep-2549-resources-list-caching-hints": ("FAILURE", _NO_RESOURCES),
        "sep-2549-resources-templates-list-caching-hints": ("FAILURE", _NO_RESOURCES),
        "sep-2549-resources-read-caching-hints": ("SKIPPED", _NO_RESOURCES),
    },
}
"""Checks that do not pass (by scenario, at any version run): their status, and why."""

PAIRS = [(scenario, version) for scenario, versions in RUN.items() for version in versions]


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return require_node_tools("conformance")


@pytest.fixture(scope="module")
def demo(tools: NodeTools) -> Iterator[DemoServer]:
    with demo_server(env={"BASKET_STORE": "memory", "HANDLES_PRINCIPAL": "conformance"}) as demo:
        yield demo


@pytest.fixture(scope="module")
def runs(demo: DemoServer, tools: NodeTools) -> dict[tuple[str, str], ScenarioRun]:
    return run_scenarios(demo.url, PAIRS, tools=tools)


@pytest.mark.parametrize(("scenario", "version"), PAIRS, ids=[f"{s}@{v}" for s, v in PAIRS])
def test_scenario(runs: dict[tuple[str, str], ScenarioRun], scenario: str, version: str) -> None:
    run = runs[scenario, version]
    expected = NOT_PASSING.get(scenario, {})
    problems = run.problems({check: why for check, (_, why) in expected.items()})
    assert not problems, f"{scenario} at {version}, {run.counts()}:\n" + "\n".join(problems)
    not_passing = {check.id: check.status for check in run.checks if check.status != "SUCCESS"}
    assert not_passing == {check: status for check, (status, _) in expected.items()}, run.output


def test_every_offered_scenario_is_run_or_left_out(tools: NodeTools) -> None:
    offered = offered_scenarios(tools)
    assert not set(RUN) & set(LEFT_OUT)
    assert set(offered) == set(RUN) | set(LEFT_OUT)
    assert all(set(versions) <= set(offered[s]) for s, versions in RUN.items())
