#!/usr/bin/env python3
"""Model latency, original against fixed: torch.compile with Inductor, per repetition and row.

    .venv/bin/python benchmarks/latency.py --json docs/results/latency-cpu.json
    .venv/bin/python benchmarks/latency.py --rows t5,bart --reps 5 --calls 50 --json OUT.json
    .venv/bin/python benchmarks/latency.py --rows changed ...      # rows whose break count the fix changes
    .venv/bin/python benchmarks/latency.py --rows phi3 --unsafe-fixes ...  # fixed with --unsafe-fixes
    .venv/bin/python benchmarks/latency.py --resummarise OUT.json  # recompute summaries, run nothing
    bash benchmarks/latency_cuda.sh                                # the same on a CUDA GPU

Rows are the models of benchmarks/_harness/models.py (the graph-break harness's small
configs, float32). Once per run, the installed transformers package is copied and the copy
is fixed with `graphmend fix` (as graph_breaks.py does; `graphmend fix --unsafe-fixes` with
--unsafe-fixes); every fixed arm imports it through PYTHONPATH. Per row and repetition, each arm (original, fixed) runs in its own fresh process
(benchmarks/_harness/latency_arm.py) with fresh compile caches: TORCHINDUCTOR_CACHE_DIR (and
TRITON_CACHE_DIR) a new empty folder, TORCHINDUCTOR_FX_GRAPH_CACHE=0,
TORCHINDUCTOR_AUTOGRAD_CACHE=0. The model runs in eval mode under torch.no_grad(), compiled
with torch.compile(model, backend="inductor", dynamic=False). The first original arm saves the
state_dict and every other arm loads it strictly, so all arms hold the same weights. The
order of the two arms alternates between repetitions: original first in repetitions
0, 2, 4, ..., fixed first in 1, 3, ...

Figures per arm (seconds; see latency_arm.py):
  compile_s      Dynamo's compile time inside the first call (calculate_time_spent():
                 entire_frame_compile + gc, summed over every frame compiled);
  first_call_s   wall time of the first call (compile included);
  cold_start_s   first_call_s - compile_s: the first call with compile time excluded;
  second_call_s  wall time of the second call, the first one after compilation;
  steady_s       median of --calls calls timed one by one, after call 2 and --warmup calls.
Ratios are original / fixed per repetition (> 1: the fixed model is faster), summarised over
the repetitions by median, min, max and quartiles. Outputs of each repetition's fixed arm
(first and last call) are compared with its original arm's: bit-equal, and within
--rtol/--atol (torch.allclose), with the largest absolute and relative difference.

JSON (--json): top level: benchmark ("latency"), command, started, finished, wall_s, device,
torch, transformers, python, cuda, cuda_available, host {platform, cpu, cpu_count}, backend,
dynamic, dtype, mode, unsafe_fixes, reps, calls, warmup, threads, compile_threads, rtol, atol, caches,
arm_order, definitions {figure: meaning}, graphmend {returncode, seconds, summary_tail},
rows_requested, rows_left_out (rows of MODELS not measured), rows_not_started (cut by
--max-minutes), summary {metric: {geomean_of_median_ratios, rows}}, rows [...]. Per row:
model, description, ok, errors [str], reps_ok, reps_ok_original, reps_ok_fixed,
graphs_original, graphs_fixed, dynamo_breaks_original, dynamo_breaks_fixed (Inductor run),
outputs_bit_equal, outputs_within_tolerance, outputs_max_abs_diff, outputs_max_rel_diff,
ratios {metric: spread}, original {metric: spread}, fixed {metric: spread} (a spread is
{median, min, max, q1, q3, n, values}; metric one of compile_s, first_call_s,
cold_start_s, second_call_s, steady_s), and reps [{rep, order, original, fixed, outputs,
original_bit_equal_to_first_rep}], each arm {first_call_s, compile_s, cold_start_s,
second_call_s, steady_s, steady {median, mean, min, max, q1, q3, n}, graphs, dynamo_breaks,
graphs_all_calls, recompile_s, compile_phases, threads, process_s, returncode, exception}.

A benchmark, not a test: nothing here fails because the machine is slow. The JSON is
rewritten after every row, so an interrupted run keeps the rows it finished.
Exit: 0 when every arm ran and every output was within tolerance, 1 otherwise, 2 set-up error.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import latency_stats  # noqa: E402  (no torch import)
from _harness.models import MODELS, get_spec  # noqa: E402
from _harness.moe_rows import ROWS as MOE_ROWS  # noqa: E402

ARM = Path(__file__).resolve().with_name("_harness") / "latency_arm.py"
ARMS = ("original", "fixed")
# The rows where the fix changes the number of graph breaks (graph_breaks.py --model).
CHANGED = ("t5", "bart", "marian", "whisper", "biogpt", "blenderbot", "pegasus", "layoutlmv3",
           "grounding-dino", "longformer-padded")
METRICS = ("compile_s", "first_call_s", "cold_start_s", "second_call_s", "steady_s")
DEFINITIONS = {
    "compile_s": "Dynamo's compile time inside the first call: torch._dynamo.utils.calculate_time_spent() "
                 "'entire_frame_compile' + 'gc', summed over every frame compiled (tracing, guards, AOT "
                 "autograd, Inductor lowering, code generation, C++/Triton build)",
    "first_call_s": "wall time (time.perf_counter) of the first call of the compiled model, compile included",
    "cold_start_s": "first_call_s - compile_s: the first call with compile time excluded (first run of each "
                    "graph, eager code between graphs, guards, first allocations)",
    "second_call_s": "wall time of the second call, the first one after compilation",
    "steady_s": "median wall time of --calls calls, timed one by one after 2 + --warmup calls",
    "ratio": "original / fixed of one repetition (both arms of a repetition run back to back); summarised "
             "over repetitions by median, min, max, q1, q3 (statistics.quantiles, inclusive)",
    "sync": "on cuda every timed call is bracketed by torch.cuda.synchronize()",
}


def parse_rows(text):
    """Row names from --rows: comma-separated names, 'all', 'changed' or 'moe' (the MoE latency rows of
    _harness/moe_rows.py; not part of 'all'), which may be mixed, in order."""
    names = []
    for item in (text or "all").split(","):
        item = item.strip()
        if not item:
            continue
        expanded = (list(MODELS) if item == "all" else list(CHANGED) if item == "changed"
                    else list(MOE_ROWS) if item == "moe" else [item])
        for name in expanded:
            if name not in MODELS and name not in MOE_ROWS:
                raise ValueError(f"unknown row {name!r}; known: all, changed, moe, {', '.join(MODELS)}, "
                                 f"{', '.join(MOE_ROWS)}")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("--rows names no row")
    return names


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="all",
                   help=f"comma-separated rows, or 'all' (default) or 'changed' ({', '.join(CHANGED)}); "
                        f"known: {', '.join(MODELS)}")
    p.add_argument("--reps", type=int, default=5, help="repetitions per row (default 5)")
    p.add_argument("--calls", type=int, default=50, help="steady-state calls timed per arm (default 50)")
    p.add_argument("--warmup", type=int, default=5,
                   help="untimed calls after the second call, before the steady-state calls (default 5)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads and OMP_NUM_THREADS in each arm "
                        "(default 1 on cpu, torch's default on cuda; 0: torch's default)")
    p.add_argument("--compile-threads", type=int, default=1,
                   help="TORCHINDUCTOR_COMPILE_THREADS in each arm (default 1: compile in-process; "
                        "0: torch's default)")
    p.add_argument("--rtol", type=float, default=1e-4, help="output tolerance, torch.allclose rtol (default 1e-4)")
    p.add_argument("--atol", type=float, default=1e-5, help="output tolerance, torch.allclose atol (default 1e-5)")
    p.add_argument("--json", metavar="OUT.json", help="write the results here (rewritten after every row)")
    p.add_argument("--keep", metavar="DIR",
                   help="keep the work files (fixed copy, arm outputs, the compile cache of a failed arm) in DIR")
    p.add_argument("--timeout", type=int, default=1800, help="seconds allowed to one arm (default 1800)")
    p.add_argument("--resummarise", metavar="RESULT.json",
                   help="run nothing: recompute the summaries of a results file from its repetitions, in place")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="fix the copy with `graphmend fix --unsafe-fixes` (default: the safe fixes only)")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="start no new row once the run has taken this long; the rows not started are "
                        "listed in rows_left_out (default: no limit)")
    args = p.parse_args(argv)
    try:
        args.rows = parse_rows(args.rows)
    except ValueError as exc:
        p.error(str(exc))
    if args.reps < 1:
        p.error("--reps must be at least 1")
    if args.calls < 1:
        p.error("--calls must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must be at least 0")
    if args.max_minutes is not None and args.max_minutes <= 0:
        p.error("--max-minutes must be positive")
    if args.threads is None:
        args.threads = 1 if args.device == "cpu" else 0
    if args.threads < 0 or args.compile_threads < 0:
        p.error("--threads and --compile-threads must be at least 0")
    return args


def arm_order(rep):
    """The order of the two arms in repetition `rep` (0-based): original first in even ones."""
    return ARMS if rep % 2 == 0 else tuple(reversed(ARMS))


def summarise_row(reps):
    """Spreads over `reps`: of the ratios original/fixed (repetitions where both arms ran) and of
    each arm's seconds (repetitions where that arm ran, so a row whose fixed arm fails still
    shows the original's figures)."""
    both = [r for r in reps if _ok(r.get("original")) and _ok(r.get("fixed"))]
    out = {"ratios": {}, "original": {}, "fixed": {}}
    for metric in METRICS:
        out["ratios"][metric] = latency_stats.spread(latency_stats.rep_ratios(both, metric))
        for arm in ARMS:
            out[arm][metric] = latency_stats.spread([r[arm].get(metric) for r in reps if _ok(r.get(arm))])
    return out


