#!/usr/bin/env bash
# Set up, build, then run the C++ unit tests (ctest) and the Python tests (pytest).
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

echo "test.sh: ctest $ctest_result, pytest $pytest_result => $( ((status)) && echo FAIL || echo PASS)"
exit $status
