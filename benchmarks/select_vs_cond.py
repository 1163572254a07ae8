"""Predicated control flow: torch.where select against torch.cond, measured.

For each model (the handed cases whose `if` graphmend rewrites, and a case with a costly
branch), fixes it with build/graphmend, then in a fresh process per form
(GRAPHMEND_COND=never: select; always: torch.cond) compiles it with Inductor on CPU and
times each input function: median over --calls calls after warm-up. Prints a table and
writes JSON. A benchmark, not a test: nothing here fails because the machine is slow.

    .venv/bin/python benchmarks/select_vs_cond.py --json out/select_vs_cond.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = [
    "tests/cases/c04_where_if_else.py",
    "tests/cases/c05_where_else_less.py",
    "tests/cases/c06_where_both_return.py",
    "tests/cases/c09_mixed_static_and_data.py",
    "tests/fixtures/predicated-control-flow/costly.py",
]


def arm(path, calls):
    """In this process: time the fixed model at `path`; returns {input function: seconds}."""
    import importlib.util

    import torch

    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location("bench_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_model"] = module
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.Model().eval()
    compiled = torch.compile(model, backend="inductor", dynamic=False)
    out = {}
    for name in ("example_inputs", "other_inputs"):
        if not hasattr(module, name):
            continue
        inputs = getattr(module, name)()
        with torch.no_grad():
            for _ in range(3):
                compiled(*inputs)
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                compiled(*inputs)
                times.append(time.perf_counter() - start)
        out[name] = statistics.median(times)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--arm", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        print(json.dumps(arm(args.arm[0], int(args.arm[1]))))
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="graphmend-cond-") as tmp:
        for case in CASES:
            fixed = Path(tmp) / Path(case).name
            subprocess.run([str(REPO / "build" / "graphmend"), "fix", str(REPO / case), "-o", str(fixed)],
                           check=True, capture_output=True)
            row = {"case": case}
            for form, mode in (("select", "never"), ("cond", "always")):
                env = dict(os.environ, GRAPHMEND_COND=mode, OMP_NUM_THREADS="1")
                proc = subprocess.run([sys.executable, __file__, "--arm", str(fixed), str(args.calls)],
                                      capture_output=True, text=True, env=env, check=True)
                row[form] = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(row)
            for name in row["select"]:
                s, c = row["select"][name], row["cond"][name]
                print(f"{Path(case).stem:32s} {name:15s} select {s * 1e6:9.1f} us   cond {c * 1e6:9.1f} us"
                      f"   select/cond {s / c:6.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
