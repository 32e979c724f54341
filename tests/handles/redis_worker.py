"""One "replica" for the two-process Redis test: N concurrent updates of one handle.

Run as ``python -m tests.handles.redis_worker URL NAMESPACE HANDLE_ID N`` from the
repository root; it prints how many of its updates had to retry a compare-and-set.
"""

from __future__ import annotations

import sys

import anyio

from handles.manager import HandleManager
from stores.redis import RedisStore

from .support import ALICE, BASKET, KEY, KINDS, Basket


def bump(basket: Basket) -> None:
    basket.count += 1


async def main(url: str, namespace: str, handle_id: str, n: int) -> None:
    async with RedisStore.from_url(url, namespace=namespace) as store:
        manager = HandleManager(store, KINDS, secret_keys=KEY)
        async with anyio.create_task_group() as tasks:
            for _ in range(n):
                tasks.start_soon(manager.update, ALICE, BASKET, handle_id, bump)


if __name__ == "__main__":
    url, namespace, handle_id, n = sys.argv[1:5]
    anyio.run(main, url, namespace, handle_id, int(n))
