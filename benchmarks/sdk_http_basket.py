"""The shared benchmark's official-SDK basket server, served over Streamable HTTP.

Usage: python sdk_http_basket.py PORT   (with the SDK's interpreter, e.g. /tmp/benchvenv)

It loads ``$BENCH/servers/sdk_basket.py`` unchanged and runs its ``MCPServer`` with
``stateless_http=True`` and ``json_response=True``: the SDK's cheapest HTTP mode,
and the one closest to mcp-handles' (stateless, JSON replies).
"""

import os
import runpy
import sys

bench = os.environ.get(
    "BENCH", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench")
)
module = runpy.run_path(os.path.join(bench, "servers", "sdk_basket.py"), run_name="sdk_basket")
module["mcp"].run(
    transport="streamable-http",
    host="127.0.0.1",
    port=int(sys.argv[1]),
    stateless_http=True,
    json_response=True,
)