def finish_row(row, reps_wanted):
    """Add the summaries of row["reps"] to `row` (see the JSON keys in the module docstring)."""
    reps = row["reps"]
    good = [r for r in reps if r.get("outputs")]
    row["errors"] = []
    for entry in reps:
        for arm in ARMS:
            if not _ok(entry.get(arm)):
                e = entry.get(arm) or {}
                exc = e.get("exception") or {}
                what = f"{exc['type']} in call {exc['call']}: {exc['message'][:300]}" if exc else \
                    (e.get("stderr") or "")[-500:]
                row["errors"].append(f"rep {entry['rep']} {arm}: returncode {e.get('returncode')}: {what}")
    row.update(summarise_row(reps))
    row["reps_ok"] = len(good)
    for arm in ARMS:
        ran = [r[arm] for r in reps if _ok(r.get(arm))]
        graphs = sorted({a["graphs"] for a in ran})
        breaks = sorted({a["dynamo_breaks"] for a in ran})
        row[f"graphs_{arm}"] = graphs[0] if len(graphs) == 1 else graphs
        row[f"dynamo_breaks_{arm}"] = breaks[0] if len(breaks) == 1 else breaks
        row[f"reps_ok_{arm}"] = len(ran)
    row["outputs_bit_equal"] = bool(good) and all(r["outputs"]["bit_equal"] for r in good)
    row["outputs_within_tolerance"] = bool(good) and all(r["outputs"]["within_tolerance"] for r in good)
    diffs = [r["outputs"]["max_abs_diff"] for r in good if r["outputs"]["max_abs_diff"] is not None]
    row["outputs_max_abs_diff"] = max(diffs) if diffs else None
    rels = [r["outputs"]["max_rel_diff"] for r in good if r["outputs"]["max_rel_diff"] is not None]
    row["outputs_max_rel_diff"] = max(rels) if rels else None
    row["ok"] = len(good) == reps_wanted and row["outputs_within_tolerance"]
    return row


