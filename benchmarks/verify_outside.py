"""graphmend verify on code we did not write (issues 30, 31): diffusers schedulers' `step`,
torchvision detection models, timm models with unusual inputs, torchdiffeq's ODE solvers,
kornia's image functions, x-transformers models. The packages: requirements-outside.txt
(installed by hand into .venv).

For each target (a driver under benchmarks/verify_outside/ and the installed package folder
that is verify's PATH):
  1. `graphmend verify PATH --output-format json -- python DRIVER` (counting backend);
  2. an independent count: the same driver once more without verify (no hook on PYTHONPATH),
     with TORCH_LOGS=graph_breaks and VERIFY_OUTSIDE_BACKEND=eager (Dynamo's breaks do not
     depend on the backend; Inductor's C++ builds would only cost time), its stderr parsed
     here, record by record, into break sites (file:line);
  3. every site of (2) must be among verify's breaks (their key, or the Dynamo site a `via`
     names): `missing` lists those that are not, and should be empty.
Writes docs/results/verify-outside.json.

    python benchmarks/verify_outside.py [--only NAME ...] [--reuse] [--verify-only] [--timeout S]

(--verify-only runs of different targets may run at once; a last run with --reuse then does
the independent counts and writes the JSON.)
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DRIVERS = REPO / "benchmarks" / "verify_outside"
PYTHON = REPO / ".venv" / "bin" / "python"
GRAPHMEND = REPO / "build" / "graphmend"
OUT = REPO / "docs" / "results" / "verify-outside.json"


def site_packages():
    out = subprocess.run([str(PYTHON), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def versions():
    code = ("import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in "
            "('torch', 'torchvision', 'diffusers', 'timm', 'scipy', 'transformers', 'torchdiffeq', 'kornia', "
            "'x-transformers')}))")
    return json.loads(subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True, check=True).stdout)


def targets():
    sp = site_packages()
    return {
        "diffusers-schedulers": ("schedulers.py", sp / "diffusers" / "schedulers"),
        "torchvision-detection": ("detection.py", sp / "torchvision" / "models" / "detection"),
        # the same driver, PATH the whole package: the breaks in torchvision/ops (boxes.py,
        # poolers.py) are then placed at their own lines, not at the detection code's call
        "torchvision-detection-ops": ("detection.py", sp / "torchvision"),
        "timm": ("timm_models.py", sp / "timm"),
        "torchdiffeq": ("torchdiffeq_odes.py", sp / "torchdiffeq"),
        "kornia": ("kornia_ops.py", sp / "kornia"),
        "x-transformers": ("xtransformers_models.py", sp / "x_transformers"),
    }


# Targets whose breaks another target also has (the same driver): left out of the totals by kind.
SAME_BREAKS_AS = {"torchvision-detection": "torchvision-detection-ops"}


# -- the independent count ------------------------------------------------------------------
_PREFIX = re.compile(r"^([VIWE]\d{4} [\d:.]+ \d+ \S+\] \[[^\]]*\]) \[__graph_breaks\] ?(.*)$")
_AT = re.compile(r"in user code at (.+?):(\d+)\s*$")
_FRAME = re.compile(r'File "(.+?)", line (\d+)')


def independent(script, timeout):
    """Dynamo's graph_breaks records of one plain run: [(file, line, first line)], wall, rc."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEND_VERIFY", "_GRAPHMEND_VERIFY"))}
    env.pop("PYTHONPATH", None)
    env.update(TORCH_LOGS="graph_breaks", VERIFY_OUTSIDE_BACKEND="eager")
    start = time.monotonic()
    proc = subprocess.run([str(PYTHON), script], cwd=DRIVERS, env=env, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.monotonic() - start
    records = collections.OrderedDict()  # one log record: the lines sharing one prefix
    for line in proc.stderr.splitlines():
        m = _PREFIX.match(line)
        if m:
            records.setdefault(m[1], []).append(m[2])
    sites = []
    for lines in records.values():
        at = _AT.search(lines[0])
        if at:
            sites.append((at[1], int(at[2]), lines[0]))
            continue
        frames = _FRAME.findall("\n".join(lines))
        sites.append((frames[-1][0], int(frames[-1][1])) + (lines[0],) if frames else (None, None, lines[0]))
    return sites, wall, proc


# -- verify -----------------------------------------------------------------------------------
def run_verify(name, script, path, work, timeout):
    report = work / f"{name}.json"
    keep = work / name
    cmd = [str(GRAPHMEND), "verify", str(path), "--output-format", "json", "--output-file", str(report),
           "--keep", str(keep), "--timeout", str(timeout), "--", str(PYTHON), script]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=DRIVERS, capture_output=True, text=True)
    wall = time.monotonic() - start
    (work / f"{name}.verify-stderr").write_text(proc.stderr)
    (work / f"{name}.wall").write_text(json.dumps({"wall_s": wall, "exit": proc.returncode}))
    return json.loads(report.read_text()), wall, proc.returncode


def real(file):
    return os.path.realpath(file) if file else file


