#!/usr/bin/env python3
"""Run graphmend over every .py file of a Python installation and check that it hurts none.

    corpus.py [--python .venv/bin/python] [--work DIR] [--json OUT.json] [--limit N]

Copies every regular `*.py` file of the interpreter's site-packages (purelib and platlib) and
of its standard library into a scratch tree (DIR/site-packages-copy, DIR/stdlib-copy), then:

1. compiles each copy with that interpreter's `compile()` (bytes in, so encoding
   declarations hold): the files CPython accepts and the ones it rejects;
2. runs `graphmend fix` once over the whole tree (one process, the way a batch runs; default
   excludes switched off with a configuration file holding `exclude = []`), recording the exit
   status, wall time and peak RSS (`wait4`);
3. checks, per file:
   - crashes: the batch died on a signal (then each file is run alone to name the culprits);
   - every rewritten file still compiles;
   - every file graphmend did not rewrite is byte-identical to its source;
   - files CPython accepts that graphmend refuses as a syntax error ("valid refused", each with
     graphmend's message and position), and the reverse (files CPython rejects, such as
     Python 2 test data, which graphmend reads without a syntax error);
   - internal errors (a rewrite that did not parse: the file is left as it was);
4. runs `graphmend fix` a second time and counts the files it changes (idempotence: 0).

Writes the figures to --json (default docs/results/corpus.json) and prints a summary. The
graphmend binary comes from env GRAPHMEND_BIN (default <repo>/build/graphmend). Exit: 0 when
no crash, no rewritten file fails to compile, no untouched file differs and the second run
changes nothing; 1 otherwise; 2 usage or set-up error. "Valid refused" files are reported, not
failed on: each one is a grammar gap named in docs/configuration.md ("Grammar gaps").
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_JSON = REPO / "docs" / "results" / "corpus.json"

# Run inside the target interpreter: where its libraries are, then which files compile.
_PATHS = r"""
import json, sysconfig
p = sysconfig.get_paths()
print(json.dumps({"purelib": p["purelib"], "platlib": p["platlib"], "stdlib": p["stdlib"],
                  "version": __import__("sys").version.split()[0]}))
"""
_COMPILE = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
out = {}
for path in sys.stdin.read().splitlines():
    try:
        with open(path, "rb") as f:
            compile(f.read(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, UnicodeDecodeError) as e:
        out[path] = f"{type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - recorded, never fatal
        out[path] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def collect(roots: dict[str, Path], skip: list[Path]) -> dict[str, Path]:
    """Relative copy path -> source path, for every regular *.py file under the roots."""
    files: dict[str, Path] = {}
    for label, root in roots.items():
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames
                                 if not any((here / d) == s for s in skip) and not (here / d).is_symlink())
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                src = here / name
                if src.is_symlink() or not src.is_file():
                    continue
                files[f"{label}/{src.relative_to(root)}"] = src
    return files


def run_graphmend(binary: str, args: list[str], timeout: float) -> dict:
    """Run graphmend; return exit status, signal, wall time and the child's peak RSS (KiB)."""
    start = time.monotonic()
    proc = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        timed_out = True
    wall = time.monotonic() - start
    # ru_maxrss of RUSAGE_CHILDREN is the largest of all waited-for children so far: run each
    # measured batch in a fresh helper process so the figure is this run's own.
    return {"returncode": proc.returncode, "timed_out": timed_out, "wall_s": round(wall, 2),
            "stderr_tail": stderr.decode("utf-8", "replace")[-2000:]}


