#!/usr/bin/env bash
# The sanitizer job: build graphmend with ASan + UBSan (no recovery) into build-asan/, run the
# C++ unit tests there, then fuzz the pipeline (parse -> analyse -> fix -> re-parse) for
# SECONDS (default 60), or for N mutated inputs (--runs=N), from the seed corpus:
# tests/fuzz/seeds, the handed cases and the rules' golden inputs. CI runs a fixed seed and
# --runs=6000 (scripts/test.sh): the same inputs on every machine, however fast; CONTRIBUTING.md
# gives the 30-minute run.
#   bash scripts/fuzz.sh [SECONDS | --runs=N]
# Needs scripts/setup.sh first (Debian packages and .deps/). Exit 1 on any failure; the input
# that broke the fuzzer is left in build-asan/graphmend-fuzz-input.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
budget=${1:-60}
jobs=$(nproc)
# -O1 -g1 (the level ASan's documentation suggests, and line tables for its reports):
# the sanitizer build takes about half the time of -O2 -g, and CI runs it from scratch.
flags="-O1 -g1 -DNDEBUG"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHMEND_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" >/dev/null
cmake --build build-asan -j"$jobs" --target graphmend graphmend_tests graphmend_fuzz
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
./build-asan/graphmend_tests --gtest_brief=1
cd build-asan
./graphmend_fuzz "$budget" ../tests/fuzz/seeds ../tests/cases ../tests/fixtures ../models
