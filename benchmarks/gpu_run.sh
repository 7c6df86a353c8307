#!/bin/sh
# The prepared real-GPU run: skinning at 1M, 10M and 50M vertices (with and without readback),
# crowds of 4096 and 16384 copies and the device's copy bandwidth, each result as a fraction
# of the memory-traffic floor (benchmarks/bench_gpu.py). Unattended, under 5 minutes on a
# discrete GPU; exits 2 with the device it found when there is none. JSON:
# benchmarks/results/gpu.json.
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
if [ ! -x "$PYTHON" ]; then
    echo "gpu_run.sh: $PYTHON not found; run 'make venv' first (or set PYTHON)" >&2
    exit 2
fi
exec timeout 290 "$PYTHON" benchmarks/bench_gpu.py "$@"
