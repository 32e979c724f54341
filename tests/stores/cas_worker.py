"""One of the processes of ``test_two_processes``: concurrent appends by compare-and-set.

Usage: ``python -m tests.stores.cas_worker URL NAMESPACE NAME COUNT``. Waits until
every worker has connected, then runs COUNT tasks, each appending ``NAME<i>,`` to
the record ``("o", "g", "k")`` with a get-then-replace loop.
"""

from __future__ import annotations

import random
import sys
import time

import anyio
import anyio.lowlevel

from stores.redis import RedisStore

WORKERS = 2


async def main(url: str, namespace: str, name: str, count: int) -> None:
    async with RedisStore.from_url(url, namespace=namespace) as store:
        await store.client.incr(f"{namespace}:ready")
        while int(await store.client.get(f"{namespace}:ready") or 0) < WORKERS:  # noqa: ASYNC110
            await anyio.sleep(0.01)  # a barrier across processes: no anyio.Event there

        pending = count
        solo = await _time_one_update(store)

        async def append(item: int) -> None:
            nonlocal pending
            while True:
                record = await store.get("o", "g", "k")
                assert record is not None
                await anyio.lowlevel.checkpoint()
                value = record.value + f"{name}{item},".encode()
                later = time.time() + 600
                if await store.replace(
                    "o", "g", "k", value, version=record.version, expires_at=later
                ):
                    pending -= 1
                    return
                # Back off for a random share of the time all pending writers need.
                await anyio.sleep(random.uniform(0, 2 * WORKERS * pending * solo))

        async with anyio.create_task_group() as tg:
            for item in range(count):
                tg.start_soon(append, item)


async def _time_one_update(store: RedisStore) -> float:
    """How long one uncontended get-and-replace takes, in seconds (scripts loaded)."""
    for _ in range(2):
        started = time.perf_counter()
        await store.get("o", "g", "probe")
        await anyio.lowlevel.checkpoint()
        await store.replace("o", "g", "probe", b"", version=1, expires_at=time.time() + 600)
    return time.perf_counter() - started


if __name__ == "__main__":
    url, namespace, name, count = sys.argv[1:]
    anyio.run(main, url, namespace, name, int(count))
