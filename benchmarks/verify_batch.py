"""`graphmend verify FOLDER/` over many checkouts: -j N on this machine against --executor ray.

Builds COUNT Hub-style checkouts (tests/checkouts/alpha, phi-a and phi-b, cycled, each under its
own organisation folder: org000/alpha, org001/phi-a, ...). Each copy differs a little: the text
its print calls and log calls write names its organisation (so the checkouts' stdout differs),
and config.json's hidden_size grows with the index (16, 24, 32, ...; --tiny sets it to the
sweep's 64 again, so with --tiny only the text differs). Every --broken-every K-th checkout
(index 3, 3+K, 3+2K, ...; default K 25: 8 of 200) is broken on purpose: its config.json's
auto_map names a module the checkout lacks (modeling_missing.py), so its original run fails and
its verdict must be original-failed under both executors.

Then two arms over the same folder, one after the other, each in a fresh `python -c` wrapper
process:

  local  graphmend verify ROOT -j JOBS --tiny --python PY --output-format json --output-file A.json
  ray    the same with --executor ray --jobs JOBS (a local Ray instance)

What is measured, per arm:

  wall_s                 the wrapper's clock from spawning graphmend to its exit (os.wait4).
  graphmend_hwm_mb       graphmend's own peak RSS, the batch process alone: VmHWM of
                         /proc/PID/status, read every 0.5 s (its last reading before exit).
  wait4_maxrss_mb        ru_maxrss of os.wait4 on graphmend. On Linux this is NOT graphmend's
                         own figure: wait4 reports the child together with the descendants it
                         waited for (the largest of them), so under -j it is a model run's
                         size; under Ray, whose workers graphmend does not wait for, it is the
                         Ray driver's (python -m _graphmend_verify_ray).
  waited_maxrss_mb       ru_maxrss of resource.getrusage(RUSAGE_CHILDREN) in the wrapper after
                         every descendant was reaped: on Linux the largest resident set of any
                         one process of the run's tree that was waited for (graphmend, each
                         child verify, each model run, Ray's processes). Not a sum. The wrapper
                         makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so a
                         process orphaned in the tree (Ray's raylet, gcs_server, workers when
                         their parent exits first) is re-parented to it and reaped by it, and so
                         counted too; what is still alive 60 s after graphmend exits is killed
                         (listed under leftover).
  tree_*                 a sampler thread reads /proc every 0.5 s: every process descended from
                         the wrapper. tree_rss_sum_peak_mb: the largest sum of their RSS (shared
                         pages counted once per process: an over-count); tree_pss_sum_peak_mb:
                         the largest sum of their PSS (/proc/PID/smaps_rollup: shared pages
                         split among sharers); tree_rss_max_mb: the largest RSS of one process
                         seen (a peak between samples can be missed: waited_maxrss_mb does not
                         miss it); tree_procs_peak: most processes at once; at_peak: RSS by
                         process name at the sample of the largest RSS sum (Ray's raylet,
                         gcs_server, workers show here; they need not be waited for).

The two JSON reports are compared per checkout (keyed by the checkout's path relative to ROOT):
status and the whole child report (verdict, totals, breaks with file relative to the checkout,
line and status, callables with their graphs, outputs, messages, runs' exit codes and stderr),
less times, RSS and temporary-folder paths; and the batch totals less wall_s and peak_rss_kb.

A benchmark, not a test: nothing fails because the machine is slow; the exit status is 1 only
when the two arms' results differ (or a report is missing).

    .venv/bin/python benchmarks/verify_batch.py --count 200 --json docs/results/verify-batch.json
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("alpha", "phi-a", "phi-b")
BROKEN_OFFSET = 3
# Text in the sources that carries the organisation's name in a copy.
MARKERS = ("alpha attention", "alpha: ", "phi-a attention", "phi-a stats", "phi-b attention", "phi-b stats")

# The arm's wrapper: python -c WRAPPER CMD_JSON STDERR_PATH; prints one JSON line.
WRAPPER = r'''
import ctypes, json, os, resource, signal, subprocess, sys, threading, time
cmd, err_path = json.loads(sys.argv[1]), sys.argv[2]
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
me, page = os.getpid(), os.sysconf("SC_PAGE_SIZE") // 1024

def tree():
    """{pid: (name, rss_kb)} of every process descended from this one."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append((int(d), name))
    out, todo = {}, [me]
    while todo:
        for pid, name in kids.get(todo.pop(), []):
            try:
                with open(f"/proc/{pid}/statm") as f:
                    rss = int(f.read().split()[1]) * page
            except OSError:
                continue
            out[pid] = (name, rss)
            todo.append(pid)
    return out