def summarise_run(rows):
    """Geometric mean over rows of each metric's median ratio (rows without one are left out)."""
    out = {}
    for metric in METRICS:
        medians = [row["ratios"][metric]["median"] for row in rows if row.get("ratios", {}).get(metric)]
        out[metric] = {"geomean_of_median_ratios": latency_stats.geomean(medians), "rows": len(medians)}
    return out


# ------------------------------------------------------------------ running


def arm_env(pythonpath, cache_dir, threads, compile_threads):
    """Environment of one arm: the harness's clean environment plus fresh, disabled compile caches."""
    from _harness.model_bench import _clean_env

    env = _clean_env(pythonpath)
    env.update({
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir),
        "TRITON_CACHE_DIR": str(Path(cache_dir) / "triton"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
    })
    for key in ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_COMPILE_FORCE_DISABLE_CACHES"):
        env.pop(key, None)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    if compile_threads:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
    return env


def run_arm(args, name, arm, package_root, pythonpath, workdir, tag, state, save):
    """One arm in a fresh process; returns (result dict or None, process info)."""
    cache_dir = Path(tempfile.mkdtemp(prefix=f"cache-{tag}-", dir=workdir))
    out_json, out_pt = workdir / f"{tag}.json", workdir / f"{tag}-outputs.pt"
    for path in (out_json, out_pt):
        path.unlink(missing_ok=True)
    cmd = [sys.executable, str(ARM), "--model", name, "--package-root", str(package_root),
           "--out", str(out_json), "--outputs", str(out_pt), "--save-state" if save else "--load-state",
           str(state), "--device", args.device, "--warmup", str(args.warmup), "--calls", str(args.calls),
           "--threads", str(args.threads)]
    env = arm_env(pythonpath, cache_dir, args.threads, args.compile_threads)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=workdir, timeout=args.timeout)
        info = {"returncode": proc.returncode, "stderr": proc.stderr[-3000:] if proc.returncode else ""}
    except subprocess.TimeoutExpired:
        info = {"returncode": "timeout", "stderr": f"timed out after {args.timeout}s"}
    info["process_s"] = round(time.monotonic() - start, 3)
    if args.keep and info["returncode"] != 0:
        info["cache_dir"] = str(cache_dir)  # kept: Inductor's generated code of the failed arm
    else:
        shutil.rmtree(cache_dir, ignore_errors=True)
    if not out_json.exists():
        return None, info
    result = json.loads(out_json.read_text())
    result.update(info)
    result["arm"] = arm
    return result, info


