#!/usr/bin/env bash
# Regenerates src/knowledge/module_table.txt, the shipped table of nn.Module classes of
# transformers, from the transformers installed in .venv (pinned in requirements-verify.txt),
# with graphmend's own analysis (tools/module_table.cpp). Run from the repository root after
# building; review the diff and rebuild.
set -euo pipefail
cmake --build build --target graphmend_module_table >/dev/null
package="$(.venv/bin/python -c 'import os, transformers; print(os.path.dirname(os.path.realpath(transformers.__file__)))')"
version="$(.venv/bin/python -c 'import transformers; print(transformers.__version__)')"
{
  echo "# transformers ${version}: regenerate with scripts/module_table.sh"
  build/graphmend_module_table "${package}"
} > src/knowledge/module_table.txt
echo "src/knowledge/module_table.txt: $(grep -vc '^#' src/knowledge/module_table.txt) modules"
