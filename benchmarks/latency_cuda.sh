#!/usr/bin/env bash
# Model latency on a CUDA GPU: benchmarks/latency.py --device cuda, one command.
#
#   bash benchmarks/latency_cuda.sh                     # every row, 5 repetitions, 50 calls
#   bash benchmarks/latency_cuda.sh --rows changed      # extra arguments go to latency.py
#
# Run from anywhere on a machine with an NVIDIA GPU, after `bash scripts/setup.sh` (the .venv
# with torch 2.12.1 + transformers 4.52.4, and build/graphmend). Same measurement as on the CPU
# (fresh process and fresh compile caches per arm, Inductor, dynamic=False, float32, eval,
# no_grad, the same weights in both arms), with the model and inputs on cuda:0 and every timed
# call bracketed by torch.cuda.synchronize(). Inductor compiles Triton kernels there
# (TORCHINDUCTOR_COMPILE_THREADS=1 as on the CPU unless --compile-threads says otherwise).
#
# Writes $OUT/latency-cuda.json when OUT is set, else docs/results/latency-cuda.json, and the
# printed table to latency-cuda.log beside it. Env PYTHON overrides the interpreter
# (default .venv/bin/python), GRAPHMEND_BIN the binary (default build/graphmend).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
DEST=${OUT:-docs/results}

if [ ! -x "$PY" ]; then
    echo "error: $PY not found: run bash scripts/setup.sh first (or set PYTHON)" >&2
    exit 2
fi
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "error: torch.cuda.is_available() is False with $PY: this script needs a CUDA GPU" >&2
    exit 2
fi
mkdir -p "$DEST"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

PYTHONUNBUFFERED=1 "$PY" benchmarks/latency.py --device cuda --json "$DEST/latency-cuda.json" "$@" \
    2>&1 | tee "$DEST/latency-cuda.log"
