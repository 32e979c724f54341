"""Scale: memory per live basket, and create/update/get/list cost from 10k to 1M handles.

Usage: python benchmarks/scale.py [--sizes 10000,100000,1000000] [--redis-server PATH]

MemoryStore, through HandleManager (tag checks, expiry, compare-and-set: the tools'
path without the protocol), with baskets spread over principals at most 100 each, as
many users would hold them. At each size it times batches of creates (new baskets),
updates (add an item to a random basket), gets and lists (of one principal that
always holds 10 baskets, so the list's own size stays fixed), and reads the process's
resident memory. Then every basket expires (a fake clock jumps past the idle
lifetime) and the store must give the memory back as it is used.

With --redis-server (default: redis-server on PATH, if any) it also starts a private
redis-server and reads MEMORY USAGE of a basket's record and its share of the index.

Prints a markdown report; CPU time per operation is the best of a few batches
(process time, so other processes' load affects it little). Not part of the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from example_basket.app import Basket, basket_kind  # noqa: E402
from handles import HandleManager, Principal  # noqa: E402
from stores import MemoryStore  # noqa: E402
from stores.memory import RECLAIM_PER_CALL  # noqa: E402

SECRET = "scale-benchmark-secret-0123456789abcdef"
PER_PRINCIPAL = 100
SKUS = ["CUP-01", "CUP-02", "MUG-24", "MUG-12", "BEAN-1K", "BEAN-250", "GRD-01", "KTL-01"]
IDLE = 1800.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def add_one(state: Basket) -> None:
    sku = random.choice(SKUS)
    state.items[sku] = state.items.get(sku, 0) + 1


async def per_op(batch: Callable[[], Awaitable[float]], rounds: int = 3) -> float:
    """Best CPU microseconds per operation over ``rounds`` batches."""
    return min([await batch() for _ in range(rounds)])


def timed(count: int, started: float) -> float:
    return (time.process_time() - started) / count * 1e6


class Fleet:
    """Baskets over principals, filled in order; ids kept to pick random ones."""

    def __init__(self, manager: HandleManager, store: MemoryStore) -> None:
        self.manager, self.store = manager, store
        self.kind = manager.kinds[0]
        self.principals: list[Principal] = []
        self.ids: list[str] = []  # basket n belongs to principals[n // PER_PRINCIPAL]
        self.reference = Principal("reference-user")

    async def setup(self) -> None:
        for _ in range(10):  # the listed principal holds 10 baskets throughout
            await self.manager.create(self.reference, self.kind)

    async def fill(self, total: int) -> None:
        while len(self.ids) < total:
            if len(self.ids) % PER_PRINCIPAL == 0:
                self.principals.append(Principal(f"user-{len(self.principals)}"))
            principal = self.principals[-1]
            handle = await self.manager.create(principal, self.kind, Basket(items={"MUG-24": 1}))
            self.ids.append(handle.id)

    def sample(self, count: int) -> list[tuple[Principal, str]]:
        picked = random.sample(range(len(self.ids)), count)
        return [(self.principals[n // PER_PRINCIPAL], self.ids[n]) for n in picked]

    async def creates(self, count: int = 2000) -> float:
        """Create baskets for fresh principals; then drop them (untimed), keeping the size."""
        visitors = [Principal(f"visitor-{number}") for number in range(count)]
        started = time.process_time()
        made = [await self.manager.create(visitor, self.kind) for visitor in visitors]
        cost = timed(count, started)
        for visitor, handle in zip(visitors, made, strict=True):
            await self.store.delete(visitor.digest, self.kind.name, handle.id)
        return cost

    async def updates(self, count: int = 2000) -> float:
        picked = self.sample(count)
        started = time.process_time()
        for principal, handle_id in picked:
            await self.manager.update(principal, self.kind, handle_id, add_one)
        return timed(count, started)

    async def gets(self, count: int = 2000) -> float:
        picked = self.sample(count)
        started = time.process_time()
        for principal, handle_id in picked:
            await self.manager.get(principal, self.kind, handle_id)
        return timed(count, started)

    async def lists(self, count: int = 500) -> float:
        started = time.process_time()
        for _ in range(count):
            await self.manager.list(self.reference, self.kind)
        return timed(count, started)


async def memory_store(sizes: list[int]) -> list[str]:
    clock = Clock()
    store = MemoryStore(clock=clock)
    manager = HandleManager(store, [basket_kind(idle_ttl=IDLE)], secret_keys=SECRET, clock=clock)
    fleet = Fleet(manager, store)
    await fleet.setup()
    gc.collect()
    base = rss_bytes()
    out = [
        "### MemoryStore: cost per operation as live baskets grow",
        "",
        "| live baskets | create us | update us | get us | list (10) us "
        "| RSS MiB | bytes per basket |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        started = time.monotonic()
        await fleet.fill(size)
        filled = time.monotonic() - started
        gc.collect()
        grown = rss_bytes() - base
        create = await per_op(fleet.creates)
        update = await per_op(fleet.updates)
        get = await per_op(fleet.gets)
        listed = await per_op(fleet.lists)
        out.append(
            f"| {size:,} | {create:.1f} | {update:.1f} | {get:.1f} | {listed:.1f} "
            f"| {rss_bytes() / 2**20:,.0f} | {grown / size:,.0f} |"
        )
        print(f"  {size:,} baskets (filled in {filled:.1f} s)", file=sys.stderr)
    live = len(store)
    clock.now += IDLE + 1  # every basket is now past its idle lifetime
    calls, worst, spent = 0, 0.0, 0.0
    while len(store):  # each call (a list here) reclaims a bounded batch
        started = time.process_time()
        await manager.list(fleet.reference, fleet.kind)
        took = time.process_time() - started
        calls, worst, spent = calls + 1, max(worst, took), spent + took
    gc.collect()
    out += [
        "",
        f"Expiry: {live:,} live records, then the clock passes every idle deadline. "
        f"The next {calls:,} calls reclaimed them all, each at most "
        f"{RECLAIM_PER_CALL} records and {worst * 1000:.1f} ms of CPU "
        f"({spent * 1e9 / live:,.0f} ns per record); RSS {rss_bytes() / 2**20:,.0f} MiB "
        "after (CPython keeps freed memory for reuse). Bytes per basket: resident memory "
        "grown over the fill, divided by baskets; it includes the benchmark's own list "
        "of ids (8 bytes each).",
        "",
    ]
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_usage(binary: str) -> list[str]:
    import redis

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="scale-redis-") as directory:
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        process = subprocess.Popen([*command, "--dir", directory], stdout=subprocess.DEVNULL)
        try:
            sync = redis.Redis(port=port, decode_responses=True)
            for _ in range(100):
                try:
                    sync.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            asyncio.run(_fill_redis(port))
            keys = sorted(str(key) for key in sync.keys("*"))
            records = [key for key in keys if ":r:" in key]
            index = next(key for key in keys if ":i:" in key)
            record_bytes = sum(int(sync.memory_usage(key) or 0) for key in records) / len(records)
            index_bytes = int(sync.memory_usage(index) or 0) / len(records)
            value = len(str(sync.hget(records[0], "d") or ""))
        finally:
            process.kill()
            process.wait()
    return [
        "### Redis: memory per live basket (MEMORY USAGE)",
        "",
        "| per basket | bytes |",
        "|---|---|",
        f"| record hash (version, state JSON of {value} bytes, expiry) | {record_bytes:,.0f} |",
        f"| its entry in the owner's index (sorted set, 100 members) | {index_bytes:,.0f} |",
        f"| total | {record_bytes + index_bytes:,.0f} |",
        "",
    ]


async def _fill_redis(port: int) -> None:
    from stores.redis import RedisStore

    async with RedisStore.from_url(f"redis://127.0.0.1:{port}/0") as store:
        manager = HandleManager(store, [basket_kind()], secret_keys=SECRET)
        kind = manager.kinds[0]
        principal = Principal("redis-user")
        for _ in range(100):
            handle = await manager.create(principal, kind)
            for sku in SKUS[:6]:  # a basket as the benchmark leaves it: 6 lines
                await manager.update(principal, kind, handle.id, _adder(sku))


def _adder(sku: str) -> Callable[[Basket], None]:
    def add(state: Basket) -> None:
        state.items[sku] = state.items.get(sku, 0) + 1

    return add


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    args: Any = parser.parse_args()
    random.seed(7)
    sizes = [int(size) for size in args.sizes.split(",")]
    lines = [f"## Scale (`python benchmarks/scale.py --sizes {args.sizes}`)", ""]
    lines += asyncio.run(memory_store(sizes))
    if args.redis_server:
        lines += redis_usage(args.redis_server)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