def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

top = {"pid": None, "hwm": 0}
peak = {"rss_sum": 0, "pss_sum": 0, "rss_max": 0, "rss_max_name": "", "procs": 0, "samples": 0, "at_peak": {}}
done = threading.Event()

def sample():
    while not done.is_set():
        t = tree()
        if top["pid"] is not None:
            try:
                with open(f"/proc/{top['pid']}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            top["hwm"] = max(top["hwm"], int(line.split()[1]))
            except OSError:
                pass
        rss_sum = sum(r for _, r in t.values())
        pss_sum = sum(pss(p) for p in t)
        peak["samples"] += 1
        peak["procs"] = max(peak["procs"], len(t))
        peak["pss_sum"] = max(peak["pss_sum"], pss_sum)
        for name, r in t.values():
            if r > peak["rss_max"]:
                peak["rss_max"], peak["rss_max_name"] = r, name
        if rss_sum > peak["rss_sum"]:
            by = {}
            for name, r in t.values():
                by[name] = by.get(name, 0) + r
            peak["rss_sum"], peak["at_peak"] = rss_sum, by
        done.wait(0.5)

sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
t0 = time.perf_counter()
with open(err_path, "w") as err:
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    top["pid"] = proc.pid
    _, status, own = os.wait4(proc.pid, 0)
wall = time.perf_counter() - t0
# Orphans of the tree (re-parented here): wait for them, then kill what is left.
leftover, deadline = [], time.monotonic() + 60
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid:
        continue
    if time.monotonic() > deadline:
        left = tree()
        leftover = sorted({name for name, _ in left.values()})
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = float("inf")
    time.sleep(0.1)
done.set()
sampler.join()
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "wall_s": wall,
                  "wait4_maxrss_kb": own.ru_maxrss, "graphmend_hwm_kb": top["hwm"], "waited_maxrss_kb": children.ru_maxrss,
                  "reaped_after_s": time.perf_counter() - t0 - wall, "leftover": leftover, "peak": peak}))
