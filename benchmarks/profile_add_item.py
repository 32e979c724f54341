"""Profile the in-process cost of add_item: ``python benchmarks/profile_add_item.py [N]``.

Drives ``Server.handle`` plus ``Server.encode`` for N ``add_item`` calls on one basket
in the in-memory store (no transport), under cProfile, and prints the top functions
by own time. It shows where the per-call CPU goes; the side-by-side numbers come from
``benchmarks/run.sh``.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys

import anyio

from example_basket.app import build_server
from handles import Principal
from handles.jsonrpc import parse
from handles.server import Connection
from stores import MemoryStore


def _call(id: int, name: str, arguments: dict[str, object]) -> bytes:
    params = {"name": name, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    ).encode()


async def main(calls: int) -> None:
    server = build_server(MemoryStore(), secret_keys=["profile-only-secret-" + "x" * 32])
    connection = Connection(Principal("bench"))
    created = await server.handle(parse(_call(0, "create_basket", {})), connection)
    assert created is not None
    basket_id = created["result"]["structuredContent"]["basket_id"]
    item = {"basket_id": basket_id, "sku": "MUG-24", "quantity": 1}
    messages = [_call(i, "add_item", item) for i in range(1, calls + 1)]
    profile = cProfile.Profile()
    profile.enable()
    for message in messages:
        response = await server.handle(parse(message), connection)
        assert response is not None
        server.encode(response)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(20)
    print(out.getvalue())


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
