#!/bin/sh
# DRIVER_PY for the shared run_all.sh: every driver.py run draws from the basket demo's
# catalog (--sku-list), so all servers, ours and the baselines, see the same workload.
# Any other use (its JSON post-processing, summarize.py) runs the interpreter as is.
PY=${BENCH_DRIVER_PY:-/tmp/benchvenv/bin/python}
if [ "$1" = driver.py ]; then
  shift
  exec "$PY" driver.py --sku-list "${BENCH_SKUS:?}" "$@"
fi
exec "$PY" "$@"
