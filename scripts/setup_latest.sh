#!/usr/bin/env bash
# Create or update .venv-latest from requirements-latest.txt: the newest torch and transformers,
# used by `benchmarks/graph_breaks.py --suite reference --env latest`. Idempotent: when the
# venv already matches the file (a sha256 stamp and an import check) it installs nothing.
#
# Torch comes from PyPI's default wheels (with CUDA libraries, ~6 GB installed). When the
# PyTorch CPU index is reachable (or TORCH_INDEX_URL names another), it is added as an extra
# index so pip takes the smaller CPU wheel of the same version.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { printf '[setup-latest] %s\n' "$*"; }

REQ=requirements-latest.txt
VENV=.venv-latest
STAMP=$VENV/.requirements-latest.sha256
PYTHON=${PYTHON:-python3}
req_sum=$(sha256sum "$REQ" | cut -d' ' -f1)
want_torch=$(sed -n 's/^torch==//p' "$REQ")
want_tf=$(sed -n 's/^transformers==//p' "$REQ")

venv_ok() {
  [[ -x $VENV/bin/python && -f $STAMP && $(cat "$STAMP") == "$req_sum" ]] &&
    "$VENV/bin/python" - "$want_torch" "$want_tf" <<'PY' 2>/dev/null
import sys
import torch, transformers
assert torch.__version__.split("+")[0] == sys.argv[1], torch.__version__
assert transformers.__version__ == sys.argv[2], transformers.__version__
PY
}

if venv_ok; then
  log "$VENV up to date (torch $want_torch, transformers $want_tf)"
  exit 0
fi

# Disk: the CUDA wheels need about 6 GB installed plus the download cache.
need_kb=$((8 * 1024 * 1024))
free_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
if ((free_kb < need_kb)); then
  echo "[setup-latest] ERROR: $((free_kb / 1024)) MB free here, about 8 GB needed" >&2
  exit 1
fi

pip_extra=()
index=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
if command -v curl >/dev/null && curl -fsS --max-time 10 -o /dev/null "$index/torch/"; then
  log "using $index for torch (CPU wheels)"
  pip_extra=(--extra-index-url "$index")
else
  log "$index not reachable: default PyPI wheels"
fi

[[ -x $VENV/bin/python ]] || { log "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
log "installing $REQ into $VENV"
"$VENV/bin/python" -m pip install "${pip_extra[@]}" -r "$REQ"
echo "$req_sum" > "$STAMP"
venv_ok || { echo "[setup-latest] ERROR: $VENV check failed after pip install" >&2; exit 1; }
log "done: $VENV (torch $want_torch, transformers $want_tf)"
