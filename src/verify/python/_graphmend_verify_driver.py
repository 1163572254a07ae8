"""What graphmend verify's drivers share (_graphmend_verify_checkout, _graphmend_verify_file):
compile the model and call it, and the command line's exit codes. Stdlib only; torch is passed in.

GRAPHMEND_VERIFY_DRIVER_COUNT=PATH (tests only): compile with a counting backend instead of the
default one and write {"graphs": total, "per_call": [new graphs of each call]} to PATH.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

COUNT_ENV = "GRAPHMEND_VERIFY_DRIVER_COUNT"


class _Counter:
    """A torch.compile backend that counts the FX graphs and runs each as traced."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


def compile_and_call(torch, model, calls, call):
    """torch.compile(model, dynamic=False), then `calls` calls `call(compiled)` under no_grad."""
    count_path = os.environ.get(COUNT_ENV)
    counter = _Counter() if count_path else None
    compiled = (torch.compile(model, backend=counter, dynamic=False) if counter
                else torch.compile(model, dynamic=False))
    per_call = []
    with torch.no_grad():
        for _ in range(calls):
            before = counter.graphs if counter else 0
            call(compiled)
            if counter:
                per_call.append(counter.graphs - before)
    if counter:
        with open(count_path, "w", encoding="utf-8") as f:
            json.dump({"graphs": counter.graphs, "per_call": per_call}, f)


def run_main(parse_args, run, argv=None):
    """Exit code of a driver: 0 when run(args) returns (or exits 0), 1 with the traceback on
    stderr when it raises."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args)
    except BaseException as exc:  # noqa: BLE001  (SystemExit from model code included)
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return 0
        traceback.print_exc(file=sys.stderr)
        return 1
    return 0
