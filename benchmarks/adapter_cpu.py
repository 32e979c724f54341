"""The handle layer's CPU per add_item inside each framework, without the transport.

    python benchmarks/adapter_cpu.py [-N 20000]

Registers ``adapter_basket``'s tools with each adapter and calls the function the
framework registered (what FastMCP's or the SDK's tool runner awaits after argument
validation) ``N`` times on one basket: the id check, the caller from the framework's
access-token lookup, the atomic update on MemoryStore and the handler. Also times
the baseline's dict update (``$BENCH/servers/*_basket.py``'s ``add_item``) the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import runpy
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = Path(os.environ.get("BENCH", HERE.parents[1] / "shared" / "bench"))
sys.path.insert(0, str(HERE))

import adapter_basket  # noqa: E402

from handles import HandleManager  # noqa: E402
from stores import MemoryStore  # noqa: E402

KEY = "adapter-cpu-secret-" + "x" * 32

Tool = Callable[..., Awaitable[Any]]


async def per_call(fn: Tool, basket_id: str, n: int) -> float:
    for i in range(200):  # warm up
        await fn(basket_id=basket_id, sku=f"w{i % 20}", quantity=1)
    start = time.process_time()
    for i in range(n):
        await fn(basket_id=basket_id, sku=f"s{i % 20}", quantity=1)
    return (time.process_time() - start) / n * 1e6


async def fastmcp_tools() -> tuple[Tool, Tool]:
    from fastmcp import FastMCP

    from handles.integrations.fastmcp import HandleTools

    server = FastMCP("cpu")
    manager = HandleManager(MemoryStore(), [adapter_basket.BASKET], secret_keys=[KEY])
    adapter_basket.register(HandleTools(server, manager))
    create, add = await server.get_tool("create_basket"), await server.get_tool("add_item")
    assert create is not None and add is not None
    return create.fn, add.fn  # type: ignore[attr-defined]


async def sdk_tools() -> tuple[Tool, Tool]:
    from mcp.server.mcpserver import MCPServer

    from handles.integrations.mcp_sdk import HandleTools

    server = MCPServer("cpu")
    manager = HandleManager(MemoryStore(), [adapter_basket.BASKET], secret_keys=[KEY])
    adapter_basket.register(HandleTools(server, manager))
    tools = server._tool_manager
    return tools.get_tool("create_basket").fn, tools.get_tool("add_item").fn  # type: ignore[union-attr]


async def baseline(name: str) -> Tool:
    module = runpy.run_path(
        str(BENCH / "servers" / f"{name}_basket.py"), run_name=f"{name}_baseline"
    )
    create, add = module["create_basket"], module["add_item"]
    if not callable(create):  # FastMCP 4 leaves the function; keep both spellings
        create, add = create.fn, add.fn
    global _baseline_id
    _baseline_id = (await create())["basket_id"]
    return add  # type: ignore[no-any-return]


_baseline_id = ""


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-N", type=int, default=20000)
    n = parser.parse_args().N
    print(f"N={n}; CPU per add_item call (process_time), without transport or validation")
    for name, build in (("fastmcp", fastmcp_tools), ("sdk", sdk_tools)):
        create, add = await build()
        basket_id = (await create()).basket_id
        adapter = await per_call(add, basket_id, n)
        dict_add = await baseline(name)
        base = await per_call(dict_add, _baseline_id, n)
        print(
            f"{name}: adapter tool {adapter:.1f} µs, baseline dict tool {base:.1f} µs, "
            f"handle layer {adapter - base:.1f} µs"
        )


if __name__ == "__main__":
    asyncio.run(main())
