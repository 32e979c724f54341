"""HTTP on more than one core: N replicas of the basket demo on one Redis.

Usage: python benchmarks/http_workers.py [--workers 1,2] [--clients 32] [--baskets 200]
       [--calls 5000] [--reps 3] [--redis-server PATH]

It starts a private redis-server (free port, temporary directory, no persistence), then
for each N in ``--workers``, interleaved (rep -> N), N fresh replicas of
``python -m example_basket --http --store redis://... --rate-limit 0`` with one
``HANDLES_SECRET``. The workload is http_load.py's: ``--clients`` keep-alive clients,
client i on replica i % N, each basket on one replica (handle-affine, as
docs/routing.md recommends), ``--baskets`` creates, ``--calls`` add_item, then every
basket read back and its counts checked. Redis is flushed before each run.

Reported per N (medians over ``--reps``): the add_item rate, its latency p50/p99, the
replicas' CPU per call (summed, from /proc), redis-server's CPU per call, the load
client's own CPU per call and its share of the machine's cores. On a small machine the
client competes with the servers for the cores, so the rate at N=2 says less than the
CPU per call; the projection at the end is built from the CPU per call alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from http_load import (  # noqa: E402
    NO_LIMIT,
    ROOT,
    cpu_seconds,
    free_port,
    start,
    wait_listening,
    workload,
)

KEYS = ("rate", "p50", "p99", "cpu_us", "redis_us", "client_us", "client_share")


def redis_command(port: int, command: str) -> bytes:
    """Send one inline command to redis-server and return its first reply line."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(command.encode() + b"\r\n")
        return sock.makefile("rb").readline()


