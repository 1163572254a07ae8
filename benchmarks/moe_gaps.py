#!/usr/bin/env python3
"""How far the fixed MoE models' outputs are from the original's, over several inputs.

    .venv/bin/python benchmarks/moe_gaps.py [--env pins|latest|both] [--rows dbrx,mixtral,...]
                                            [--inputs 5] [--unsafe-fixes] [--json-dir docs/results]

GM501's static forms run each expert's matrix products on more rows than the loop did; on CPU
the BLAS picks another kernel for another number of rows, which can change the last bits of a
row (docs/rules/GM501.md). The sweep (sweep.py) holds a row that is not bit-equal to the gap
between the original compiled with Inductor and its eager run, on one input. This script
measures both on several inputs, and against a float64 run of the original as the reference:
  - per input k (torch.manual_seed(k) before the sweep's inputs(); input 0 is the sweep's):
    the largest absolute difference from the original's eager float32 run of
      original_inductor  the original compiled with Inductor (the tolerance issue 11 sets),
      fixed_traced       the fixed copy compiled with the counting backend's kind of backend
                         (each FX graph run as traced; what the sweep compares),
      fixed_inductor     the fixed copy compiled with Inductor (what users run);
    and the error of each float32 run against the float64 run (root mean square over every
    floating element of the outputs): eager, original_inductor, fixed_traced, fixed_inductor;
  - per row: the largest of each over the inputs, on how many inputs fixed_traced is no
    further from eager than original_inductor is, and the FX graphs each arm made on input 0
    (where the fixed arm makes as many as the original, no static form was taken: the cost rule
    or a check kept the loop, and the row says nothing about the static form).
Each arm runs in a fresh process (_harness/moe_gaps_arm.py); the fixed arm loads the original
arm's state_dict. Writes <json-dir>/moe-gaps-<env>.json. Exit 0, 1 an arm failed, 2 set-up error.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
RUNS = ("original_inductor", "fixed_traced", "fixed_inductor")
ERRORS = ("eager", "original_inductor", "fixed_traced", "fixed_inductor")


def parse_args(argv):
    from _harness.sweep import MOE

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", choices=("pins", "latest", "both"), default="pins")
    p.add_argument("--rows", default=",".join(MOE), help="sweep rows (default: the MoE rows)")
    p.add_argument("--inputs", type=int, default=5, help="inputs per row (default 5)")
    p.add_argument("--unsafe-fixes", action="store_true", help="fix the copy with --unsafe-fixes")
    p.add_argument("--json-dir", type=Path, default=RESULTS)
    return p.parse_args(argv)


def _floats(leaves):
    return {path: x for path, x in leaves if hasattr(x, "is_floating_point") and x.is_floating_point()}


def max_diff(a, b):
    """Largest absolute difference over the floating leaves both runs hold (inf where a leaf's shape
    differs or only one holds it)."""
    fa, fb = _floats(a), _floats(b)
    if fa.keys() != fb.keys():
        return float("inf")
    worst = 0.0
    for path, x in fa.items():
        y = fb[path]
        if x.shape != y.shape:
            return float("inf")
        if x.numel():
            worst = max(worst, float((x.double() - y.double()).abs().nan_to_num(nan=float("inf")).max()))
    return worst


def rms_error(run, reference):
    """Root mean square of run - reference over every floating element (reference: float64; None
    where the model did not run in float64)."""
    from _harness.model_bench import rms_error as rms

    if reference is None:
        return None
    fr, fx = _floats(run), _floats(reference)
    if fr.keys() != fx.keys():
        return float("inf")
    return rms(fr, fx)


def _max_or_none(values):
    values = list(values)
    return None if any(v is None for v in values) else max(values)


def _g(value):
    return "–" if value is None else f"{value:.3g}"


def measure_env(env, rows, inputs, unsafe_fixes):
    from _harness import model_bench, suite

    python = suite.env_python(env)
    installed = model_bench.installed_package_dir(python, "transformers")
    arm = Path(__file__).with_name("_harness") / "moe_gaps_arm.py"
    started = time.time()
    from _harness import fixer

    binary = Path(fixer.fixer_command()[0])  # what fixes the copy, taken before it does
    made_with = {"sha256": suite._sha256(binary) if binary.is_file() else None, "repo_commit": suite._git_head()}
    with tempfile.TemporaryDirectory(prefix="moe-gaps-") as work:
        work = Path(work)
        copy, fix = model_bench.fix_package(installed, work / "site", unsafe_fixes)
        if fix.returncode not in (0, 1):
            raise RuntimeError(f"graphmend fix failed ({fix.returncode}): {fix.stderr[-2000:]}")
        outs = {}
        for tag, pythonpath in (("original", None), ("fixed", copy.parent)):
            out = work / f"{tag}.pt"
            cmd = [str(python), str(arm), "--arm", tag, "--rows", ",".join(rows), "--inputs", str(inputs),
                   "--state-dir", str(work), "--out", str(out)]
            proc = subprocess.run(cmd, env=model_bench._clean_env(pythonpath), cwd=work, capture_output=True,
                                  text=True)
            if proc.returncode != 0 or not out.exists():
                raise RuntimeError(f"{tag} arm failed ({proc.returncode}): {proc.stderr[-3000:]}")
            import torch

            outs[tag] = torch.load(out)
    result = {"environment": suite.environment(env, python), "inputs": inputs, "unsafe_fixes": unsafe_fixes,
              "fixer": fix.cmd, "graphmend": made_with,
              "seconds": round(time.time() - started, 1), "rows": []}
    orig, fixed = outs["original"], outs["fixed"]
    for row in rows:
        per_input = []
        for k in range(inputs):
            eager, double = orig[(row, k, "eager")], orig[(row, k, "float64")]
            runs = {"eager": eager, "original_inductor": orig[(row, k, "inductor")],
                    "fixed_traced": fixed[(row, k, "traced")], "fixed_inductor": fixed[(row, k, "inductor")]}
            per_input.append({
                "input": k,
                "graphs": {"original": orig.get((row, k, "graphs")), "fixed": fixed.get((row, k, "graphs"))},
                "original_traced_bit_equal_to_eager": max_diff(orig[(row, k, "traced")], eager) == 0.0,
                "diff_from_eager": {name: max_diff(runs[name], eager) for name in RUNS},
                "error_vs_float64": {name: rms_error(runs[name], double) for name in ERRORS},
            })
        summary = {
            "max_diff_from_eager": {n: max(p["diff_from_eager"][n] for p in per_input) for n in RUNS},
            "max_error_vs_float64": {n: _max_or_none(p["error_vs_float64"][n] for p in per_input) for n in ERRORS},
            "inputs_fixed_within_gap": sum(p["diff_from_eager"]["fixed_traced"]
                                           <= p["diff_from_eager"]["original_inductor"] for p in per_input),
            "inputs_fixed_bit_equal": sum(p["diff_from_eager"]["fixed_traced"] == 0.0 for p in per_input),
            "graphs": per_input[0]["graphs"],  # input 0's: the static form taken or not
        }
        result["rows"].append({"row": row, "per_input": per_input, "summary": summary,
                               "float64_error": orig.get((row, "float64_error"))})
    return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    rows = [r for r in args.rows.split(",") if r]
    envs = ("pins", "latest") if args.env == "both" else (args.env,)
    code = 0
    for env in envs:
        try:
            result = measure_env(env, rows, args.inputs, args.unsafe_fixes)
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"error: {env}: {exc}", file=sys.stderr)
            code = 1
            continue
        args.json_dir.mkdir(parents=True, exist_ok=True)
        path = args.json_dir / f"moe-gaps-{env}.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        for r in result["rows"]:
            s = r["summary"]
            d, e = s["max_diff_from_eager"], s["max_error_vs_float64"]
            print(f"{env} {r['row']}: diff from eager, max over {args.inputs} inputs: original inductor "
                  f"{d['original_inductor']:.3g}, fixed traced {d['fixed_traced']:.3g}, fixed inductor "
                  f"{d['fixed_inductor']:.3g}; fixed within the gap on {s['inputs_fixed_within_gap']}/{args.inputs}; "
                  f"rms error vs float64: eager {_g(e['eager'])}, original inductor {_g(e['original_inductor'])}, "
                  f"fixed traced {_g(e['fixed_traced'])}, fixed inductor {_g(e['fixed_inductor'])}")
        print(f"wrote {path}")
    return code


if __name__ == "__main__":
    sys.exit(main())
