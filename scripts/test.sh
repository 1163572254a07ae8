#!/usr/bin/env bash
# Set up, build, then run the C++ unit tests (ctest), the Python tests (pytest), and the
# sanitizer job (scripts/fuzz.sh: ASan + UBSan build, unit tests, 60 s of fuzzing).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! bash scripts/setup.sh; then
  echo "test.sh: FAIL (setup/build failed)"
  exit 1
fi

status=0
ctest --test-dir build --output-on-failure --no-tests=error && ctest_result=pass || { ctest_result=FAIL; status=1; }

if [[ -n $(find tests/python -name 'test_*.py' -o -name '*_test.py' 2>/dev/null | head -1) ]]; then
  .venv/bin/python -m pytest -q tests/python && pytest_result=pass || { pytest_result=FAIL; status=1; }
else
  pytest_result="skipped (no test files in tests/python)"
fi

# The sanitizer job: ASan + UBSan build, unit tests under it, 60 s of fuzzing (scripts/fuzz.sh).
# A fixed seed: CI replays the same inputs (as many as 60 s allow); a local run draws its own.
GRAPHMEND_FUZZ_SEED=${GRAPHMEND_FUZZ_SEED:-20261202} bash scripts/fuzz.sh 60 && fuzz_result=pass || { fuzz_result=FAIL; status=1; }

echo "test.sh: ctest $ctest_result, pytest $pytest_result, sanitizers+fuzz $fuzz_result => $( ((status)) && echo FAIL || echo PASS)"
exit $status
