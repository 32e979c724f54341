"""Write RESULTS.md from a run_all.sh results folder: mcp-handles against the baselines.

Usage: python benchmarks/report.py RESULTS_DIR [COMMAND]

Every number is the median over the run's repetitions, and every ratio compares
servers measured in that same run, interleaved (run_all.sh runs rep -> window ->
server), so machine noise hits them alike. Stdlib only.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

OURS, OURS_REDIS = "handles", "handles_redis"
BASE, BASE_REDIS = "base", "base_redis"  # an older commit, when run.sh had BASE=<commit>
BASELINES = ("floor", "sdk", "fastmcp", "sdk_redis")

Row = dict[str, Any]


def load(folder: Path, kind: str) -> list[Row]:
    path = folder / f"{kind}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def workload(rows: list[Row], label: str, window: int) -> Row | None:
    """Medians of one server's verified runs at one window, or None if none passed."""
    runs = [
        r
        for r in rows
        if r.get("label") == label and r.get("W") == window and r.get("ok") and r["verify"]["ok"]
    ]
    if not runs:
        return None

    def calls(r: Row) -> int:
        return int(r["B"]) * 2 + int(r["N"]) + 1

    def pick(get: Callable[[Row], float | None]) -> float | None:
        return median([get(r) for r in runs])

    watched = any(r.get("watched") for r in runs)
    return {
        "runs": len(runs),
        "of": sum(1 for r in rows if r.get("label") == label and r.get("W") == window),
        "add": pick(lambda r: r["phases"]["add_item"]["calls_per_s"]),
        "p50": pick(lambda r: r["phases"]["add_item"]["p50_ms"]),
        "p99": pick(lambda r: r["phases"]["add_item"]["p99_ms"]),
        "cpu": pick(lambda r: r["server_proc"]["cpu_workload_s"] / calls(r) * 1e6),
        "redis_cpu": pick(
            lambda r: sum(w.get("cpu_s", 0) for w in r.get("watched", [])) / calls(r) * 1e6
        )
        if watched
        else None,
        "rss": pick(lambda r: r["server_proc"]["vm_hwm_kb"] / 1024),
    }


def cold_start(rows: list[Row], label: str) -> float | None:
    return median(
        [ms for r in rows if r.get("label") == label and r.get("ok") for ms in r["init_ms"]]
    )


