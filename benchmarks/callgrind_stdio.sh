#!/usr/bin/env bash
# Instructions per add_item of the whole demo server over stdio (transport included),
# by callgrind: deterministic, whatever else the machine runs. The shared driver runs
# the demo under valgrind twice, with N and 3N add_items; the difference over 2N is the
# per-call count.
#
#   benchmarks/callgrind_stdio.sh [CHECKOUT ...]     # default: this checkout
#   W=32 N=500 benchmarks/callgrind_stdio.sh /tmp/old-tree .
#   STORE=redis://127.0.0.1:6437/0 benchmarks/callgrind_stdio.sh /tmp/old-tree .
#
# STORE: the demo's --store (default: in memory). With a redis:// URL the database is
# flushed before each run (use a Redis of your own); the count is the server's only,
# not Redis's.
#
# A CHECKOUT is a folder holding handles/, stores/ and example_basket/ (for an older
# commit: git archive <commit> handles stores example_basket | tar -x -C DIR).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BENCH=${BENCH:-$(cd "$ROOT/../shared/bench" && pwd)}
PY=${PY:-$ROOT/.venv/bin/python}
DRIVER_PY=${DRIVER_PY:-/tmp/benchvenv/bin/python}
N=${N:-1000}; W=${W:-1}; B=${B:-50}
OUT=$(mktemp -d)
SKUS=$(cd "$ROOT" && "$PY" -c 'from example_basket.catalog import CATALOG; print(",".join(CATALOG))')
export HANDLES_SECRET=${HANDLES_SECRET:-benchmark-only-secret-0123456789abcdef}
export HANDLES_PRINCIPAL=${HANDLES_PRINCIPAL:-bench}
export BASKET_TUNED=1  # as benchmarks/run.sh runs the demo (older commits ignore it)
[ $# -gt 0 ] || set -- "$ROOT"
for tree in "$@"; do
  tree=$(cd "$tree" && pwd)
  for n in "$N" $((3 * N)); do
    server="env PYTHONPATH=$tree valgrind --tool=callgrind --callgrind-out-file=$OUT/cg.$n $PY -m example_basket${STORE:+ --store $STORE}"
    case "${STORE:-}" in redis://*) redis-cli -u "$STORE" flushdb >/dev/null ;; esac
    (cd "$BENCH" && "$DRIVER_PY" driver.py --server "$server" -B "$B" -N "$n" -W "$W" \
      --sku-list "$SKUS" --timeout 120 --exit-timeout 300 --json > "$OUT/run.$n.json")
  done
  small=$(awk '/^(summary|totals):/ {print $2; exit}' "$OUT/cg.$N")
  large=$(awk '/^(summary|totals):/ {print $2; exit}' "$OUT/cg.$((3 * N))")
  echo "$tree W=$W${STORE:+ STORE=$STORE}: $(( (large - small) / (2 * N) )) instructions per add_item"
done
rm -rf "$OUT"
