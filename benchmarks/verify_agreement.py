#!/usr/bin/env python3
"""Does `graphmend verify` count the same FX graphs as the project's own harness? (issue 30)

    verify_agreement.py [--only NAME,...] [--work DIR] [--fresh] [--json OUT.json]

Targets, and what each side runs:
  cases c01..c26 (/work/shared/cases, or --cases DIR)
      harness: benchmarks/graph_breaks.py --case PATH (graphs_before/graphs_after: the compiled
               call on example_inputs(), original and fixed file);
      verify:  graphmend verify CASE.py (the file driver: Model(), example_inputs(), one call).
  checkouts alpha, phi-a (checkout mode) and delta (command mode; ../shared/checkouts or --checkouts)
      harness: the way tests/python/test_checkouts.py measures a checkout, on the checkout and on a
               copy fixed by `graphmend fix`, in fresh processes with a counting backend:
               * alpha/phi-a "checkout": the model class of config.json's auto_map built from the
                 config, one compiled call on a (1, 8, hidden_size) float input (the checkout
                 driver's settings), dynamic=False;
               * alpha "test": test_checkouts.py's RUN_ALPHA itself (remote code, two inputs, two
                 compiled calls), and verify runs that same script as its command;
               * delta: sample.py's loop (every timestep) with a counting backend per callable
                 (DeltaModel, DeltaScheduler.step), dynamic left as sample.py has it;
      verify:  graphmend verify CHECKOUT/ (alpha, phi-a), graphmend verify delta -- python sample.py,
               graphmend verify alpha -- python run_alpha.py (the test's script).
  reference rows at the pins (benchmarks/_harness/suite.py's reference suite)
      harness: docs/results/reference-pins.json (graphs_before/graphs_after of each row; not rerun);
      verify:  graphmend verify <site-packages>/transformers/models/<name> -- python
               benchmarks/_harness/verify_row.py --model NAME --dtype D --calls N, which builds the
               model and inputs with the harness's own builders (_harness/models.py). Only that folder
               is fixed (the harness fixes the whole package): a break whose fix lies in another
               file of transformers (modeling_utils.py, modeling_rope_utils.py) is `outside`.

Per target the JSON holds: harness and verify graphs before/after, equal, verify's breaks by
status, the verdict, the outputs' statuses, a check that every break has a status, wall times,
and notes (the cause of every disagreement). Verify's and the harness's raw results are kept
under --work (default /tmp/graphmend-verify-agreement) and reused unless --fresh.
The graphmend binary: env GRAPHMEND_BIN (default <repo>/build/graphmend); Python: .venv/bin/python.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = str(REPO / ".venv" / "bin" / "python")
BINARY = os.environ.get("GRAPHMEND_BIN", str(REPO / "build" / "graphmend"))
SHARED = REPO.parent / "shared"
OUT_DEFAULT = REPO / "docs" / "results" / "verify-agreement.json"
STATUSES = ("removed", "fixed-but-left", "refused", "unreported", "outside", "new")

# What was found per target (causes of differences, bugs found), written into the JSON's notes.
NOTES = {
    "c03": "a break before the first tensor op: 1 graph before; the fix removes Dynamo's break, graphs stay 1",
    "c10": "a break before the first tensor op: 1 graph before; the fix removes Dynamo's break, graphs stay 1",
    "c17": "verify bug, fixed (eb4e022): the .item() break at line 11 was `unreported` because the GM201 site's "
           "range is lines 12-15 though its fix rewrites line 11; a site now covers the lines its edits rewrite",
    "c20": "3 -> 3 on both sides: the assert's break (28) removed, the `if is_reversed:` break (26, a predicate "
           "from a callable argument) unreported and left; the harness fails the case's `graphs-after: 1` "
           "(a fix gap of graphmend at this commit, not a verify difference)",
    "c21": "2 -> 2 on both sides, refused; the harness fails the case's `graphs-after: 1` (a fix gap of graphmend "
           "at this commit, not a verify difference)",
    "c24": "2 -> 2 on both sides, refused; the harness fails the case's `graphs-after: 1` (a fix gap of graphmend "
           "at this commit, not a verify difference)",
    "c25": "2 -> 2 on both sides, refused; the harness fails the case's `graphs-after: 1` (a fix gap of graphmend "
           "at this commit, not a verify difference)",
    "alpha": "harness side: the auto_map classes built from config.json, one call on a (1, 8, 16) input as the "
             "checkout driver makes; tests/python/test_checkouts.py's own measure (two inputs) is alpha/test-script",
    "alpha/test-script": "verify bug, fixed (7ce682b): under trust_remote_code the fixed run failed "
                         "(FileNotFoundError for _graphmend_runtime.py in HF_MODULES_CACHE): the hook copied only "
                         "the original's files into the cache; it now adds the modules only the fixed copy has",
    "grounding-dino/float32": "graphs agree; the break at line 1914 (`if (col == 0) ...`, Dynamo's action skip: "
                              "the resumed frame after nonzero at 1906) is `unreported`: no site's range or edit "
                              "holds it; it goes because GM504 rewrites the nonzero (1906) and the loop header "
                              "(1912) around it, the body being left as it is",
    "phi3/float32": "PATH is the whole transformers package: the break lies in modeling_rope_utils.py",
    "phi3/float32/unsafe-fixes": "PATH is the whole transformers package: the break lies in modeling_rope_utils.py",
    "layoutlmv3/float32": "PATH is the whole transformers package: the break lies in modeling_utils.py",
    "delta": "sample.py as written (no dynamic=False, 10 timesteps): DeltaScheduler.step makes 9 graphs in both "
             "runs on both sides (the checkouts README's 2 -> 1 for step is one call with dynamic=False); the "
             "step's conditional expression is `unreported`: graphmend does not find it yet "
             "(tests/python/test_checkouts.py says so)",
}


# ----------------------------------------------------------------------------- helpers

def _env(**extra):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def _run(cmd, cwd=None, env=None, timeout=1800):
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    return proc, round(time.monotonic() - t0, 1)


def _cached(path: Path, fresh: bool, make):
    """JSON at `path`, made by make() -> dict unless it is there (and not --fresh)."""
    if path.exists() and not fresh:
        return json.loads(path.read_text())
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1))
    return value


def run_verify(path, command=None, cwd=None, env=None, extra=()):
    """`graphmend verify PATH [-- COMMAND]` with JSON output; returns {"report", "wall_s", ...}."""
    cmd = [BINARY, "verify", str(path), "--python", PYTHON, "--output-format", "json", *extra]
    if command:
        cmd += ["--", *command]
    proc, wall = _run(cmd, cwd=cwd, env=env)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = None
    return {"argv": cmd, "cwd": str(cwd) if cwd else None, "exit_code": proc.returncode, "wall_s": wall,
            "report": report, "stderr_tail": proc.stderr[-3000:]}


def verify_summary(v):
    """The figures of one verify run that the table and JSON hold."""
    r = v.get("report")
    if not r:
        return {"graphs_before": None, "graphs_after": None, "verdict": f"no report (exit {v['exit_code']})",
                "breaks_by_status": {}, "every_break_has_status": None, "outputs": {}, "wall_s": v["wall_s"],
                "error": v["stderr_tail"][-800:]}
    t = r["totals"]
    by_status = {s: t.get(s, 0) for s in STATUSES if t.get(s, 0)}
    breaks = r.get("breaks", [])
    # Every break record of each run lies in one joined entry that has a status: the counts add up.
    statuses_ok = all(b.get("status") in STATUSES for b in breaks)
    sum_before = sum(b.get("count_before", 0) for b in breaks if b.get("status") != "new")
    sum_after = sum(b.get("count_after", 0) for b in breaks)
    every = statuses_ok and sum_before == t.get("breaks_before") and sum_after == t.get("breaks_after")
    outputs = {}
    for c in r.get("outputs", []):
        outputs[c["status"]] = outputs.get(c["status"], 0) + 1
    return {"graphs_before": t["graphs_before"], "graphs_after": t["graphs_after"],
            "callables": [{k: c[k] for k in ("name", "graphs_before", "graphs_after", "calls_before", "calls_after",
                                              "recompiles_before", "recompiles_after")} for c in r["callables"]],
            "verdict": r["verdict"], "breaks_by_status": by_status,
            "breaks": [{k: b.get(k) for k in ("status", "file", "line", "kind", "count_before", "count_after", "via")}
                       for b in breaks],
            "breaks_before": t.get("breaks_before"), "breaks_after": t.get("breaks_after"),
            "every_break_has_status": every, "outputs": outputs,
            "messages": {k: r["messages"][k] for k in ("stdout", "records")},
            "wall_s": v["wall_s"], "runs_wall_s": [r["runs"]["original"]["wall_s"], r["runs"]["fixed"]["wall_s"]]}


def fixed_copy(src: Path, dst: Path):
    """A copy of checkout `src` at dst/<name>, fixed by `graphmend fix`; returns it."""
    copy = dst / src.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    proc, _ = _run([BINARY, "fix", str(copy)])
    if proc.returncode != 0:
        raise RuntimeError(f"graphmend fix {copy}: {proc.stderr[-800:]}")
    return copy


# ------------------------------------------------------------------------- the harness sides

# A checkout built as the checkout driver builds it (auto_map classes, config from config.json), with
# the test's counting backend; one compiled call on a (1, 8, hidden_size) float input.
CHECKOUT_REF = r'''
import importlib, json, os, sys
folder = os.path.realpath(sys.argv[1])
sys.path.insert(0, os.path.dirname(folder))
import torch
name = os.path.basename(folder)
raw = json.load(open(os.path.join(folder, "config.json")))
def cls(ref):
    module, attr = ref.rsplit(".", 1)
    return getattr(importlib.import_module(f"{name}.{module}"), attr)
values = {k: v for k, v in raw.items() if k not in ("auto_map", "architectures", "model_type")}
config = cls(raw["auto_map"]["AutoConfig"])(**values)
torch.manual_seed(0)
model = cls(raw["auto_map"]["AutoModel"])(config).eval()
graphs = []
def counting_backend(gm, example_inputs):
    graphs.append(len(gm.graph.nodes))
    return gm.forward
torch.manual_seed(0)
x = torch.randn(1, 8, config.hidden_size)
with torch.no_grad():
    torch.compile(model, backend=counting_backend, dynamic=False)(x)
print(json.dumps({"graphs": len(graphs)}))
'''

# sample.py of delta, every callable compiled with its own counting backend (as the checkouts README's
# measurement), otherwise as sample.py runs (no dynamic=False: sample.py passes none).
DELTA_REF = r'''
import json, logging, os, sys
sys.path.insert(0, os.path.realpath(sys.argv[1]))
import torch
from delta import DeltaModel, DeltaScheduler
counts = {}
def backend(name):
    def count(gm, example_inputs):
        counts[name] = counts.get(name, 0) + 1
        return gm.forward
    return count
logging.basicConfig(level=logging.INFO)
torch.manual_seed(0)
model = torch.compile(DeltaModel().eval(), backend=backend("DeltaModel"))
scheduler = DeltaScheduler()
step = torch.compile(scheduler.step, backend=backend("DeltaScheduler.step"))
sample = torch.randn(2, 8)
with torch.no_grad():
    for t in scheduler.timesteps:
        sample = step(model(sample), t, sample)
print(json.dumps({"graphs": sum(counts.values()), "per_callable": counts}))
'''


def _last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def harness_script(script, original, fixed, work):
    """Run `script ORIGINAL` and `script FIXED` (fresh processes); graphs of each."""
    out = {}
    for side, folder in (("before", original), ("after", fixed)):
        proc, wall = _run([PYTHON, "-c", script, str(folder)], env=_env(HF_HUB_OFFLINE="1"))
        if proc.returncode != 0:
            raise RuntimeError(f"{side}: {proc.stderr[-1500:]}")
        result = _last_json(proc.stdout)
        out[f"graphs_{side}"] = result["graphs"]
        out[f"detail_{side}"] = result
        out[f"wall_s_{side}"] = wall
    return out


def harness_alpha_test(original, fixed, work):
    """tests/python/test_checkouts.py's RUN_ALPHA on the checkout and its fixed copy."""
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import test_checkouts  # noqa: E402  (only its RUN_ALPHA text is used)

    out = {}
    for side, folder in (("before", original), ("after", fixed)):
        res = work / f"alpha-test-{side}"
        shutil.rmtree(res, ignore_errors=True)
        res.mkdir(parents=True)
        env = _env(HF_MODULES_CACHE=str(work / f"modules-{side}"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        proc, wall = _run([PYTHON, "-c", test_checkouts.RUN_ALPHA, str(folder), str(res)], env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"{side}: {proc.stderr[-1500:]}")
        out[f"graphs_{side}"] = json.loads((res / "result.json").read_text())["graphs"]
        out[f"wall_s_{side}"] = wall
    return out


def harness_case(case: Path, work: Path):
    out_json = work / f"harness-{case.stem}.json"
    proc, wall = _run([PYTHON, str(REPO / "benchmarks" / "graph_breaks.py"), "--case", str(case),
                       "--json", str(out_json)])
    result = json.loads(out_json.read_text())
    return {"graphs_before": result["graphs_before"], "graphs_after": result["graphs_after"],
            "graphs_before_per_input": result["graphs_before_per_input"],
            "graphs_after_per_input": result["graphs_after_per_input"],
            "ok": result["ok"], "failed": result.get("failed"), "exit_code": proc.returncode, "wall_s": wall}


# Reference rows also measured the checkout driver's way: the harness builder's config written as a
# bare config.json (model_type, architectures), built and fed by _graphmend_verify_checkout. Rows whose
# harness inputs the driver makes too (input_ids (1, 8), + decoder_input_ids, whisper's features).
CONFIG_ROWS = ("t5/float32", "bart/float32", "bart/float16", "marian/float32", "whisper/float32",
               "biogpt/float32", "blenderbot/float32", "pegasus/float32")

WRITE_CONFIG = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
from _harness.models import get_spec
model = get_spec(sys.argv[2]).build()
raw = model.config.to_dict()
raw["architectures"] = [type(model).__name__]
os.makedirs(sys.argv[3], exist_ok=True)
with open(os.path.join(sys.argv[3], "config.json"), "w") as f:
    json.dump(raw, f, indent=1)
'''


def row_config(row, work):
    """A folder holding the row's config.json as the harness builder makes it."""
    folder = work / "row-configs" / row["row"].replace("/", "_")
    if not (folder / "config.json").exists():
        proc, _ = _run([PYTHON, "-c", WRITE_CONFIG, str(REPO / "benchmarks"), row["model"], str(folder)])
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-1500:])
    return folder


def reference_rows():
    """{row name: harness row} of docs/results/reference-pins.json."""
    data = json.loads((REPO / "docs" / "results" / "reference-pins.json").read_text())
    return {r["row"]: r for r in data["rows"]}


def transformers_models_dir():
    proc, _ = _run([PYTHON, "-c", "import os, transformers; print(os.path.dirname(transformers.__file__))"])
    return Path(proc.stdout.strip()) / "models"


# ----------------------------------------------------------------------------------- targets

def targets(args):
    cases = sorted(Path(args.cases).glob("c[0-9][0-9]_*.py"))
    for case in cases:
        yield {"name": case.stem.split("_")[0], "kind": "case", "path": case}
    co = Path(args.checkouts)
    yield {"name": "alpha", "kind": "checkout", "path": co / "alpha"}
    yield {"name": "phi-a", "kind": "checkout", "path": co / "phi-a"}
    yield {"name": "alpha/test-script", "kind": "alpha-test", "path": co / "alpha"}
    yield {"name": "delta", "kind": "delta", "path": co / "delta"}
    for row in reference_rows().values():
        yield {"name": row["row"], "kind": "row", "row": row}
    rows = reference_rows()
    for name in CONFIG_ROWS:
        yield {"name": name + "/config", "kind": "row-config", "row": rows[name]}


def measure(t, args, work: Path, models_dir: Path):
    """(harness dict, verify run dict) of one target."""
    fresh = args.fresh
    slug = t["name"].replace("/", "_")
    if t["kind"] == "case":
        harness = _cached(work / "harness" / f"{slug}.json", fresh, lambda: harness_case(t["path"], work))
        verify = _cached(work / "verify" / f"{slug}.json", fresh, lambda: run_verify(t["path"]))
    elif t["kind"] in ("checkout", "alpha-test", "delta"):
        fixed_root = work / "fixed-checkouts" / slug
        fixed = None

        def fixed_folder():
            nonlocal fixed
            fixed = fixed or fixed_copy(t["path"], fixed_root)
            return fixed

        if t["kind"] == "checkout":
            harness = _cached(work / "harness" / f"{slug}.json", fresh,
                              lambda: harness_script(CHECKOUT_REF, t["path"], fixed_folder(), work))
            verify = _cached(work / "verify" / f"{slug}.json", fresh,
                             lambda: run_verify(t["path"], env=_env(HF_HUB_OFFLINE="1")))
        elif t["kind"] == "alpha-test":
            harness = _cached(work / "harness" / f"{slug}.json", fresh,
                              lambda: harness_alpha_test(t["path"], fixed_folder(), work))

            def verify_test():
                sys.path.insert(0, str(REPO / "tests" / "python"))
                import test_checkouts

                script = work / "run_alpha.py"
                script.write_text(test_checkouts.RUN_ALPHA)
                res = work / "alpha-test-verify"
                res.mkdir(parents=True, exist_ok=True)
                env = _env(HF_MODULES_CACHE=str(work / "modules-verify"), HF_HUB_OFFLINE="1",
                           TRANSFORMERS_OFFLINE="1")
                return run_verify(t["path"], [PYTHON, str(script), str(t["path"]), str(res)], env=env)

            verify = _cached(work / "verify" / f"{slug}.json", fresh, verify_test)
        else:
            harness = _cached(work / "harness" / f"{slug}.json", fresh,
                              lambda: harness_script(DELTA_REF, t["path"], fixed_folder(), work))
            verify = _cached(work / "verify" / f"{slug}.json", fresh,
                             lambda: run_verify(t["path"], [PYTHON, "sample.py"], cwd=t["path"]))
    else:
        row = t["row"]
        harness = {"graphs_before": row["graphs_before"], "graphs_after": row["graphs_after"],
                   "source": "docs/results/reference-pins.json", "wall_s": row["seconds"],
                   "breaks_left": [b["site"] for b in row["breaks_left"]]}
        folder = models_dir / row["model"].split("-padded")[0].replace("-", "_")
        # A row whose breaks lie in other files of transformers too (modeling_utils.py,
        # modeling_rope_utils.py): PATH is the whole package, as the harness fixes it.
        inside = f"transformers/models/{folder.name}/"
        if any(not s["site"].startswith(inside) for s in row["sites_before"]):
            harness["path_note"] = ("breaks outside models/" + folder.name + ": PATH is the whole transformers "
                                    "package (its fixed copy takes minutes)")
            folder = models_dir.parent
        command = [PYTHON, str(REPO / "benchmarks" / "_harness" / "verify_row.py"), "--model", row["model"],
                   "--dtype", row["dtype"], "--calls", str(row["calls"])]
        if t["kind"] == "row-config":
            command = [PYTHON, "-m", "_graphmend_verify_checkout", str(row_config(row, work)), "--dtype", row["dtype"]]
        extra = ["--unsafe-fixes"] if row["unsafe_fixes"] else []
        verify = _cached(work / "verify" / f"{slug}.json", fresh,
                         lambda: run_verify(folder, command, extra=extra, env=_env(HF_HUB_OFFLINE="1")))
    return harness, verify


def entry(t, harness, verify):
    v = verify_summary(verify)
    hb, ha = harness.get("graphs_before"), harness.get("graphs_after")
    equal = (hb, ha) == (v["graphs_before"], v["graphs_after"])
    e = {"target": t["name"], "kind": t["kind"], "path": str(t.get("path") or ""),
         "verify_command": verify["argv"][1:], "harness": harness,
         "harness_graphs": [hb, ha], "verify_graphs": [v["graphs_before"], v["graphs_after"]],
         "equal": equal, "verify": v, "notes": NOTES.get(t["name"], "")}
    if t["kind"] in ("row", "row-config"):
        e["path"] = verify["argv"][2]
    return e


def table(entries):
    lines = [f"{'target':28} {'harness':>9} {'verify':>9} {'eq':3} {'verdict':18} {'outputs':22} statuses"]
    for e in entries:
        h = "{}->{}".format(*e["harness_graphs"])
        v = "{}->{}".format(*e["verify_graphs"])
        st = " ".join(f"{k}:{n}" for k, n in e["verify"]["breaks_by_status"].items()) or "-"
        if e["verify"].get("every_break_has_status") is False:
            st += " [UNACCOUNTED BREAKS]"
        outs = ",".join(f"{k}:{n}" for k, n in e["verify"]["outputs"].items()) or "-"
        lines.append(f"{e['target']:28} {h:>9} {v:>9} {'yes' if e['equal'] else 'NO':3} "
                     f"{e['verify']['verdict']:18} {outs:22} {st}")
    n_eq = sum(e["equal"] for e in entries)
    lines.append(f"{n_eq}/{len(entries)} targets: verify's graphs before/after equal the harness's")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=str(SHARED / "cases"))
    p.add_argument("--checkouts", default=str(SHARED / "checkouts"))
    p.add_argument("--only", help="comma-separated target names (c01, alpha, t5/float32, ...)")
    p.add_argument("--work", default="/tmp/graphmend-verify-agreement")
    p.add_argument("--jobs", "-j", type=int, default=3, help="targets measured at once (default 3)")
    p.add_argument("--fresh", action="store_true", help="rerun what --work already holds")
    p.add_argument("--json", default=str(OUT_DEFAULT))
    args = p.parse_args(argv)
    if not Path(BINARY).exists():
        print(f"error: {BINARY} missing (build first, or set GRAPHMEND_BIN)", file=sys.stderr)
        return 2
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    models_dir = transformers_models_dir()
    started = time.time()
    chosen = [t for t in targets(args) if not only or t["name"] in only]

    def one(t):
        try:
            harness, verify = measure(t, args, work, models_dir)
        except Exception as exc:  # recorded, the others go on
            return {"target": t["name"], "kind": t["kind"], "error": f"{type(exc).__name__}: {exc}",
                    "harness_graphs": [None, None], "verify_graphs": [None, None], "equal": False,
                    "verify": {"verdict": "error", "breaks_by_status": {}, "outputs": {}},
                    "notes": NOTES.get(t["name"], "")}
        finally:
            print(f"... {t['name']} done", file=sys.stderr, flush=True)
        return entry(t, harness, verify)

    # Each target is a few fresh Python processes; --jobs of them at once.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        entries = list(pool.map(one, chosen))
    text = table(entries)
    print(text)
    result = {"command": "benchmarks/verify_agreement.py" + (f" --only {args.only}" if args.only else ""),
              "graphmend": subprocess.run([BINARY, "--version"], capture_output=True, text=True).stdout.strip(),
              "python": PYTHON, "seconds_this_run": round(time.time() - started, 1),
              "verify_wall_s_total": round(sum(e["verify"].get("wall_s") or 0 for e in entries), 1),
              "wall_note": "wall times are of the runs --work kept (reused unless --fresh); measured on 2 CPU "
                           "cores shared with other jobs (load average 10-16), so several times an idle machine's",
              "targets": len(entries), "equal": sum(e["equal"] for e in entries),
              "entries": entries, "table": text.splitlines()}
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0 if all(e["equal"] for e in entries) else 1


if __name__ == "__main__":
    sys.exit(main())
