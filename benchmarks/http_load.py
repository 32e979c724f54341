"""HTTP: the basket demo against the official SDK's HTTP server, 32 clients at once.

Usage: python benchmarks/http_load.py [--clients 32] [--baskets 200] [--calls 5000] [--reps 3]

Both servers run the same workload over Streamable HTTP on 127.0.0.1, interleaved
(rep -> server), each as a fresh process: ``--clients`` keep-alive connections
create ``--baskets`` baskets, make ``--calls`` add_item calls on random baskets and
SKUs, then read every basket back and check each count. Reported per server: the
add_item rate, its latency p50/p99, and the server's CPU per call (from /proc).

- handles: ``python -m example_basket --http --tuned --rate-limit 0`` (stateless, JSON;
  ``--tuned`` as ``benchmarks/run.sh`` runs the demo: the same log line per call, written
  in batches)
- sdk: the shared benchmark's ``sdk_basket.py`` with ``stateless_http=True`` and
  ``json_response=True`` (benchmarks/sdk_http_basket.py), its cheapest HTTP mode

The client is a small stdlib HTTP/1.1 client, so its own cost stays low; it shares
the machine with the server. Legacy era (MCP-Protocol-Version: 2025-11-25) for both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCH = Path(os.environ.get("BENCH", ROOT.parent / "shared" / "bench"))
SKUS = ["CUP-01", "CUP-02", "MUG-24", "MUG-12", "BEAN-1K", "BEAN-250", "GRD-01", "KTL-01"]
SKUS += ["FLT-100", "TMP-58", "SCL-01", "JAR-01"]
CLK_TCK = os.sysconf("SC_CLK_TCK")
NO_LIMIT = ["--rate-limit", "0"]  # the demo limits each caller to 600 calls/min over HTTP
SECRET = "http-benchmark-secret-0123456789abcdef"  # one for all servers: ids verify on each
Job = tuple[int, str, dict[str, Any]]  # (replica, tool, arguments)


def servers(port: int) -> dict[str, list[str]]:
    ours = os.environ.get("PY", sys.executable)
    sdk = os.environ.get("SDK_PY", "/tmp/benchvenv/bin/python")
    return {
        "sdk": [sdk, str(HERE / "sdk_http_basket.py"), str(port)],
        "handles": [
            ours,
            "-m",
            "example_basket",
            "--http",
            "--port",
            str(port),
            "--tuned",
            *NO_LIMIT,
        ],
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(command: list[str]) -> subprocess.Popen[bytes]:
    """Start a server from the repository root, so ``-m example_basket`` is this checkout's."""
    env = {**os.environ, "HANDLES_SECRET": SECRET, "PYTHONPATH": str(ROOT), "BENCH": str(BENCH)}
    return subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL, cwd=ROOT)


