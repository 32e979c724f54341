#!/usr/bin/env bash
# Measure mcp-handles against the baselines of the shared basket benchmark, in one run,
# and write benchmarks/RESULTS.md (ratios of servers measured side by side).
#
#   benchmarks/run.sh                      # the full comparison (about 15 minutes)
#   REPS=1 N=2000 benchmarks/run.sh        # a quick look
#   BASE=1b2172e benchmarks/run.sh         # also an older commit, as base / base_redis
#
# The baselines (official SDK, FastMCP, SDK + Redis, a stdlib floor) and the driver live
# in $BENCH (default ../shared/bench); run its setup.sh once. Ours are added to its
# run_all.sh as two more servers, so all of them run interleaved (rep -> window ->
# server) and every ratio compares numbers taken under the same machine load:
#   handles        python -m example_basket                      (stdio, in-memory store)
#   handles_redis  python -m example_basket --store redis://...  (stdio, Redis)
# Knobs are run_all.sh's (B N REPS WINDOWS COLD CONTENTION ONLY REDIS_PORT OUT), plus
# PY (the interpreter with mcp-handles installed) and BENCH.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BENCH=${BENCH:-$(cd "$ROOT/../shared/bench" 2>/dev/null && pwd || true)}
if [ -z "${PY:-}" ]; then  # the project's venv as the README makes it, else python3
  for PY in "$ROOT/.venv/bin/python" "$ROOT/../venv/bin/python" "$(command -v python3)"; do
    [ -x "$PY" ] && break
  done
fi
[ -x "$BENCH/run_all.sh" ] || { echo "no run_all.sh in BENCH=$BENCH" >&2; exit 2; }

export REDIS_PORT=${REDIS_PORT:-6411}   # not 6399: other users of this machine keep that one
export OUT=${OUT:-${TMPDIR:-/tmp}/handles-bench/$(date -u +%Y%m%dT%H%M%SZ)}
export HANDLES_SECRET=${HANDLES_SECRET:-benchmark-only-secret-0123456789abcdef}
export HANDLES_PRINCIPAL=${HANDLES_PRINCIPAL:-bench}
# The driver draws SKUs from our catalog for every server, baselines included (they
# accept any SKU), so all of them see the same workload.
BENCH_SKUS=$(cd "$ROOT" && "$PY" -c 'from example_basket.catalog import CATALOG; print(",".join(CATALOG))')
export BENCH_SKUS
export DRIVER_PY="$HERE/driver.sh"
# Bytecode as an installed wheel has it (pip compiles on install), so that start-up
# measures imports, not compiling our sources.
"$PY" -m compileall -q "$ROOT/handles" "$ROOT/stores" "$ROOT/example_basket"

# BASKET_TUNED: the demo's benchmark tuning (batched logs, gc.freeze); older commits ignore it.
SERVE="env BASKET_TUNED=1 PYTHONPATH=$ROOT $PY -m example_basket"
STORE="--store redis://127.0.0.1:$REDIS_PORT/0"
SERVERS=("handles=$SERVE" "handles_redis=$SERVE $STORE")
if [ -n "${BASE:-}" ]; then  # the same demo at another commit, from a copy of its tree
  mkdir -p "$OUT/base"
  git -C "$ROOT" archive "$BASE" handles stores example_basket | tar -x -C "$OUT/base"
  "$PY" -m compileall -q "$OUT/base"
  BASE_SERVE="env BASKET_TUNED=1 PYTHONPATH=$OUT/base $PY -m example_basket"
  SERVERS+=("base=$BASE_SERVE" "base_redis=$BASE_SERVE $STORE")
fi
"$BENCH/run_all.sh" "${SERVERS[@]}"

COMMAND="benchmarks/run.sh"
for knob in B N REPS WINDOWS COLD BASE; do
  [ -n "${!knob:-}" ] && COMMAND="$knob=${!knob} $COMMAND"
done
# The code measured: COMMIT if given (e.g. for a copy made with git archive), else HEAD.
COMMIT=${COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}
COMMAND="$COMMAND\` on commit \`$COMMIT"
"$PY" "$HERE/report.py" "$OUT" "$COMMAND" > "$OUT/RESULTS.md"
cp "$OUT/RESULTS.md" "$HERE/RESULTS.md"
echo "wrote $HERE/RESULTS.md (run folder: $OUT)" >&2
