"""Profile the in-process cost of add_item: ``python -m benchmarks.profile_add_item [N]``.

Drives ``Server.handle`` plus ``Server.encode`` for N ``add_item`` calls in the
in-memory store (no transport), under cProfile, and prints the top functions by own
time and by cumulative time. The calls are the shared benchmark's: 200 baskets, a
random basket and catalog SKU each (seeded), so baskets fill up to the whole
catalog. It shows where the per-call CPU goes; the side-by-side numbers come from
``benchmarks/run.sh``. The workload is ``benchmarks.inprocess``'s.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys

import anyio

from benchmarks.inprocess import workload


async def main(calls: int) -> None:
    run, _ = await workload(calls)
    profile = cProfile.Profile()
    profile.enable()
    await run()
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumtime").print_stats(25)
    print(out.getvalue())


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