def measured_run(binary: str, args: list[str], timeout: float) -> dict:
    """run_graphmend in a fresh Python child, so RUSAGE_CHILDREN holds only this run's peak RSS."""
    code = ("import json,resource,sys;sys.path.insert(0,%r);import corpus;"
            "r=corpus.run_graphmend(%r,%r,%r);"
            "r['peak_rss_mib']=round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024,1);"
            "print(json.dumps(r))") % (str(Path(__file__).parent), binary, args, timeout)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def cpython_rejects(python: str, paths: list[Path]) -> dict[str, str]:
    out = subprocess.run([python, "-c", _COMPILE], input="\n".join(map(str, paths)),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"),
                   help="the interpreter whose site-packages and stdlib are the corpus (default .venv)")
    p.add_argument("--work", type=Path, help="scratch folder (default: a temporary one, removed)")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, help="write the figures here")
    p.add_argument("--limit", type=int, help="only the first N files (a quick trial)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per graphmend batch")
    args = p.parse_args()

    binary = os.environ.get("GRAPHMEND_BIN", str(REPO / "build" / "graphmend"))
    if not os.access(binary, os.X_OK):
        print(f"corpus.py: graphmend binary not found: {binary}", file=sys.stderr)
        return 2
    if not Path(args.python).exists():
        print(f"corpus.py: interpreter not found: {args.python}", file=sys.stderr)
        return 2
    info = json.loads(subprocess.run([args.python, "-c", _PATHS], capture_output=True, text=True,
                                     check=True).stdout)
    roots = {"site-packages-copy": Path(info["purelib"])}
    if info["platlib"] != info["purelib"]:
        roots["platlib-copy"] = Path(info["platlib"])
    roots["stdlib-copy"] = Path(info["stdlib"])
    skip = [Path(info["purelib"]), Path(info["platlib"])]  # a stdlib's own site-packages
    sources = collect(roots, skip)
    if args.limit:
        sources = dict(list(sources.items())[: args.limit])

    work = args.work or Path(tempfile.mkdtemp(prefix="graphmend-corpus-"))
    tree = work / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    config = work / "corpus.graphmend.toml"
    config.write_text("exclude = []\n")
    original: dict[str, str] = {}
    for rel, src in sources.items():
        dst = tree / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        original[rel] = sha(dst)
    print(f"{len(sources)} files from {', '.join(str(r) for r in roots.values())} (Python {info['version']})")

    rejected = cpython_rejects(args.python, [tree / r for r in sources])
    rejected = {str(Path(k).relative_to(tree)): v for k, v in rejected.items()}

    report1 = work / "run1.json"
    fix_args = ["fix", str(tree), "--config", str(config), "--exit-zero", "-q", "--report-json", str(report1)]
    run1 = measured_run(binary, fix_args, args.timeout)
    crashed = run1["returncode"] is not None and run1["returncode"] < 0 or run1["timed_out"]
    crashers: list[str] = []
    if crashed or not report1.exists():
        # Name the files that crash or hang alone (the batch's own copy may be half written:
        # start again from the sources).
        for rel, src in sources.items():
            shutil.copyfile(src, tree / rel)
            r = run_graphmend(binary, ["fix", str(tree / rel), "--config", str(config), "--exit-zero", "-q"], 120)
            if r["timed_out"] or (r["returncode"] is not None and r["returncode"] < 0):
                crashers.append(f"{rel}: {'timeout' if r['timed_out'] else 'signal ' + str(-r['returncode'])}")
        report = {"files": []}
    else:
        report = json.loads(report1.read_text())

    entries = {str(Path(f["path"]).resolve().relative_to(tree.resolve())): f for f in report["files"]}
    rewritten = [rel for rel, f in entries.items() if f.get("written") and f.get("changed")]
    refused_syntax = {rel: f"{f['error']} at {f['error_location']}" for rel, f in entries.items()
                      if f.get("error_kind") == "syntax"}
    internal = {rel: f["error"] for rel, f in entries.items() if f.get("error_kind") == "internal"}
    not_read = [rel for rel in sources if rel not in entries]

    rewritten_rejected = cpython_rejects(args.python, [tree / r for r in rewritten])
    rewritten_rejected = {str(Path(k).relative_to(tree)): v for k, v in rewritten_rejected.items()}
    untouched_changed = [rel for rel in sources if rel not in set(rewritten) and sha(tree / rel) != original[rel]]
    valid_refused = {rel: why for rel, why in refused_syntax.items() if rel not in rejected}
    invalid_accepted = sorted(rel for rel in rejected if rel in entries and rel not in refused_syntax)

    after1 = {rel: sha(tree / rel) for rel in sources}
    report2 = work / "run2.json"
    run2 = measured_run(binary, [a if a != str(report1) else str(report2) for a in fix_args], args.timeout)
    second_changed = [rel for rel in sources if sha(tree / rel) != after1[rel]]

    sites = fixed = fixed_when = 0
    for f in entries.values():
        for s in f.get("sites", []):
            sites += 1
            fixed += s.get("status") in ("fixed", "fixed-when")
            fixed_when += s.get("status") == "fixed-when"  # the break is gone only under a condition
    result = {
        "python": info["version"],
        "roots": {k: str(v) for k, v in roots.items()},
        "files": len(sources),
        "cpython_rejects": len(rejected),
        "graphmend": {"binary": binary, "sha256": sha(Path(binary)), "repo_commit": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
            "run1": run1, "run2": run2},
        "sites": sites, "sites_fixed": fixed, "sites_fixed_when": fixed_when,
        "rewritten": len(rewritten),
        "crashes": crashers if crashed else [],
        "crashed": bool(crashed),
        "rewritten_not_compiling": rewritten_rejected,
        "untouched_changed": untouched_changed,
        "second_run_changed": second_changed,
        "internal_errors": internal,
        "not_in_report": not_read,
        "valid_refused": valid_refused,
        "invalid_accepted": invalid_accepted,
        "cpython_rejects_list": rejected,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")

    print(f"graphmend run 1: exit {run1['returncode']}, {run1['wall_s']} s, peak RSS {run1['peak_rss_mib']} MiB;"
          f" run 2: {run2['wall_s']} s, peak RSS {run2['peak_rss_mib']} MiB")
    print(f"sites {sites}, fixed {fixed}; files rewritten {len(rewritten)}")
    print(f"crashes: {len(crashers) if crashed else 0}{' (batch crashed)' if crashed else ''}")
    print(f"rewritten files that do not compile: {len(rewritten_rejected)}")
    print(f"untouched files changed: {len(untouched_changed)}")
    print(f"files the second run changed: {len(second_changed)}")
    print(f"internal errors (file left as it was): {len(internal)}")
    print(f"files missing from the report: {len(not_read)}")
    print(f"CPython rejects {len(rejected)}; of those graphmend reads without a syntax error: {len(invalid_accepted)}")
    print(f"valid files graphmend refuses as a syntax error: {len(valid_refused)}")
    for rel, why in sorted(valid_refused.items()):
        print(f"  {rel}: {why}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    bad = crashed or rewritten_rejected or untouched_changed or second_changed or not_read
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