def check(report, path, sites):
    """Sites of the independent run that verify's report lacks, and the reverse."""
    root = real(str(path))
    known = set()
    for b in report["breaks"]:
        if b["status"] == "new":
            continue
        file = b["file"] if b["file"].startswith("/") else os.path.join(root, b["file"])
        known.add((real(file), b["line"]))
        for via in b.get("via", []):
            f, _, n = via.rpartition(":")
            known.add((real(f), int(n)))
    independent_sites = {(real(f), n) for f, n, _ in sites}
    missing = sorted(f"{f}:{n}" for f, n in independent_sites - known)
    verify_keys = set()
    for b in report["breaks"]:
        if b["status"] == "new":
            continue
        if b.get("via"):
            verify_keys |= {(real(v.rpartition(":")[0]), int(v.rpartition(":")[2])) for v in b["via"]}
        else:
            file = b["file"] if b["file"].startswith("/") else os.path.join(root, b["file"])
            verify_keys.add((real(file), b["line"]))
    extra = sorted(f"{f}:{n}" for f, n in verify_keys - independent_sites)
    return {"records": len(sites), "sites": len(independent_sites), "missing": missing, "extra": extra,
            "verify_breaks_before": report["totals"]["breaks_before"]}


def summarise(name, script, path, report, verify_wall, verify_rc, sites, ind_wall, ind_rc):
    t = report["totals"]
    statuses = ("removed", "condition-unmet", "fixed-but-left", "refused", "unreported", "outside", "new")
    unreported = [{"file": b["file"], "line": b["line"], "gb": b["gb"], "kind": b["kind"], "reason": b["reason"],
                   "count": b["count_before"], "via": b.get("via", []), "callables": b["callables"]}
                  for b in report["breaks"] if b["status"] == "unreported"]
    outputs = collections.Counter(o["status"] for o in report["outputs"])
    return {
        "driver": f"benchmarks/verify_outside/{script}", "path": str(path),
        "verdict": report["verdict"], "verify_exit": verify_rc,
        "graphs_before": t["graphs_before"], "graphs_after": t["graphs_after"],
        "breaks_before": t["breaks_before"], "breaks_after": t["breaks_after"],
        "sites_by_status": {s: t.get(s, 0) for s in statuses},
        "callables": [{k: c[k] for k in ("name", "graphs_before", "graphs_after")} for c in report["callables"]],
        "outputs": dict(outputs), "messages": {k: report["messages"][k] for k in ("stdout", "records")},
        "unreported": unreported,
        "refused": [{"file": b["file"], "line": b["line"], "kind": b["kind"], "site": b["site"]}
                    for b in report["breaks"] if b["status"] == "refused"],
        "independent_check": dict(check(report, path, sites), exit=ind_rc),
        "wall_s": {"verify": round(verify_wall, 1), "independent": round(ind_wall, 1),
                   "original_run": report["runs"]["original"]["wall_s"], "fixed_run": report["runs"]["fixed"]["wall_s"]},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--work", default="/tmp/graphmend-verify-outside")
    ap.add_argument("--reuse", action="store_true", help="use the verify report already in --work")
    ap.add_argument("--verify-only", action="store_true", help="run verify only (then --reuse)")
    ap.add_argument("--timeout", type=float, default=1500)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results.setdefault("targets", {})
    results["versions"] = versions()
    results["cpu_count"] = os.cpu_count()
    plain_runs = {}
    for name, (script, path) in targets().items():
        if args.only and name not in args.only:
            continue
        print(f"== {name}: verify {path}", flush=True)
        report_file = work / f"{name}.json"
        if args.reuse and report_file.exists():
            report = json.loads(report_file.read_text())
            saved = json.loads((work / f"{name}.wall").read_text())
            verify_wall, verify_rc = saved["wall_s"], saved["exit"]
        else:
            report, verify_wall, verify_rc = run_verify(name, script, path, work, args.timeout)
        print(f"   verdict {report['verdict']}, {verify_wall:.0f}s; independent run", flush=True)
        if args.verify_only:
            continue
        if script not in plain_runs:  # one plain run per driver: two targets may share one
            plain_runs[script] = independent(script, args.timeout)
        sites, ind_wall, proc = plain_runs[script]
        (work / f"{name}.independent-stderr").write_text(proc.stderr)
        results["targets"][name] = summarise(name, script, path, report, verify_wall, verify_rc, sites,
                                             ind_wall, proc.returncode)
        r = results["targets"][name]
        print(f"   graphs {r['graphs_before']} -> {r['graphs_after']}, {r['sites_by_status']}, "
              f"missing {r['independent_check']['missing']}, {ind_wall:.0f}s", flush=True)
    kinds = collections.defaultdict(lambda: {"sites": 0, "breaks": 0, "examples": []})
    for name, r in results["targets"].items():
        if name in SAME_BREAKS_AS:  # its breaks are another target's, placed with a narrower PATH
            continue
        for u in r["unreported"]:
            for kind in u["kind"] or ["?"]:
                k = kinds[kind]
                k["sites"] += 1
                k["breaks"] += u["count"]
                if len(k["examples"]) < 4:
                    k["examples"].append(f"{name}: {u['file']}:{u['line']}")
    results["unreported_by_kind_note"] = (
        "sites (distinct file:line) and breaks (Dynamo's records) of status unreported, over the targets but "
        + ", ".join(f"{a} (the same breaks as {b})" for a, b in SAME_BREAKS_AS.items())
        + "; a site with several kinds counts under each")
    results["unreported_by_kind"] = dict(sorted(kinds.items(), key=lambda kv: -kv[1]["sites"]))
    OUT.write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    sys.exit(main())