def start_redis(binary: str, directory: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", directory]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    wait_listening(port, process, command)
    for _ in range(100):  # listening comes before loading is done
        if redis_command(port, "PING").startswith(b"+PONG"):
            return process, port
        time.sleep(0.05)
    raise RuntimeError(f"redis-server on port {port} does not answer PING")


def measure(
    workers: int,
    redis: subprocess.Popen[bytes],
    redis_port: int,
    args: argparse.Namespace,
    seed: int,
) -> dict[str, Any]:
    if not redis_command(redis_port, "FLUSHALL").startswith(b"+OK"):
        raise RuntimeError("FLUSHALL failed")  # each run starts empty, under the basket quota
    python = os.environ.get("PY", sys.executable)
    store = ["--store", f"redis://127.0.0.1:{redis_port}/0"]
    ports = [free_port() for _ in range(workers)]
    commands = [
        [
            python,
            "-m",
            "example_basket",
            "--http",
            "--port",
            str(port),
            "--tuned",
            *store,
            *NO_LIMIT,
        ]
        for port in ports
    ]
    replicas = [start(command) for command in commands]
    try:
        for port, replica, command in zip(ports, replicas, commands, strict=True):
            wait_listening(port, replica, command)
        servers_before = sum(cpu_seconds(replica.pid) for replica in replicas)
        redis_before = cpu_seconds(redis.pid)
        client_before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        result = asyncio.run(workload(ports, args.clients, args.baskets, args.calls, seed))
        wall = time.perf_counter() - started
        client_after = resource.getrusage(resource.RUSAGE_SELF)
        calls = result["calls"]
        servers = sum(cpu_seconds(replica.pid) for replica in replicas) - servers_before
        client = (client_after.ru_utime - client_before.ru_utime) + (
            client_after.ru_stime - client_before.ru_stime
        )
        result["cpu_us"] = servers / calls * 1e6
        result["redis_us"] = (cpu_seconds(redis.pid) - redis_before) / calls * 1e6
        result["client_us"] = client / calls * 1e6
        result["client_share"] = client / (wall * (os.cpu_count() or 1))
        return result
    finally:
        for replica in replicas:
            replica.terminate()
        for replica in replicas:
            replica.wait(10)


def projection(m: dict[str, float], workers: int) -> list[str]:
    per_core = 1e6 / m["cpu_us"]
    redis_limit = 1e6 / m["redis_us"]
    saturates = redis_limit / per_core
    lines = [
        f"\n### Projection (from the CPU per call at N={workers})\n",
        f"- one worker core serves about 1e6 / {m['cpu_us']:,.0f} us = {per_core:,.0f} calls/s",
        f"- one Redis serves about 1e6 / {m['redis_us']:,.0f} us = {redis_limit:,.0f} calls/s "
        "(it runs commands on one core)",
        f"- so N workers scale until N x {per_core:,.0f} ~ {redis_limit:,.0f}: one Redis "
        f"saturates at about **N = {saturates:.1f}** workers",
        "",
        "| N | projected calls/s | limited by |",
        "|---|---|---|",
    ]
    n = 1
    while True:
        rate = min(n * per_core, redis_limit)
        limit = "workers" if n * per_core < redis_limit else "Redis"
        lines.append(f"| {n} | {rate:,.0f} | {limit} |")
        if n > saturates:
            break
        n *= 2
    lines.append(
        "\nThe projection assumes one core per worker, Redis on a core of its own, and the "
        "load client on other machines; it ignores the network between them. Redis's CPU "
        "per call tends to fall as it gets busier (more commands per wake-up), so its "
        "limit here is on the low side."
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="1,2", help="replica counts, comma-separated")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--baskets", type=int, default=200)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    args = parser.parse_args()
    if not args.redis_server:
        parser.error("no redis-server on PATH; pass --redis-server")
    counts = [int(n) for n in args.workers.split(",")]
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="http-workers-redis-") as directory:
        redis, redis_port = start_redis(args.redis_server, directory)
        try:
            for rep in range(args.reps):
                for n in counts:
                    runs[n].append(measure(n, redis, redis_port, args, seed=rep))
                    print(f"  N={n} rep {rep + 1}: {runs[n][-1]['rate']:,.0f}/s", file=sys.stderr)
        finally:
            redis.kill()
            redis.wait()
    median = {
        n: {key: statistics.median(r[key] for r in rs) for key in KEYS} for n, rs in runs.items()
    }
    base = median[counts[0]]["rate"]
    command = ["python", "benchmarks/http_workers.py", "--workers", args.workers]
    command += ["--clients", str(args.clients), "--baskets", str(args.baskets)]
    command += ["--calls", str(args.calls), "--reps", str(args.reps)]
    print(f"## HTTP on more than one core (`{shlex.join(command)}`, commit `{commit()}`)\n")
    print(
        f"{args.clients} keep-alive clients, handle-affine over N replicas on one Redis, "
        f"{os.cpu_count()} cores shared by the replicas, Redis and the client; load average "
        f"{load_before:.1f} before the runs, {os.getloadavg()[0]:.1f} after.\n"
    )
    print(
        f"| N | add_item/s (x N={counts[0]}) | p50 ms | p99 ms | server CPU us/call "
        "| Redis CPU us/call | client CPU us/call | client share of cores | verified |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n, m in median.items():
        verified = sum(r["verified"] for r in runs[n])
        print(
            f"| {n} | {m['rate']:,.0f} ({m['rate'] / base:.2f}) | {m['p50']:.2f} | {m['p99']:.2f} "
            f"| {m['cpu_us']:,.0f} | {m['redis_us']:,.0f} | {m['client_us']:,.0f} "
            f"| {m['client_share']:.0%} | {verified}/{len(runs[n])} |"
        )
    print(
        "\nMedians over reps; every basket's counts were checked after each run. Server CPU "
        "is the sum over the N replicas; CPU per call counts every call (creates, add_item, "
        "reads). Client share = client CPU / (wall time x cores)."
    )
    print("\n".join(projection(median[counts[-1]], counts[-1])))


def commit() -> str:
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True).stdout

    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return f"{head}, with uncommitted changes" if git("status", "--porcelain").strip() else head


if __name__ == "__main__":
    main()