def compare_outputs(original_pt, fixed_pt, rtol, atol):
    """Compare two arms' saved outputs; returns a JSON-ready dict."""
    import torch

    a, b = torch.load(original_pt), torch.load(fixed_pt)
    out = {"bit_equal": True, "within_tolerance": True, "max_abs_diff": 0.0, "max_rel_diff": 0.0,
           "tensors": 0, "details": []}
    if [p for p, _ in a] != [p for p, _ in b]:
        out.update(bit_equal=False, within_tolerance=False, max_abs_diff=None, max_rel_diff=None)
        out["details"].append("structure differs")
        return out
    for (path, x), (_, y) in zip(a, b):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor) or x != y:
                out.update(bit_equal=False, within_tolerance=False)
                out["details"].append(f"{path}: {x!r:.60} != {y!r:.60}")
            continue
        out["tensors"] += 1
        if x.dtype != y.dtype or x.shape != y.shape:
            out.update(bit_equal=False, within_tolerance=False)
            out["details"].append(f"{path}: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}")
            continue
        if torch.equal(x, y) or x.numel() == 0:
            continue
        out["bit_equal"] = False
        if not (x.is_floating_point() or x.is_complex()):
            out["within_tolerance"] = False
            out["details"].append(f"{path}: integer/bool values differ")
            continue
        xd, yd = x.double(), y.double()
        diff = (xd - yd).abs()
        finite = torch.isfinite(diff)
        abs_diff = diff[finite].max().item() if finite.any() else 0.0
        rel = diff / yd.abs().clamp_min(torch.finfo(torch.float32).tiny)
        rel_diff = rel[finite].max().item() if finite.any() else 0.0
        out["max_abs_diff"] = max(out["max_abs_diff"], abs_diff)
        out["max_rel_diff"] = max(out["max_rel_diff"], rel_diff)
        if not torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            out["within_tolerance"] = False
            out["details"].append(f"{path}: max abs diff {abs_diff:.3g} beyond rtol={rtol}, atol={atol}")
    out["details"] = out["details"][:10]
    return out


_ARM_KEYS = ("first_call_s", "compile_s", "cold_start_s", "second_call_s", "steady_s", "steady",
             "graphs", "dynamo_breaks", "graphs_all_calls", "recompile_s", "compile_phases", "threads",
             "process_s", "returncode", "exception", "stderr", "cache_dir")


