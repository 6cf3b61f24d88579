#!/usr/bin/env bash
# Set up (a .venv with ShaleDB installed) and start the server on the embedded default:
# MySQL protocol on 127.0.0.1:9030, HTTP on 127.0.0.1:8030, data in ./shaledb-data, 3 backends.
# Extra arguments go to `shaledb serve` (e.g. --port 0 --data-dir /tmp/x).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e . >/dev/null
# Compile the load path's numba kernels into their cache once per install / code change, so the
# first Stream Load does not compile them inside the server (server/warm_up.py).
stamp=.venv/.shaledb-warm-up
if [ ! -f "$stamp" ] || [ -n "$(find storage executor -name '*.py' -newer "$stamp" -print -quit)" ]; then
  .venv/bin/shaledb warm-up && touch "$stamp"
fi
exec .venv/bin/shaledb serve "$@"