'''

# Keys whose values are times, sizes or places of one run, not results.
VOLATILE_KEYS = re.compile(r"(^|_)(s|wall_s|peak_rss_kb)$|_s_(before|after)$|^(first_call|steady|compile)_s")
TEMP_PATH = re.compile(r"/(?:tmp|var/tmp)/[^\s\"':]*graphmend[^\s\"':/]*")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=200, help="checkouts to build (default 200)")
    p.add_argument("--jobs", type=int, default=2, help="-j / --jobs of both arms (default 2)")
    p.add_argument("--broken-every", type=int, default=25,
                   help="every K-th checkout (index 3, 3+K, ...) broken on purpose (0: none; default 25)")
    p.add_argument("--binary", default=str(REPO / "build" / "graphmend"))
    p.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"),
                   help="the Python both arms run models and Ray with (default .venv/bin/python)")
    p.add_argument("--no-tiny", action="store_true", help="leave out --tiny (config.json sizes as built)")
    p.add_argument("--no-eager-gap", action="store_true", help="pass --no-eager-gap to both arms")
    p.add_argument("--arms", default="local,ray", help="comma-separated: local, ray (default both)")
    p.add_argument("--keep", help="build the checkouts and the arms' reports in this folder and keep them")
    p.add_argument("--json", help="write the results here")
    return p.parse_args(argv)


def build_checkouts(root, count, broken_every):
    """[(name relative to root, source, broken)] of the checkouts written under root."""
    out = []
    for i in range(count):
        source = SOURCES[i % len(SOURCES)]
        org = f"org{i:03d}"
        broken = bool(broken_every) and i % broken_every == BROKEN_OFFSET % broken_every
        dest = root / org / (f"{source}-broken" if broken else source)
        shutil.copytree(REPO / "tests" / "checkouts" / source, dest)
        for py in dest.glob("*.py"):
            text = py.read_text()
            for m in MARKERS:
                text = text.replace(m, f"{m.rstrip(': ')} ({org}){m[len(m.rstrip(': ')):]}")
            py.write_text(text)
        config = json.loads((dest / "config.json").read_text())
        config["hidden_size"] = 16 + 8 * (i % 7)
        if broken:
            config["auto_map"]["AutoModel"] = "modeling_missing." + config["auto_map"]["AutoModel"].split(".", 1)[1]
        (dest / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        out.append((str(dest.relative_to(root)), source, broken))
    return out


def run_arm(args, arm, root, report, err_path):
    cmd = [args.binary, "verify", str(root), "-j", str(args.jobs), "--python", args.python,
           "--output-format", "json", "--output-file", str(report)]
    if arm == "ray":
        cmd[3:5] = ["--executor", "ray", "--jobs", str(args.jobs)]
    if not args.no_tiny:
        cmd.append("--tiny")
    if args.no_eager_gap:
        cmd.append("--no-eager-gap")
    wrapper = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(cmd), str(err_path)],
                             stdout=subprocess.PIPE, text=True, check=True)
    m = json.loads(wrapper.stdout.strip().splitlines()[-1])
    peak = m["peak"]
    mb = lambda kb: round(kb / 1024, 1)  # noqa: E731
    row = {
        "command": " ".join(cmd).replace(str(root), "ROOT").replace(str(report), report.name),
        "exit": m["exit"], "wall_s": round(m["wall_s"], 1),
        "graphmend_hwm_mb": mb(m["graphmend_hwm_kb"]), "wait4_maxrss_mb": mb(m["wait4_maxrss_kb"]),
        "waited_maxrss_mb": mb(m["waited_maxrss_kb"]),
        "tree_rss_sum_peak_mb": mb(peak["rss_sum"]), "tree_pss_sum_peak_mb": mb(peak["pss_sum"]),
        "tree_rss_max_mb": mb(peak["rss_max"]), "tree_rss_max_process": peak["rss_max_name"],
        "tree_procs_peak": peak["procs"], "samples": peak["samples"],
        "at_peak_mb": {k: mb(v) for k, v in sorted(peak["at_peak"].items(), key=lambda kv: -kv[1])[:8]},
        "reaped_after_s": round(m["reaped_after_s"], 1), "leftover": m["leftover"],
        "stderr_tail": Path(err_path).read_text()[-800:],
    }
    data = json.loads(report.read_text()) if report.exists() else None
    if data:
        walls = [c.get("wall_s", 0) for c in data["checkouts"]]
        row["statuses"] = data["totals"].get("statuses")
        row["checkout_wall_s_mean"] = round(sum(walls) / len(walls), 1) if walls else None
        row["checkout_wall_s_max"] = round(max(walls), 1) if walls else None
        row["checkout_peak_rss_mb_max"] = mb(max((c.get("peak_rss_kb", 0) for c in data["checkouts"]), default=0))
    return row, data


def normalise(value, root):
    """value less times, RSS and temporary-folder paths; ROOT's path written as ROOT."""
    if isinstance(value, dict):
        return {k: normalise(v, root) for k, v in value.items() if not VOLATILE_KEYS.search(k)}
    if isinstance(value, list):
        return [normalise(v, root) for v in value]
    if isinstance(value, str):
        return TEMP_PATH.sub("TMP", value.replace(str(root), "ROOT"))
    return value


def by_checkout(data, root):
    out = {}
    for c in data["checkouts"]:
        name = os.path.relpath(c["checkout"], root)
        out[name] = normalise({k: v for k, v in c.items() if k not in ("checkout",)}, root)
    return out


def differences(a, b, path="", limit=10, out=None):
    """The first `limit` places where a and b differ: [(path, a's value, b's value)]."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                differences(a[k], b[k], f"{path}.{k}", limit, out)
            if len(out) >= limit:
                break
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}[{i}]", limit, out)
    elif a != b:
        out.append((path, a, b))
    return out


def short(v, n=160):
    s = json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n] + "..."


def versions(python):
    code = ("import json, torch, transformers\ntry:\n import ray; r = ray.__version__\nexcept Exception: r = None\n"
            "print(json.dumps({'torch': torch.__version__, 'transformers': transformers.__version__, 'ray': r}))")
    try:
        return json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)
    except (subprocess.CalledProcessError, ValueError) as e:
        return {"error": str(e)}


def main(argv=None):
    args = parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gm-verify-batch-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        root = work / "checkouts"
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        built = build_checkouts(root, args.count, args.broken_every)
        broken = [name for name, _, b in built if b]
        print(f"{len(built)} checkouts under {root} ({dict(Counter(s for _, s, _ in built))}); "
              f"{len(broken)} broken on purpose (auto_map names modeling_missing.py): {', '.join(broken) or 'none'}",
              flush=True)
        rows, data = {}, {}
        for arm in arms:
            report = work / f"{arm}.json"
            print(f"[{arm}] running ...", flush=True)
            rows[arm], data[arm] = run_arm(args, arm, root, report, work / f"{arm}.stderr")
            r = rows[arm]
            print(f"[{arm}] exit {r['exit']}, {r['wall_s']} s, statuses {r.get('statuses')}", flush=True)
        per = {arm: by_checkout(d, root) if d else None for arm, d in data.items()}

    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load_before[0]:.1f} at start",
        "python": args.python, "versions": versions(args.python), "binary": args.binary,
        "checkouts": args.count, "sources": dict(Counter(s for _, s, _ in built)),
        "broken": {"every": args.broken_every, "count": len(broken), "names": broken,
                   "how": "config.json auto_map AutoModel names modeling_missing.<Class>, a module the checkout lacks"},
        "jobs": args.jobs, "tiny": not args.no_tiny, "eager_gap": not args.no_eager_gap,
        "arms": rows,
    }
    checkouts_table = []
    ok = True
    if len(arms) == 2:
        a, b = (per[x] for x in arms)
        diffs = []
        if a is None or b is None:
            ok = False
            diffs.append(("report", "missing" if a is None else "present", "missing" if b is None else "present"))
        else:
            diffs = differences(a, b)
            ta, tb = (normalise(data[x]["totals"], root) for x in arms)
            diffs += [(f"totals{p}", x, y) for p, x, y in differences(ta, tb)]
            ok = not diffs
        result["identical"] = ok
        result["differences"] = [{"where": p, arms[0]: short(x), arms[1]: short(y)} for p, x, y in diffs[:10]]
        # The failure path: every broken checkout's status under both executors.
        for name, _, is_broken in built:
            row = {"checkout": name, "broken": is_broken}
            for arm in arms:
                c = (per[arm] or {}).get(name, {})
                rep = c.get("report") or {}
                t = rep.get("totals", {})
                row[arm] = {"status": c.get("status"), "graphs": f"{t.get('graphs_before')}->{t.get('graphs_after')}",
                            "breaks": f"{t.get('breaks_before')}->{t.get('breaks_after')}",
                            "removed": t.get("removed")}
            checkouts_table.append(row)
        result["broken_statuses"] = {r["checkout"]: {arm: r[arm]["status"] for arm in arms}
                                     for r in checkouts_table if r["broken"]}
    n = max(args.count, 1)
    # Linear in the count: the arm's wall per checkout times 200 (Ray's start, a few seconds, is
    # counted 200/COUNT times over: a slight over-estimate for small COUNT).
    result["estimate_200_wall_s"] = {arm: round(rows[arm]["wall_s"] / n * 200) for arm in arms}
    result["load_average_at_end"] = round(os.getloadavg()[0], 1)
    result["checkouts_table"] = checkouts_table

    text = json.dumps(result, indent=2)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print()
    print(f"{'arm':6} {'exit':>4} {'wall s':>7} {'gm MB':>6} {'waited MB':>9} {'tree sum MB':>11} "
          f"{'tree PSS MB':>11} {'procs':>5}  statuses")
    for arm, r in rows.items():
        print(f"{arm:6} {r['exit']:>4} {r['wall_s']:>7} {r['graphmend_hwm_mb']:>6} {r['waited_maxrss_mb']:>9} "
              f"{r['tree_rss_sum_peak_mb']:>11} {r['tree_pss_sum_peak_mb']:>11} {r['tree_procs_peak']:>5}  "
              f"{r.get('statuses')}")
    if checkouts_table:
        print()
        for row in checkouts_table:
            cells = "  ".join(f"{arm}: {row[arm]['status']} graphs {row[arm]['graphs']} breaks {row[arm]['breaks']}"
                              for arm in arms)
            print(f"{row['checkout']:24} {'(broken) ' if row['broken'] else ''}{cells}")
    if len(arms) == 2:
        print(f"\nidentical: {str(ok).lower()}")
        for d in result["differences"]:
            print(f"  {d['where']}: {arms[0]} {d[arms[0]]} | {arms[1]} {d[arms[1]]}")
    print(f"estimate for 200 checkouts: " + ", ".join(f"{a} ~{s / 60:.0f} min" for a, s in
                                                        result["estimate_200_wall_s"].items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
