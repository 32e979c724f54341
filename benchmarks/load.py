"""Load: many concurrent clients over HTTP against replicas of the demo on one Redis.

Usage (from the repository root, with redis-server on PATH)::

    python benchmarks/load.py                          # 64 clients, 30 s, 2 replicas
    python benchmarks/load.py --clients 16 --duration 3 --json

It starts a redis-server on a free port (temporary directory, no persistence),
then ``--replicas`` processes of ``python -m example_basket --http`` on it, with
one ``HANDLES_SECRET`` and one bearer token per client (each client is its own
principal). Each client opens a basket through one replica and then, until the
time is up, calls ``add_item`` on it through each replica in turn, with a
``get_basket`` every tenth call; every 400 adds it starts a new basket. At the
end every basket is read back and compared with the adds that succeeded: any
difference is a lost (or invented) update.

Prints calls, errors, lost updates, throughput and client-side latency
percentiles (p50, p99, max); ``--json`` prints them as one JSON object. The
replicas log at WARNING (the per-call INFO line costs time); ``--rate-limit``
passes through (default 0: off, since every client here is a heavy user).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ADDS_PER_BASKET = 400
SKUS = ["CUP-01", "CUP-02", "MUG-24", "MUG-12", "BEAN-1K", "BEAN-250"]
SKUS += ["GRD-01", "KTL-01", "FLT-100", "TMP-58", "SCL-01", "JAR-01"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise SystemExit(f"{what} exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on {port}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_scripts(port: int) -> int:
    """Scripts Redis has run so far (``EVALSHA`` and ``EVAL``): one round trip each."""
    info = subprocess.run(
        ["redis-cli", "-p", str(port), "info", "commandstats"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    calls = 0
    for line in info.splitlines():
        if line.startswith(("cmdstat_evalsha:", "cmdstat_eval:")):
            calls += int(line.split("calls=", 1)[1].split(",", 1)[0])
    return calls


@dataclass
class Started:
    """The replicas' ports, Redis's port, and the process ids of Redis and the replicas."""

    ports: list[int]
    redis_port: int
    redis: int
    replicas: list[int]


@contextlib.contextmanager
def processes(args: argparse.Namespace, tokens: dict[str, str]) -> Iterator[Started]:
    """Redis and the replicas; stops everything on exit."""
    started: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="load-") as tmp:
        try:
            redis_port = free_port()
            redis_log = Path(tmp, "redis.log")
            command = ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1"]
            command += [
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                tmp,
                "--logfile",
                str(redis_log),
            ]
            redis = subprocess.Popen(command, stdin=subprocess.DEVNULL)
            started.append(redis)
            wait_listening(redis_port, redis, "redis-server", redis_log)
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HANDLES_SECRET": secrets.token_urlsafe(32),
                "BASKET_TOKENS": ",".join(f"{t}:{s}" for t, s in tokens.items()),
                "BASKET_LOG_LEVEL": "WARNING",
            }
            ports = []
            for number in range(args.replicas):
                port = free_port()
                command = [sys.executable, "-m", "example_basket", "--http", "--port", str(port)]
                command += ["--store", f"redis://127.0.0.1:{redis_port}"]
                command += ["--rate-limit", str(args.rate_limit)]
                log = Path(tmp, f"replica-{number}.log")
                with log.open("wb") as out:
                    replica = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
                started.append(replica)
                wait_listening(port, replica, f"replica {number}", log)
                ports.append(port)
            yield Started(ports, redis_port, redis.pid, [p.pid for p in started[1:]])
        finally:
            for process in reversed(started):
                process.terminate()
            for process in started:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()


class Connection:
    """One keep-alive HTTP/1.1 connection to a replica's ``/mcp``, written by hand.

    A general-purpose client (httpx) spends a few milliseconds per request on this
    machine, which would make the load generator the thing measured.
    """

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            "Accept: application/json\r\nContent-Length: "
        ).encode()
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, body: bytes) -> bytes:
        """The reply body of a 200; raises ``OSError`` or ``ValueError`` otherwise."""
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        try:
            writer.write(self.head + b"%d\r\n\r\n" % len(body) + body)
            status = await reader.readline()
            headers = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            data = await reader.readexactly(int(headers[b"content-length"]))
        except (OSError, KeyError, asyncio.IncompleteReadError) as exc:
            self.close()
            raise OSError(f"connection to {self.port} failed") from exc
        if headers.get(b"connection") == b"close":
            self.close()
        if not status.startswith(b"HTTP/1.1 200 "):
            raise ValueError(status.decode(errors="replace").strip())
        return data

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


@dataclass
class Client:
    """One principal: its connections, its baskets and the adds that succeeded on each."""

    connections: list[Connection]
    latencies: list[float]
    adds: dict[str, Counter[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    calls: int = 0

    async def call(self, replica: int, tool: str, **arguments: Any) -> dict[str, Any] | None:
        self.calls += 1
        params = {"name": tool, "arguments": arguments}
        message = {"jsonrpc": "2.0", "id": self.calls, "method": "tools/call", "params": params}
        started = time.perf_counter()
        try:
            reply = await self.connections[replica % len(self.connections)].post(
                json.dumps(message).encode()
            )
            result: dict[str, Any] = json.loads(reply)["result"]
        except (OSError, KeyError, ValueError) as exc:
            self.errors.append(f"{tool}: {type(exc).__name__}: {str(exc)[:80]}")
            return None
        self.latencies.append(time.perf_counter() - started)
        if result.get("isError"):
            self.errors.append(f"{tool}: {result['content'][0]['text'][:100]}")
            return None
        return result

    async def run(self, deadline: float) -> None:
        basket, number = None, 0
        while time.monotonic() < deadline:
            if basket is None or sum(self.adds[basket].values()) >= ADDS_PER_BASKET:
                created = await self.call(number, "create_basket")
                if created is None:
                    continue
                basket = created["structuredContent"]["basket_id"]
                self.adds[basket] = Counter()
            elif number % 10 == 9:
                await self.call(number, "get_basket", basket_id=basket)
            else:
                sku = SKUS[number % len(SKUS)]
                if await self.call(number, "add_item", basket_id=basket, sku=sku):
                    self.adds[basket][sku] += 1
            number += 1

    async def lost_updates(self) -> int:
        """Adds whose effect is missing from the basket (or present without an add)."""
        lost = 0
        for basket, adds in self.adds.items():
            result = await self.call(-1, "get_basket", basket_id=basket)
            if result is None:
                lost += sum(adds.values())
                continue
            items = {i["sku"]: i["quantity"] for i in result["structuredContent"]["items"]}
            lost += sum(abs(items.get(sku, 0) - adds[sku]) for sku in set(items) | set(adds))
        return lost


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


async def drive(args: argparse.Namespace, run: Started, tokens: list[str]) -> dict[str, Any]:
    latencies: list[float] = []
    clients = []
    for number, token in enumerate(tokens):
        mine = run.ports[number % len(run.ports) :] + run.ports[: number % len(run.ports)]
        clients.append(Client([Connection(port, token) for port in mine], latencies))
    load = os.getloadavg()[0]
    pids = {"redis": run.redis, **{f"replica-{n}": pid for n, pid in enumerate(run.replicas)}}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    own, commands = time.process_time(), redis_scripts(run.redis_port)
    started = time.monotonic()
    await asyncio.gather(*(client.run(started + args.duration) for client in clients))
    elapsed = time.monotonic() - started
    cpu = {name: round(cpu_seconds(pid) - before[name], 2) for name, pid in pids.items()}
    cpu["load generator"] = round(time.process_time() - own, 2)
    commands = redis_scripts(run.redis_port) - commands
    measured = list(latencies)
    lost = sum(await asyncio.gather(*(client.lost_updates() for client in clients)))
    for client in clients:
        for connection in client.connections:
            connection.close()
    errors = [error for client in clients for error in client.errors]
    return {
        "clients": args.clients,
        "replicas": args.replicas,
        "duration_s": round(elapsed, 1),
        "calls": len(measured),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "lost_updates": lost,
        "baskets": sum(len(client.adds) for client in clients),
        "throughput_per_s": round(len(measured) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(measured), 2) if measured else None,
        "p99_ms": round(1000 * percentile(measured, 0.99), 2),
        "max_ms": round(1000 * max(measured, default=0.0), 2),
        "rate_limit": args.rate_limit,
        "cpu_s": cpu,
        "replica_cpu_ms_per_call": round(
            1000
            * sum(v for k, v in cpu.items() if k.startswith("replica"))
            / max(1, len(measured)),
            3,
        ),
        "redis_round_trips_per_call": round(commands / max(1, len(measured)), 3),
        "cores": os.cpu_count(),
        "load_average_before": round(load, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--rate-limit", type=int, default=0, help="per client per minute; 0: off")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    tokens = {f"load-{n}-{secrets.token_hex(8)}": f"client-{n}" for n in range(args.clients)}
    with processes(args, tokens) as run:
        report = asyncio.run(drive(args, run, list(tokens)))
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:>17}: {value}")
    sys.exit(1 if report["errors"] or report["lost_updates"] else 0)


if __name__ == "__main__":
    main()
