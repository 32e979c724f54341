"""One of the processes of ``test_two_processes``: concurrent appends by compare-and-set.

Usage: ``python -m tests.stores.cas_worker URL NAMESPACE NAME COUNT``. Waits until
every worker has connected, then runs COUNT tasks, each appending ``NAME<i>,`` to
the record ``("o", "g", "k")`` with a get-then-replace loop.
"""

from __future__ import annotations

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

        async def attempt(item: int) -> bool:
            record = await store.get("o", "g", "k")
            assert record is not None
            await anyio.lowlevel.checkpoint()
            value, later = record.value + f"{name}{item},".encode(), time.time() + 600
            written = await store.replace(
                "o", "g", "k", value, version=record.version, expires_at=later
            )
            return written is not None

        retries = anyio.CapacityLimiter(4)  # all try at once; the losers retry four at a time

        async def append(item: int) -> None:
            if not await attempt(item):
                async with retries:
                    while not await attempt(item):
                        pass

        async with anyio.create_task_group() as tg:
            for item in range(count):
                tg.start_soon(append, item)


if __name__ == "__main__":
    url, namespace, name, count = sys.argv[1:]
    anyio.run(main, url, namespace, name, int(count))
