"""Batch over Hub checkouts: one graphmend run over a folder of many checkouts against one run per checkout.

Builds COUNT Hugging Face Hub-style checkouts from the modeling files of the installed
transformers package (the layout of tests/checkouts/: a folder per checkout with config.json,
configuration_<m>.py and modeling_<m>.py joined by a relative import, no __init__.py, other
transformers imports made absolute), cycling through the model folders until COUNT is reached,
each copy under its own organisation name. With --cache-every K, every K-th checkout is laid out
as a Hugging Face cache snapshot instead (models--ORG--NAME/snapshots/REV/FILE, each file a
symbolic link to ../../blobs/SHA256), the form `huggingface_hub.snapshot_download` leaves.

Then, for `check` (report only) and `fix` (rewrites files in place, on two copies of the tree):

  batch       one `graphmend <mode> --report-json R ROOT` over the folder of all checkouts;
  one-by-one  `graphmend <mode> --report-json R ROOT/CHECKOUT` for each checkout, in turn.

It records the batch's wall time and peak RSS (ru_maxrss from os.wait4) and the one-by-one
runs' summed wall time and largest peak RSS, and compares the results: per file (path relative to
ROOT), the sites (code, line, column, status, reason) of the JSON reports and, for `fix`, the
bytes of every file written. The batch is right when every file matches. Per-checkout and total
counts come from the batch report. A benchmark, not a test: nothing fails because the machine is
slow; the exit status is 1 only when the batch and the one-by-one results differ.

    .venv/bin/python benchmarks/batch_checkouts.py --count 1000 --json docs/results/batch-checkouts.json
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RELATIVE_IMPORT = re.compile(r"^(\s*from\s+)(\.+)([\w.]*)(\s+import\b)", re.MULTILINE)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="checkouts to build (default 1000)")
    p.add_argument("--binary", default=str(REPO / "build" / "graphmend"))
    p.add_argument("--threads", type=int, default=0, help="--threads of the batch run (default 0: one per CPU)")
    p.add_argument("--cache-every", type=int, default=4,
                   help="every K-th checkout as an HF cache snapshot of symlinks (0: none; default 4)")
    p.add_argument("--modes", default="check,fix", help="comma-separated: check, fix")
    p.add_argument("--keep", help="build the checkouts in this folder and keep them")
    p.add_argument("--json", help="write the results here")
    return p.parse_args(argv)


def transformers_models():
    # Not imported here: a child forked from a process holding transformers would count its
    # pages in ru_maxrss.
    pkg = subprocess.run([sys.executable, "-c", "import transformers, os; print(os.path.dirname(transformers.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    root = Path(pkg) / "models"
    out = []
    for d in sorted(root.iterdir()):
        modeling, config = d / f"modeling_{d.name}.py", d / f"configuration_{d.name}.py"
        if modeling.is_file() and config.is_file():
            out.append((d.name, modeling, config))
    return out


def hub_source(text, model):
    """The file as a Hub checkout holds it: `.configuration_<model>` stays relative, every other
    relative import points at the installed transformers package."""
    def absolute(m):
        head, dots, module, tail = m.groups()
        if len(dots) == 1 and module == f"configuration_{model}":
            return m.group(0)
        base = ["transformers", "models", model][: max(0, 4 - len(dots))]
        return f"{head}{'.'.join(base + ([module] if module else []))}{tail}"
    return RELATIVE_IMPORT.sub(absolute, text)


def build_checkouts(root, count, cache_every):
    models = transformers_models()
    names = []
    for i in range(count):
        model, modeling, config = models[i % len(models)]
        org = f"org{i // len(models)}"
        files = {
            "config.json": json.dumps({"model_type": model, "auto_map": {
                "AutoConfig": f"configuration_{model}.Config", "AutoModel": f"modeling_{model}.Model"}}, indent=2),
            f"configuration_{model}.py": hub_source(config.read_text(), model),
            f"modeling_{model}.py": hub_source(modeling.read_text(), model),
        }
        if cache_every and i % cache_every == cache_every - 1:
            repo = root / f"models--{org}--{model}"
            rev = hashlib.sha1(f"{org}/{model}".encode()).hexdigest()
            snap = repo / "snapshots" / rev
            snap.mkdir(parents=True)
            (repo / "blobs").mkdir()
            for name, text in files.items():
                blob = hashlib.sha256(text.encode()).hexdigest()
                (repo / "blobs" / blob).write_text(text)
                (snap / name).symlink_to(Path("..", "..", "blobs", blob))
            names.append(str(snap.relative_to(root)))
        else:
            d = root / f"{org}--{model}"
            d.mkdir()
            for name, text in files.items():
                (d / name).write_text(text)
            names.append(d.name)
    return names


def timed(cmd):
    """(exit code, wall s, peak RSS MB, stderr) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss / 1024, stderr


