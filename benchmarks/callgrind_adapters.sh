#!/usr/bin/env bash
# Instructions per add_item of the adapter baskets and their baselines (the shared FastMCP
# and SDK dict baskets), whole server over stdio, by callgrind: the server runs under valgrind
# with N and 3N add_items (shared driver, W=1); the difference over 2N is the per-call count.
# Deterministic, so the adapter/baseline ratio holds on a machine too busy for timings.
#
#   N=300 benchmarks/callgrind_adapters.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BENCH=${BENCH:-$(cd "$ROOT/../shared/bench" && pwd)}
PY=${PY:-$ROOT/.venv/bin/python}
N=${N:-300}; B=${B:-30}; W=${W:-1}
OUT=$(mktemp -d)
export FASTMCP_CHECK_FOR_UPDATES=off
export HANDLES_SECRET=${HANDLES_SECRET:-bench-only-secret-0123456789abcdefghij}
declare -A SERVERS=(
  [fastmcp-baseline]="$BENCH/servers/fastmcp_basket.py"
  [fastmcp-adapter]="$HERE/adapter_basket.py fastmcp"
  [sdk-baseline]="$BENCH/servers/sdk_basket.py"
  [sdk-adapter]="$HERE/adapter_basket.py sdk"
)
for label in fastmcp-baseline fastmcp-adapter sdk-baseline sdk-adapter; do
  for n in "$N" $((3 * N)); do
    server="valgrind --tool=callgrind --callgrind-out-file=$OUT/$label.$n $PY ${SERVERS[$label]}"
    (cd "$BENCH" && "$PY" driver.py --server "$server" -B "$B" -N "$n" -W "$W" \
      --timeout 300 --exit-timeout 300 --json > "$OUT/$label.$n.json")
  done
  small=$(awk '/^(summary|totals):/ {print $2; exit}' "$OUT/$label.$N")
  large=$(awk '/^(summary|totals):/ {print $2; exit}' "$OUT/$label.$((3 * N))")
  echo "$label W=$W: $(( (large - small) / (2 * N) )) instructions per add_item"
done
rm -rf "$OUT"