def run_row(args, name, installed, site, workdir):
    """All repetitions of one row; returns the row's result dict."""
    spec = get_spec(name)
    rowdir = workdir / name
    rowdir.mkdir(parents=True, exist_ok=True)
    state = rowdir / "state.pt"
    state.unlink(missing_ok=True)
    row = {"model": name, "description": spec.description, "reps": [], "errors": []}
    roots = {"original": (installed, None), "fixed": (site / spec.package, site)}
    first_original = None
    for rep in range(args.reps):
        entry = {"rep": rep, "order": list(arm_order(rep))}
        for arm in arm_order(rep):
            save = arm == "original" and not state.exists()  # the first original arm saves the weights
            if not save and not state.exists():
                entry[arm] = {"returncode": "skipped", "stderr": "no saved state_dict (the original arm failed)"}
                continue
            res, info = run_arm(args, name, arm, *roots[arm], rowdir, f"r{rep}-{arm}", state, save)
            entry[arm] = _keep(res) if res is not None else {
                "returncode": info["returncode"], "stderr": info["stderr"], "process_s": info["process_s"]}
        ok = all(_ok(entry.get(arm)) for arm in ARMS)
        if ok:
            entry["outputs"] = compare_outputs(rowdir / f"r{rep}-original-outputs.pt",
                                               rowdir / f"r{rep}-fixed-outputs.pt", args.rtol, args.atol)
            if first_original is None:
                first_original = rowdir / f"r{rep}-original-outputs.pt"
            else:
                same = compare_outputs(first_original, rowdir / f"r{rep}-original-outputs.pt", 0.0, 0.0)
                entry["original_bit_equal_to_first_rep"] = same["bit_equal"]
        else:
            entry["outputs"] = None
        row["reps"].append({k: v for k, v in entry.items()})
        _print_rep(name, entry)
    return finish_row(row, args.reps)


def _keep(res):
    return None if res is None else {k: res[k] for k in _ARM_KEYS if k in res}


def _ok(arm_result):
    return bool(arm_result) and arm_result.get("returncode") == 0 and not arm_result.get("exception") \
        and arm_result.get("steady_s") is not None


def _print_rep(name, entry):
    def fmt(arm):
        r = entry.get(arm)
        if not _ok(r):
            return f"{arm} FAILED"
        return (f"{arm} compile {r['compile_s']:.2f}s cold {r['cold_start_s'] * 1e3:.1f}ms "
                f"2nd {r['second_call_s'] * 1e3:.2f}ms steady {r['steady_s'] * 1e3:.3f}ms graphs {r['graphs']}")
    o = entry.get("outputs")
    outputs = "" if not o else f" | outputs {'bit-equal' if o['bit_equal'] else 'tol ok' if o['within_tolerance'] else 'DIFFER'}"
    print(f"{name} rep {entry['rep']}: {fmt('original')} | {fmt('fixed')}{outputs}", flush=True)


def fix_package(python, package, workdir, unsafe_fixes=False):
    """Copy the installed `package` into workdir/site and fix the copy; returns (installed, site, fix)."""
    from _harness import fixer
    from _harness.model_bench import _copy_package, installed_package_dir

    installed = installed_package_dir(python, package)
    site = workdir / "site"
    if site.exists():
        shutil.rmtree(site)
    _copy_package(installed, site / package)
    return installed, site, fixer.run_fix([site / package] + (["--unsafe-fixes"] if unsafe_fixes else []))


def versions(python):
    code = ("import json, sys, torch, transformers; print(json.dumps({'torch': torch.__version__, "
            "'transformers': transformers.__version__, 'python': sys.version.split()[0], "
            "'cuda': torch.version.cuda, 'cuda_available': torch.cuda.is_available()}))")
    from _harness.model_bench import _clean_env

    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=_clean_env(), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fixer_identity():
    """The graphmend command, its binary's sha256 and mtime, and the checkout's commit."""
    import hashlib

    from _harness import fixer

    cmd = fixer.fixer_command()
    out = {"command": cmd}
    exe = Path(cmd[0])
    if exe.is_file():
        out["sha256"] = hashlib.sha256(exe.read_bytes()).hexdigest()
        out["mtime"] = datetime.datetime.fromtimestamp(exe.stat().st_mtime, datetime.timezone.utc).isoformat(
            timespec="seconds")
    git = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
                         capture_output=True, text=True)
    out["repo_commit"] = git.stdout.strip() if git.returncode == 0 else None
    return out


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def print_table(rows):
    print("\nratios original/fixed, median [min, max] over repetitions (> 1: fixed is faster)")
    print(f"{'row':18s} {'graphs':>7s} {'compile':>19s} {'cold start':>19s} {'second call':>19s} "
          f"{'steady':>19s}  outputs")
    for row in rows:
        cells = []
        for metric in ("compile_s", "cold_start_s", "second_call_s", "steady_s"):
            s = row.get("ratios", {}).get(metric)
            cells.append(f"{s['median']:.2f} [{s['min']:.2f},{s['max']:.2f}]" if s else "-")
        graphs = f"{row.get('graphs_original')}->{row.get('graphs_fixed')}"
        if row.get("outputs_bit_equal"):
            outputs = "bit-equal"
        elif row.get("outputs_within_tolerance"):
            outputs = f"within tolerance (max abs diff {row.get('outputs_max_abs_diff'):.2g})"
        elif row.get("errors"):
            outputs = f"arm failed: {row['errors'][0][:100]}"
        else:
            outputs = "DIFFER"
        print(f"{row['model']:18s} {graphs:>7s} " + " ".join(f"{c:>19s}" for c in cells) + f"  {outputs}")


