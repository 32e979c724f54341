"""Adapter baskets against the shared FastMCP and SDK baselines, side by side.

    python benchmarks/adapters.py [--reps 5] [-B 200] [-N 5000] [--windows 1,32]

Runs the shared driver (``$BENCH/driver.py``, default ../shared/bench) on four stdio
servers, all with this interpreter (so each pair shares one framework version):
the baselines ``servers/fastmcp_basket.py`` and ``servers/sdk_basket.py`` (dict state)
and ``benchmarks/adapter_basket.py fastmcp|sdk`` (handles.integrations). Rounds are
interleaved (every server once per window per round, in rotating order), so drift
hits all alike. Prints, per framework and window, the median add_item/s of each, the
adapter's ratio to its baseline, and the server CPU per call of each; the difference
is the handle layer's CPU per call inside that framework. Every run must verify
(nothing lost, unknown handle gives isError), or the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = Path(os.environ.get("BENCH", HERE.parents[1] / "shared" / "bench"))


def servers() -> dict[str, str]:
    py = sys.executable
    return {
        "fastmcp-baseline": f"{py} {BENCH / 'servers' / 'fastmcp_basket.py'}",
        "fastmcp-adapter": f"{py} {HERE / 'adapter_basket.py'} fastmcp",
        "sdk-baseline": f"{py} {BENCH / 'servers' / 'sdk_basket.py'}",
        "sdk-adapter": f"{py} {HERE / 'adapter_basket.py'} sdk",
    }


def run(command: str, b: int, n: int, w: int) -> dict[str, object]:
    env = {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off"}
    env.setdefault("HANDLES_SECRET", "bench-only-secret-" + "x" * 32)
    args = [sys.executable, str(BENCH / "driver.py"), "--server", command]
    args += ["-B", str(b), "-N", str(n), "-W", str(w), "--json"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=BENCH, check=False)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    if done.returncode != 0:
        raise SystemExit(f"{command} at W={w} failed: {json.dumps(result)[:800]}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("-B", type=int, default=200)
    parser.add_argument("-N", type=int, default=5000)
    parser.add_argument("--windows", default="1,32")
    parser.add_argument("--jsonl", type=Path, default=None, help="also write every run here")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    named = servers()
    rate: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    calls = 2 * args.B + args.N + 1
    sink = args.jsonl.open("w") if args.jsonl else None
    for rep in range(args.reps):
        for w in windows:
            order = list(named)
            order = order[rep % len(order) :] + order[: rep % len(order)]
            for name in order:
                result = run(named[name], args.B, args.N, w)
                phases = result["phases"]
                proc = result["server_proc"]
                assert isinstance(phases, dict) and isinstance(proc, dict)
                rate.setdefault((name, w), []).append(float(phases["add_item"]["calls_per_s"]))
                cpu.setdefault((name, w), []).append(float(proc["cpu_workload_s"]) / calls)
                if sink:
                    sink.write(json.dumps({"name": name, "rep": rep, **result}) + "\n")
                print(
                    f"rep {rep} W={w} {name}: {rate[name, w][-1]:.0f} add_item/s", file=sys.stderr
                )
    print(f"B={args.B} N={args.N} reps={args.reps} (medians; CPU = server utime+stime per call)")
    print(
        "| framework | W | baseline add_item/s | adapter add_item/s | ratio | "
        "baseline CPU/call | adapter CPU/call | handle layer CPU/call |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for framework in ("fastmcp", "sdk"):
        for w in windows:
            base = statistics.median(rate[f"{framework}-baseline", w])
            mine = statistics.median(rate[f"{framework}-adapter", w])
            base_cpu = statistics.median(cpu[f"{framework}-baseline", w]) * 1e6
            mine_cpu = statistics.median(cpu[f"{framework}-adapter", w]) * 1e6
            print(
                f"| {framework} | {w} | {base:.0f} | {mine:.0f} | {mine / base:.2f} | "
                f"{base_cpu:.0f} µs | {mine_cpu:.0f} µs | {mine_cpu - base_cpu:.0f} µs |"
            )


if __name__ == "__main__":
    main()
