#!/usr/bin/env bash
# The main job on the bundled model: set up and build, show graphmend's diff of
# models/demo_model.py, then run it before and after the fix with real torch (graphmend verify).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo "== graphmend fix --diff models/demo_model.py"
./build/graphmend fix --diff models/demo_model.py || true
echo
echo "== graphmend verify: the model run before and after the fix (torch.compile, counting backend, dynamic=False)"
# Two fresh Python processes (the file as it is, then a fixed copy in its place; the file is
# not written): FX graphs, every graph break Dynamo reports and what graphmend did about it,
# outputs, stdout, warnings and log records compared.
./build/graphmend verify models/demo_model.py --python .venv/bin/python
