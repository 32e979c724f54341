"""Profile the in-process cost of add_item: ``python benchmarks/profile_add_item.py [N]``.

Drives ``Server.handle`` plus ``Server.encode`` for N ``add_item`` calls in the
in-memory store (no transport), under cProfile, and prints the top functions by own
time and by cumulative time. The calls are the shared benchmark's: 200 baskets, a
random basket and catalog SKU each (seeded), so baskets fill up to the whole
catalog. It shows where the per-call CPU goes; the side-by-side numbers come from
``benchmarks/run.sh``.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import random
import sys

import anyio

from example_basket.app import build_server
from example_basket.catalog import CATALOG
from handles import Principal
from handles.server.dispatch import Connection
from handles.server.jsonrpc import parse
from stores import MemoryStore

SKUS = list(CATALOG)


def _call(id: int, name: str, arguments: dict[str, object]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    ).encode()


async def main(calls: int) -> None:
    server = build_server(MemoryStore(), secret_keys=["profile-only-secret-" + "x" * 32])
    connection = Connection(Principal("bench"))
    baskets = []
    for _ in range(200):
        created = await server.handle(parse(_call(0, "create_basket", {})), connection)
        assert created is not None
        baskets.append(created["result"]["structuredContent"]["basket_id"])
    pick = random.Random(7)
    messages = [
        _call(i, "add_item", {"basket_id": pick.choice(baskets), "sku": pick.choice(SKUS)})
        for i in range(1, calls + 1)
    ]
    profile = cProfile.Profile()
    profile.enable()
    for message in messages:
        response = await server.handle(parse(message), connection)
        assert response is not None
        server.encode(response)
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumtime").print_stats(25)
    print(out.getvalue())


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
