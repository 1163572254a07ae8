#!/usr/bin/env bash
# The main job on the bundled model: set up and build, show graphmend's diff of
# models/demo_model.py, then measure FX graphs before and after with real torch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo "== graphmend fix --diff models/demo_model.py"
./build/graphmend fix --diff models/demo_model.py || true
echo
echo "== FX graphs before and after (torch.compile, counting backend, dynamic=False)"
mkdir -p out
.venv/bin/python benchmarks/graph_breaks.py --case models/demo_model.py --json out/demo_model.json