def report_sites(report_path, base):
    """{path relative to base: [(code, line, col, status, reason), ...]} of a JSON report."""
    data = json.loads(Path(report_path).read_text())
    out = {}
    for f in data["files"]:
        rel = os.path.relpath(os.path.abspath(f["path"]), base)
        out[rel] = [(s["code"], s["line"], s["col"], s["status"], s["reason"]) for s in f["sites"]]
        if f.get("error"):
            out[rel].append(("error", 0, 0, "error", f["error"].split(": ", 1)[-1]))
    return out


def tree_digest(root):
    """{path: sha256} of every file under root (symlinks resolved, the runtime module included)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath, name)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run_mode(mode, binary, src, names, threads, work):
    batch_root, single_root = work / f"{mode}-batch", work / f"{mode}-single"
    for r in (batch_root, single_root):
        shutil.copytree(src, r, symlinks=True)
    report = work / f"{mode}-batch.json"
    # HF cache snapshots are links: `fix` writes through them (each checkout has its own blobs here).
    links = ["--write-through-links"] if mode == "fix" else []
    rc, wall, rss, err = timed([binary, mode, *links, "--threads", str(threads), "--report-json", str(report),
                                str(batch_root)])
    batch = report_sites(report, batch_root)
    batch_json = json.loads(report.read_text())
    single, single_wall, single_rss, failures = {}, 0.0, 0.0, []
    for name in names:
        rep = work / f"{mode}-one.json"
        rc1, w1, r1, err1 = timed([binary, mode, *links, "--threads", "1", "--report-json", str(rep),
                                   str(single_root / name)])
        single_wall += w1
        single_rss = max(single_rss, r1)
        if not rep.exists():
            failures.append(f"{name}: exit {rc1}: {err1[-300:]}")
            continue
        single.update(report_sites(rep, single_root))
        rep.unlink()
    differ = sorted(p for p in set(batch) | set(single) if batch.get(p) != single.get(p))
    row = {
        "mode": mode, "command": f"graphmend {mode} {' '.join(links)} --threads {threads} --report-json R ROOT",
        "exit": rc, "stderr_tail": err[-600:], "wall_s": round(wall, 2), "peak_rss_mb": round(rss, 1),
        "one_by_one": {"runs": len(names), "wall_s_total": round(single_wall, 2), "peak_rss_mb_max": round(single_rss, 1),
                       "failures": failures},
        "files": len(batch), "files_differing": differ[:50], "identical_reports": not differ and not failures,
        "totals": batch_json.get("totals"), "projects": len(batch_json.get("projects", [])),
        "sites_by_code": by_code(batch),
    }
    if mode == "fix":
        a, b = tree_digest(batch_root), tree_digest(single_root)
        row["written_files_differing"] = sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p))[:50]
        row["identical_output"] = not row["written_files_differing"]
        row["files_changed_or_added"] = sum(1 for p, h in a.items() if tree_digest_src(src, p) != h)
    shutil.rmtree(batch_root)
    shutil.rmtree(single_root)
    return row


def tree_digest_src(src, rel):
    p = Path(src, rel)
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None


def by_code(sites_by_file):
    c = Counter()
    for sites in sites_by_file.values():
        for code, _, _, status, _ in sites:
            c[f"{code} {status}"] += 1
    return dict(sorted(c.items()))


def main(argv=None):
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gm-batch-") as tmp:
        work = Path(tmp)
        src = Path(args.keep) if args.keep else work / "checkouts"
        src.mkdir(parents=True, exist_ok=True)
        names = build_checkouts(src, args.count, args.cache_every)
        nbytes = sum(p.stat().st_size for p in src.rglob("*.py"))
        rows = [run_mode(m, args.binary, src, names, args.threads, work) for m in args.modes.split(",")]
    result = {
        "date": datetime.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "binary": args.binary, "checkouts": args.count, "cache_snapshots": args.count // args.cache_every
        if args.cache_every else 0, "python_mb": round(nbytes / 1e6, 1), "runs": rows,
    }
    text = json.dumps(result, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0 if all(r["identical_reports"] and r.get("identical_output", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