def wait_listening(port: int, process: subprocess.Popen[bytes], command: list[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"did not start: {shlex.join(command)}") from None
            time.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Client:
    """One keep-alive HTTP/1.1 connection that posts JSON-RPC requests."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.ids = 0

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": self.ids,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        ).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status = await self.reader.readline()
        length, event_stream = 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "content-type":
                event_stream = "event-stream" in value
        if not status.startswith(b"HTTP/1.1 200") or not length:
            raise RuntimeError(f"{tool}: {status!r} (length {length})")
        data = await self.reader.readexactly(length)
        if event_stream:
            data = [x for x in data.split(b"\n") if x.startswith(b"data:")][-1][5:]
        reply = json.loads(data)
        result: dict[str, Any] = reply["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result['content'][0]['text'][:200]}")
        return result

    def close(self) -> None:
        self.writer.close()


async def workload(
    ports: list[int], clients: int, baskets: int, calls: int, seed: int
) -> dict[str, Any]:
    """Run the workload; client i talks to ``ports[i % len(ports)]``.

    Basket b lives on replica ``b % len(ports)``: it is created there and every later call
    on it goes there (handle-affine, as a gateway hashing the basket id would route it).
    """
    replicas = len(ports)
    if clients < replicas:
        raise ValueError(f"{clients} clients cannot cover {replicas} replicas")
    pool = [Client(ports[number % replicas]) for number in range(clients)]
    for client in pool:
        await client.connect()
    rng = random.Random(seed)

    async def run(jobs: list[Job]) -> tuple[list[Any], list[float], float]:
        queues: list[list[tuple[int, Job]]] = [[] for _ in ports]
        for number, job in enumerate(jobs):
            queues[job[0]].append((number, job))
        results: list[Any] = [None] * len(jobs)
        latencies: list[float] = []

        async def worker(queue: list[tuple[int, Job]], client: Client) -> None:
            while queue:
                number, (_, tool, arguments) = queue.pop()
                started = time.perf_counter()
                results[number] = await client.call(tool, arguments)
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(
            *(worker(queues[number % replicas], client) for number, client in enumerate(pool))
        )
        return results, latencies, time.perf_counter() - started

    created, _, _ = await run([(b % replicas, "create_basket", {}) for b in range(baskets)])
    ids = [result["structuredContent"]["basket_id"] for result in created]
    expected: Counter[tuple[int, str]] = Counter()
    jobs: list[Job] = []
    for _ in range(calls):
        basket, sku = rng.randrange(baskets), rng.choice(SKUS)
        expected[basket, sku] += 1
        arguments = {"basket_id": ids[basket], "sku": sku, "quantity": 1}
        jobs.append((basket % replicas, "add_item", arguments))
    _, latencies, seconds = await run(jobs)
    reads = [(b % replicas, "get_basket", {"basket_id": ids[b]}) for b in range(baskets)]
    views, _, _ = await run(reads)
    observed: Counter[tuple[int, str]] = Counter()
    for basket, view in enumerate(views):
        for line in view["structuredContent"]["items"]:
            observed[basket, line["sku"]] += line["quantity"]
    for client in pool:
        client.close()
    latencies.sort()
    return {
        "rate": calls / seconds,
        "p50": latencies[len(latencies) // 2] * 1e3,
        "p99": latencies[int(len(latencies) * 0.99)] * 1e3,
        "verified": observed == expected,
        "calls": baskets * 2 + calls,
    }


def measure(name: str, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    port = free_port()
    command = servers(port)[name]
    process = start(command)
    try:
        wait_listening(port, process, command)
        before = cpu_seconds(process.pid)
        result = asyncio.run(workload([port], args.clients, args.baskets, args.calls, seed))
        result["cpu_us"] = (cpu_seconds(process.pid) - before) / result["calls"] * 1e6
        return result
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--baskets", type=int, default=200)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"sdk": [], "handles": []}
    for rep in range(args.reps):
        for name in runs:
            runs[name].append(measure(name, args, seed=rep))
            print(f"  {name} rep {rep + 1}: {runs[name][-1]['rate']:,.0f}/s", file=sys.stderr)
    median = {
        name: {
            key: statistics.median(r[key] for r in rs) for key in ("rate", "p50", "p99", "cpu_us")
        }
        for name, rs in runs.items()
    }
    sdk = median["sdk"]
    print(
        f"## HTTP, {args.clients} concurrent clients (`python benchmarks/http_load.py "
        f"--clients {args.clients} --baskets {args.baskets} --calls {args.calls} "
        f"--reps {args.reps}`)\n"
    )
    print(
        "| server | add_item/s (x sdk) | p50 ms | p99 ms | server CPU us/call (x sdk) | verified |"
    )
    print("|---|---|---|---|---|---|")
    for name, m in median.items():
        verified = sum(r["verified"] for r in runs[name])
        print(
            f"| {name} | {m['rate']:,.0f} ({m['rate'] / sdk['rate']:.2f}) | {m['p50']:.2f} "
            f"| {m['p99']:.2f} | {m['cpu_us']:,.0f} ({m['cpu_us'] / sdk['cpu_us']:.2f}) "
            f"| {verified}/{len(runs[name])} |"
        )
    print("\nMedians over reps; every basket's counts were checked after each run.")


if __name__ == "__main__":
    main()