def resummarise(path):
    """Recompute every row's summaries and the run summary of results file `path`, in place."""
    result = json.loads(Path(path).read_text())
    for row in result["rows"]:
        finish_row(row, result["reps"])
    result["summary"] = summarise_run(result["rows"])
    Path(path).write_text(json.dumps(result, indent=1))
    return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.resummarise:
        print_table(resummarise(args.resummarise)["rows"])
        return 0
    from _harness import fixer

    try:
        fixer.fixer_command()
    except fixer.FixerMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    python = sys.executable
    info = versions(python)
    if args.device == "cuda" and not info["cuda_available"]:
        print("error: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    packages = sorted({get_spec(name).package for name in args.rows})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="graphmend-latency-") as tmp:
        workdir = Path(args.keep).resolve() if args.keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        installed, site, fix = fix_package(python, packages[0], workdir, args.unsafe_fixes)
        if len(packages) != 1:
            raise SystemExit(f"rows from several packages: {packages}")
        print(f"fixed a copy of {installed} in {fix.seconds}s (exit {fix.returncode})", flush=True)
        result = {
            "benchmark": "latency",
            "command": " ".join([Path(python).name, "benchmarks/latency.py", *(sys.argv[1:] if argv is None else argv)]),
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": args.device, **info,
            "host": {"platform": platform.platform(), "cpu": cpu_model(), "cpu_count": os.cpu_count()},
            "backend": "inductor", "graphmend_dispatch": os.environ.get("GRAPHMEND_DISPATCH", "auto"), "dynamic": False, "dtype": "float32", "mode": "eval, torch.no_grad()",
            "reps": args.reps, "calls": args.calls, "warmup": args.warmup, "threads": args.threads,
            "compile_threads": args.compile_threads, "rtol": args.rtol, "atol": args.atol,
            "caches": "per arm: TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR a new empty folder, "
                      "TORCHINDUCTOR_FX_GRAPH_CACHE=0, TORCHINDUCTOR_AUTOGRAD_CACHE=0",
            "arm_order": "original first in even repetitions (0, 2, ...), fixed first in odd ones",
            "definitions": DEFINITIONS,
            "unsafe_fixes": args.unsafe_fixes,
            "graphmend": {"returncode": fix.returncode, "seconds": fix.seconds, "binary": fixer_identity(),
                          "summary_tail": fix.stderr[-2000:]},
            "rows_requested": args.rows, "rows": [],
            "rows_left_out": [name for name in MODELS if name not in args.rows], "rows_not_started": [],
        }
        if fix.returncode not in (0, 1):
            print(f"error: graphmend fix failed:\n{fix.stderr[-2000:]}", file=sys.stderr)
            return 2
        for name in args.rows:
            if args.max_minutes is not None and time.monotonic() - started > args.max_minutes * 60:
                result["rows_not_started"] = args.rows[args.rows.index(name):]
                result["rows_left_out"] = [n for n in MODELS if n not in [r["model"] for r in result["rows"]]]
                print(f"--max-minutes {args.max_minutes} reached: not started: "
                      f"{', '.join(result['rows_not_started'])}", flush=True)
                break
            row = run_row(args, name, installed, site, workdir)
            result["rows"].append(row)
            result["summary"] = summarise_run(result["rows"])
            result["wall_s"] = round(time.monotonic() - started, 1)
            if args.json:
                Path(args.json).parent.mkdir(parents=True, exist_ok=True)
                Path(args.json).write_text(json.dumps(result, indent=1))
    result["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print_table(result["rows"])
    return 0 if all(row["ok"] for row in result["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
