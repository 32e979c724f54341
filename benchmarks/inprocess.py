"""The in-process cost of add_item, without a transport: ``python benchmarks/inprocess.py N``.

Drives ``Server.handle`` and encodes each response for N ``add_item`` calls on the
in-memory store: 200 baskets, a random basket and catalog SKU each (seeded), as in the
shared benchmark. Prints CPU microseconds per call. Under callgrind, which counts
instructions whatever else the machine does, the difference of two runs is the
per-call count::

    for n in 1000 3000; do
      valgrind --tool=callgrind --callgrind-out-file=cg.$n python benchmarks/inprocess.py $n
    done   # (Ir of cg.3000 - Ir of cg.1000) / 2000 = instructions per add_item

With PYTHONPATH set to another checkout, it measures that checkout (for a
before/after comparison of one change).
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Awaitable, Callable

import anyio

from example_basket.app import build_server
from example_basket.catalog import CATALOG
from handles import Principal
from handles.server import Connection

try:
    from handles.server.jsonrpc import dumps, parse
except ImportError:  # a checkout from before handles.server became a package
    from handles.jsonrpc import dumps, parse  # type: ignore[no-redef]
from stores import MemoryStore

SKUS = list(CATALOG)


def _call(id: int, name: str, arguments: dict[str, object]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    ).encode()


async def workload(calls: int) -> tuple[Callable[[], Awaitable[None]], int]:
    """The demo with 200 baskets, and a function that makes ``calls`` add_items on them."""
    server = build_server(MemoryStore(), secret_keys=["inprocess-only-secret-" + "x" * 32])
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
    encode = getattr(server, "encode", dumps)

    async def run() -> None:
        for message in messages:
            response = await server.handle(parse(message), connection)
            assert response is not None and "error" not in response, response
            encode(response)

    return run, calls


async def main(calls: int) -> None:
    run, _ = await workload(calls)
    started = time.process_time()
    await run()
    elapsed = time.process_time() - started
    print(f"{elapsed / calls * 1e6:.1f} us per add_item ({calls} calls)")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