def num(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def times(value: float | None, base: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or not base else f"{value / base:.{digits}f}"


def against_base(
    get: Callable[[str, int, str], float | None], starts: dict[str, float | None]
) -> list[str]:
    """This commit's ratios next to the base commit's, both measured in this run."""
    out = [
        "## Against the base commit (BASE)",
        "",
        "| ratio | this commit | base | change |",
        "|---|---|---|---|",
    ]

    def row(what: str, ours: float | None, base: float | None) -> None:
        change = "n/a" if ours is None or not base else f"{(ours / base - 1) * 100:+.1f}%"
        out.append(f"| {what} | {num(ours, 2)} | {num(base, 2)} | {change} |")

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else a / b

    for window in (1, 32):
        for ours, base, sdk in ((OURS, BASE, "sdk"), (OURS_REDIS, BASE_REDIS, "sdk_redis")):
            row(
                f"{ours}, W={window}: add_item/s vs {sdk}",
                ratio(get(ours, window, "add"), get(sdk, window, "add")),
                ratio(get(base, window, "add"), get(sdk, window, "add")),
            )
    for ours, base in ((OURS, BASE), (OURS_REDIS, BASE_REDIS)):
        row(f"{ours}, W=1: server CPU us per call", get(ours, 1, "cpu"), get(base, 1, "cpu"))
    row(
        "cold start vs sdk",
        ratio(starts.get(OURS), starts.get("sdk")),
        ratio(starts.get(BASE), starts.get("sdk")),
    )
    return [*out, ""]


def main() -> None:
    folder = Path(sys.argv[1])
    command = sys.argv[2] if len(sys.argv) > 2 else "benchmarks/run.sh"
    work, cold, contention = (load(folder, k) for k in ("workload", "cold", "contention"))
    labels = [
        lab
        for lab in (*BASELINES, OURS, OURS_REDIS, BASE, BASE_REDIS)
        if any(r.get("label") == lab for r in work)
    ]
    table = {(lab, w): workload(work, lab, w) for lab in labels for w in (1, 32)}
    starts = {lab: cold_start(cold, lab) for lab in labels}
    env = (folder / "env.txt").read_text().strip() if (folder / "env.txt").exists() else ""

    def get(label: str, window: int, key: str) -> float | None:
        row = table.get((label, window))
        return None if row is None else row[key]

    out = [
        "# Results: mcp-handles against the baselines, measured in one run",
        "",
        f"Produced by `{command}` (results folder `{folder}`). Medians over the run's",
        "repetitions; ratios compare servers measured in the same run, interleaved.",
        "`handles` is `python -m example_basket` (stdio, in-memory store); `handles_redis` the",
        "same with `--store redis://...`. Every run verified every (basket, sku) count.",
        "",
        "```",
        env,
        "```",
        "",
        "## Targets (issue 7)",
        "",
        "| target | measured | goal | met |",
        "|---|---|---|---|",
    ]

    def target(what: str, value: float | None, goal: str, ok: bool | None) -> None:
        shown = "n/a" if value is None else f"{value:.2f}"
        met = "n/a" if ok is None else ("yes" if ok else "**no**")
        out.append(f"| {what} | {shown} | {goal} | {met} |")

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else a / b

    for window, goal in ((1, 3.0), (32, 10.0)):
        r = ratio(get(OURS, window, "add"), get("sdk", window, "add"))
        target(
            f"memory, W={window}: add_item/s vs sdk",
            r,
            f">= {goal:g}x",
            None if r is None else r >= goal,
        )
    r = ratio(get(OURS, 1, "cpu"), get("floor", 1, "cpu"))
    target("memory, W=1: server CPU per call vs floor", r, "<= 2x", None if r is None else r <= 2)
    for window in (1, 32):
        r = ratio(get(OURS_REDIS, window, "add"), get("sdk_redis", window, "add"))
        target(
            f"Redis, W={window}: add_item/s vs sdk_redis", r, ">= 3x", None if r is None else r >= 3
        )
    r = ratio(starts.get(OURS), starts.get("sdk"))
    target("cold start (spawn -> initialize) vs sdk", r, "<= 0.4x", None if r is None else r <= 0.4)
    out += [
        "",
        "Redis round trips per call (1 per add_item when the replica holds the basket's",
        "latest version, else 2; 1 per get_basket) are counted by",
        "`tests/example_basket/test_redis_round_trips.py`, not timed here.",
        "",
        "## Side by side",
        "",
        "| server | W=1 add_item/s (x sdk) | W=1 p50 / p99 ms | W=32 add_item/s (x sdk) "
        "| W=32 p50 / p99 ms | server CPU us/call, W=1 (x floor) | peak RSS MiB "
        "| cold start ms (x sdk) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lab in labels:
        cells = [lab]
        for window in (1, 32):
            base = "sdk_redis" if "redis" in lab else "sdk"
            add = get(lab, window, "add")
            cells.append(f"{num(add)} ({times(add, get(base, window, 'add'))})")
            cells.append(f"{num(get(lab, window, 'p50'), 2)} / {num(get(lab, window, 'p99'), 2)}")
        cpu = get(lab, 1, "cpu")
        redis_cpu = get(lab, 1, "redis_cpu")
        extra = f" (+{num(redis_cpu)} in redis)" if redis_cpu is not None else ""
        cells.append(f"{num(cpu)}{extra} ({times(cpu, get('floor', 1, 'cpu'))})")
        cells.append(num(get(lab, 1, "rss"), 1))
        cells.append(f"{num(starts.get(lab))} ({times(starts.get(lab), starts.get('sdk'))})")
        out.append("| " + " | ".join(cells) + " |")
    out += [
        "",
        "Ratios for the Redis servers are against `sdk_redis`, all others against `sdk`.",
        "",
    ]
    if BASE in labels:
        out += against_base(get, starts)
    if contention:
        out += [
            "## Contention (B=4, N=2000, W=32: lost-update stress)",
            "",
            "| server | verified | lost updates | add_item/s |",
            "|---|---|---|---|",
        ]
        for run in contention:
            if not run.get("ok"):
                out.append(f"| {run.get('label')} | ERROR | | |")
                continue
            verify, rate = run["verify"], run["phases"]["add_item"]["calls_per_s"]
            passed = "PASS" if verify["ok"] else "FAIL"
            out.append(f"| {run['label']} | {passed} | {verify['lost_updates']} | {num(rate)} |")
        out.append("")
    failed = [
        run
        for run in work + cold + contention
        if not run.get("ok") or not run.get("verify", {"ok": True})["ok"]
    ]
    if failed:
        out += ["## Failures", ""]
        for run in failed:
            why = (run.get("error") or "verification failed")[:300]
            out.append(f"- {run.get('label')} {run.get('kind')} W={run.get('W')}: {why}")
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
