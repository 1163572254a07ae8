"""Tool speed: graphmend against CPython's ast and LibCST over every .py file of a package.

Three arms, over the same files (by default every *.py of the installed transformers package,
collected as graphmend collects a folder: recursively, sorted, skipping hidden folders and
__pycache__), each measured as the wall time and peak RSS of fresh child processes:

  graphmend  `graphmend check --threads N PACKAGE`, stdout and stderr to /dev/null: process
             start, walking the folder, reading every file, tree-sitter parse, module index,
             the cross-file analysis (imports, nn.Module classes, compiled scope), every rule,
             building the fixes, applying them in memory and parsing the result again, and the
             text report. It writes no file. It keeps every file's tree until the end (the
             analysis spans files), which is most of its memory.
  ast        `python tool_speed.py --worker ast LIST`: interpreter start, then for each file
             `ast.parse(open(path, "rb").read())`. Parsing only: no analysis, no output.
  libcst     the same with `libcst.parse_module(src).code`: import libcst, parse and generate
             the code again (LibCST's round trip).

The file list of the Python arms is computed once by this script (the folder walk, a few ms,
is not in their time; graphmend's walk is in its own). On N threads, graphmend gets
`--threads N`; ast and libcst get N worker processes, each given a share of the files balanced
by bytes (largest first, to the least loaded), and their wall time runs from starting the
first process to the end of the last. Peak RSS is ru_maxrss of each child process (os.wait4);
for N processes it is the sum of their peaks (an upper bound of what they held together). CPU
time (user + system, summed over the processes, also from os.wait4) is recorded too: on a busy
machine it is steadier than the wall time.

Each measurement is repeated --reps times, interleaved (one of each arm per repetition, in a
rotating order) so that load from other processes spreads over all arms; the report gives the
median and the spread (min, max, (max - min) / median). Ratios are graphmend / other, of the
medians, and also per repetition (the arms of one repetition ran side by side in time).
MB means 10^6 bytes of source. A benchmark, not a test: nothing here fails because the
machine is slow.

    .venv/bin/python benchmarks/tool_speed.py --json docs/results/tool-speed.json
    .venv/bin/python benchmarks/tool_speed.py --binary /tmp/build/graphmend --reps 3 --threads 1,2
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARMS = ("graphmend", "ast", "libcst")
SCHEMA_VERSION = 1
ARM_DESCRIPTIONS = {
    "graphmend": "graphmend check --threads N over the folder (stdout/stderr to /dev/null): process start, "
                 "folder walk, read, tree-sitter parse, module index, cross-file analysis, all rules, fixes "
                 "built, applied in memory and re-parsed, text report; writes no file",
    "ast": "N fresh CPython processes, each: interpreter start, then ast.parse(open(f, 'rb').read()) for "
           "its share of the files (balanced by bytes); parsing only",
    "libcst": "N fresh CPython processes, each: interpreter start, import libcst, then "
              "libcst.parse_module(open(f, 'rb').read()).code for its share of the files (balanced by "
              "bytes); parse and code generation",
}


# --- pieces with no timing in them (tested in tests/python/test_tool_speed.py) ------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, default=REPO / "build" / "graphmend",
                        help="the graphmend binary (default: build/graphmend)")
    parser.add_argument("--package", type=Path, default=None,
                        help="folder to process (default: the installed transformers package)")
    parser.add_argument("--reps", type=positive_int, default=5, help="repetitions of each measurement (default 5)")
    parser.add_argument("--threads", type=thread_list, default=[1, 2],
                        help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--arms", type=arm_list, default=list(ARMS),
                        help=f"comma-separated arms to run (default {','.join(ARMS)})")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--notes", default="", help="free text kept in the JSON (e.g. what else ran on the machine)")
    parser.add_argument("--worker", nargs=2, metavar=("ARM", "LIST"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
    return value


def thread_list(text):
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected comma-separated integers") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text}: thread counts must be at least 1")
    return sorted(set(values))


def arm_list(text):
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if not arms or unknown:
        raise argparse.ArgumentTypeError(f"{text}: arms are {', '.join(ARMS)}")
    return [a for a in ARMS if a in arms]


def collect_python_files(root):
    """The *.py files under root as graphmend collects a folder: sorted, no hidden folders or __pycache__."""
    root = Path(root)
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith(".py") and os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
    return sorted(found)


def split_by_bytes(sizes, parts):
    """Indices of `sizes` in `parts` shares of nearly equal total: largest first, to the least loaded.

    Each share keeps its indices in ascending order.
    """
    shares = [[] for _ in range(parts)]
    loads = [0] * parts
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        k = min(range(parts), key=lambda k: (loads[k], k))
        shares[k].append(i)
        loads[k] += sizes[i]
    return [sorted(s) for s in shares]


def summarise(values):
    """Median, min, max and relative spread ((max - min) / median) of a list of numbers."""
    if not values:
        raise ValueError("no values")
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {"median": med, "min": lo, "max": hi, "spread_pct": 100.0 * (hi - lo) / med if med else 0.0,
            "n": len(values)}


def throughput(files, total_bytes, wall_s):
    """files/s and MB/s (MB = 10^6 bytes) for one wall time."""
    if wall_s <= 0:
        raise ValueError(f"wall time must be positive, got {wall_s}")
    return {"files_per_s": files / wall_s, "mb_per_s": total_bytes / 1e6 / wall_s}


def result_row(arm, threads, samples, files, total_bytes):
    """One (arm, threads) row: samples plus median/spread of time, throughput and peak RSS."""
    walls = [s["wall_s"] for s in samples]
    rss = [s["peak_rss_kb"] / 1024.0 for s in samples]
    wall = summarise(walls)
    tput = throughput(files, total_bytes, wall["median"])
    return {
        "arm": arm,
        "threads": threads,
        "processes": 1 if arm == "graphmend" else threads,
        "samples": samples,
        "wall_s": wall,
        "files_per_s": {"median": tput["files_per_s"], "min": files / wall["max"], "max": files / wall["min"]},
        "mb_per_s": {"median": tput["mb_per_s"], "min": total_bytes / 1e6 / wall["max"],
                     "max": total_bytes / 1e6 / wall["min"]},
        "cpu_s": summarise([s["cpu_s"] for s in samples]),
        "peak_rss_mb": summarise(rss),
    }


def ratios(rows, reps):
    """graphmend / other, per thread count: throughput (files/s = MB/s ratio), CPU time
    (other's CPU seconds / graphmend's: >1 when graphmend needs less CPU) and peak RSS.

    `median` is the ratio of the medians; `per_rep` the median, min and max of the ratios of
    the measurements taken in the same repetition.
    """
    by_key = {(r["arm"], r["threads"]): r for r in rows}
    out = []
    for (arm, threads), row in sorted(by_key.items(), key=lambda kv: (kv[0][1], ARMS.index(kv[0][0]))):
        if arm == "graphmend" or ("graphmend", threads) not in by_key:
            continue
        g = by_key[("graphmend", threads)]
        paired_speed = []
        paired_cpu = []
        paired_rss = []
        for rep in range(reps):
            gs = [s for s in g["samples"] if s["rep"] == rep]
            os_ = [s for s in row["samples"] if s["rep"] == rep]
            if gs and os_:
                paired_speed.append(os_[0]["wall_s"] / gs[0]["wall_s"])
                paired_cpu.append(os_[0]["cpu_s"] / gs[0]["cpu_s"])
                paired_rss.append(gs[0]["peak_rss_kb"] / os_[0]["peak_rss_kb"])
        out.append({
            "threads": threads,
            "other": arm,
            "speed": {"median": row["wall_s"]["median"] / g["wall_s"]["median"],
                      "per_rep": summarise(paired_speed) if paired_speed else None},
            "cpu_efficiency": {"median": row["cpu_s"]["median"] / g["cpu_s"]["median"],
                               "per_rep": summarise(paired_cpu) if paired_cpu else None},
            "peak_rss": {"median": g["peak_rss_mb"]["median"] / row["peak_rss_mb"]["median"],
                         "per_rep": summarise(paired_rss) if paired_rss else None},
        })
    return out


def scaling(rows):
    """Per arm: throughput on each thread count over its throughput on the fewest threads."""
    out = {}
    for arm in ARMS:
        mine = sorted((r for r in rows if r["arm"] == arm), key=lambda r: r["threads"])
        if len(mine) < 2:
            continue
        base = mine[0]["wall_s"]["median"]
        out[arm] = {str(r["threads"]): base / r["wall_s"]["median"] for r in mine}
    return out


def schedule(arms, threads, reps):
    """The measurements in run order: every (arm, threads) once per repetition, order rotating."""
    cells = [(arm, t) for t in threads for arm in arms]
    order = []
    for rep in range(reps):
        k = rep % len(cells)
        order.extend((rep, arm, t) for arm, t in cells[k:] + cells[:k])
    return order


def table(result):
    """The human-readable table of a result (what main prints)."""
    lines = [f"{result['package']['files']} files, {result['package']['mb']:.1f} MB, "
             f"{result['reps']} reps (median [min-max])"]
    lines.append(f"{'arm':<10} {'thr':>3} {'wall s':>22} {'files/s':>9} {'MB/s':>7} {'CPU s':>7} {'peak RSS MB':>24}")
    for r in result["results"]:
        w, m = r["wall_s"], r["peak_rss_mb"]
        lines.append(f"{r['arm']:<10} {r['threads']:>3} "
                     f"{w['median']:>7.2f} [{w['min']:.2f}-{w['max']:.2f}] "
                     f"{r['files_per_s']['median']:>9.1f} {r['mb_per_s']['median']:>7.2f} "
                     f"{r['cpu_s']['median']:>7.2f} "
                     f"{m['median']:>8.1f} [{m['min']:.1f}-{m['max']:.1f}]")
    lines.append("graphmend / other: speed (>1: graphmend faster), CPU (>1: graphmend needs less CPU time), "
                 "peak RSS (>1: graphmend uses more)")
    for q in result["ratios"]:
        sp, rs = q["speed"], q["peak_rss"]
        per = sp["per_rep"]
        lines.append(f"  {q['threads']} thr vs {q['other']:<7} speed {sp['median']:.2f}"
                     + (f" [per rep {per['min']:.2f}-{per['max']:.2f}]" if per else "")
                     + f"  CPU {q['cpu_efficiency']['median']:.2f}"
                     + f"  peak RSS {rs['median']:.2f}")
    for arm, s in result.get("scaling", {}).items():
        lines.append(f"  {arm} scaling: " + ", ".join(f"{t} thr x{v:.2f}" for t, v in s.items()))
    return "\n".join(lines)


# --- measuring ----------------------------------------------------------------------------

def worker(arm, list_file):
    """In a child process: process every file of list_file; prints {"work_s", "files", "failed"}."""
    start = time.perf_counter()
    if arm == "ast":
        import ast

        def process(src):
            ast.parse(src)
    elif arm == "libcst":
        import libcst

        def process(src):
            libcst.parse_module(src).code
    else:
        raise SystemExit(f"unknown worker arm {arm}")
    paths = Path(list_file).read_text().splitlines()
    failed = 0
    for path in paths:
        with open(path, "rb") as f:
            src = f.read()
        try:
            process(src)
        except Exception:  # a file the tool cannot parse still counts as processed
            failed += 1
    print(json.dumps({"work_s": time.perf_counter() - start, "files": len(paths), "failed": failed}))


def wait_all(procs):
    """Waits for every Popen; returns (wall end time, sum of ru_maxrss in KB, CPU seconds, exit codes)."""
    rss = 0
    cpu = 0.0
    codes = []
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        codes.append(p.returncode)
        rss += usage.ru_maxrss
        cpu += usage.ru_utime + usage.ru_stime
    return time.perf_counter(), rss, cpu, codes


def measure_graphmend(binary, package, threads):
    start = time.perf_counter()
    proc = subprocess.Popen([str(binary), "check", "--threads", str(threads), str(package)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end, rss, cpu, codes = wait_all([proc])
    if codes[0] not in (0, 1):  # 1: a file could not be processed (syntax error); the others were
        raise RuntimeError(f"graphmend exited with {codes[0]}")
    return {"wall_s": end - start, "cpu_s": cpu, "peak_rss_kb": rss}


def measure_python(arm, list_files):
    procs = []
    start = time.perf_counter()
    for lf in list_files:
        procs.append(subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", arm, str(lf)],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
    # Read each child's one line of output after all have started (none blocks on a full pipe).
    outputs = [p.stdout.read() for p in procs]
    end, rss, cpu, codes = wait_all(procs)
    for p in procs:
        p.stdout.close()
    if any(codes):
        raise RuntimeError(f"{arm} worker exited with {codes}")
    reports = [json.loads(o) for o in outputs]
    return {"wall_s": end - start, "cpu_s": cpu, "peak_rss_kb": rss, "work_s": [r["work_s"] for r in reports],
            "failed": sum(r["failed"] for r in reports)}


def default_package():
    import importlib.util

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("transformers is not installed in this interpreter: pass --package")
    return Path(list(spec.submodule_search_locations)[0])


def graphmend_info(binary, package, tmp):
    """Version, build type (from a CMakeCache.txt beside the binary) and an untimed check's totals."""
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    build_type = None
    cache = Path(binary).resolve().parent / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_BUILD_TYPE:"):
                build_type = line.split("=", 1)[1]
    report = Path(tmp) / "report.json"
    proc = subprocess.run([str(binary), "check", "-q", "--threads", "1", "--report-json", str(report), str(package)],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not report.is_file():
        raise SystemExit(f"graphmend check failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return {"binary": str(binary), "version": version, "build_type": build_type,
            "check_totals": json.loads(report.read_text())["totals"]}


def package_version(name):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    binary = args.binary.resolve()
    if "graphmend" in args.arms and not os.access(binary, os.X_OK):
        raise SystemExit(f"{binary}: not an executable; build graphmend or pass --binary")
    package = (args.package or default_package()).resolve()
    files = collect_python_files(package)
    if not files:
        raise SystemExit(f"{package}: no .py files")
    sizes = [os.path.getsize(f) for f in files]
    total_bytes = sum(sizes)
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="graphmend-tool-speed-") as tmp:
        info = graphmend_info(binary, package, tmp) if "graphmend" in args.arms else None  # also warms the page cache
        if info and info["check_totals"]["files"] != len(files):
            raise SystemExit(f"graphmend checked {info['check_totals']['files']} files, this script found {len(files)}")
        lists = {}
        for t in args.threads:
            lists[t] = []
            for k, share in enumerate(split_by_bytes(sizes, t)):
                lf = Path(tmp) / f"files-{t}-{k}.txt"
                lf.write_text("".join(files[i] + "\n" for i in share))
                lists[t].append(lf)
        samples = {}
        plan = schedule(args.arms, args.threads, args.reps)
        for n, (rep, arm, t) in enumerate(plan, 1):
            if arm == "graphmend":
                s = measure_graphmend(binary, package, t)
            else:
                s = measure_python(arm, lists[t])
            s["rep"] = rep
            s["loadavg_1m"] = os.getloadavg()[0]
            samples.setdefault((arm, t), []).append(s)
            print(f"[{n}/{len(plan)}] rep {rep} {arm} threads={t}: {s['wall_s']:.2f} s, "
                  f"{s['peak_rss_kb'] / 1024:.0f} MB", file=sys.stderr, flush=True)
    rows = [result_row(arm, t, samples[(arm, t)], len(files), total_bytes)
            for t in args.threads for arm in args.arms]
    result = {
        "benchmark": "tool_speed",
        "schema_version": SCHEMA_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, "benchmarks/tool_speed.py", *(argv or sys.argv[1:])]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "loadavg_start": list(load_start), "loadavg_end": list(os.getloadavg())},
        "package": {"path": str(package), "name": package.name, "version": package_version(package.name),
                    "files": len(files), "bytes": total_bytes, "mb": total_bytes / 1e6},
        "graphmend": info,
        "libcst_version": package_version("libcst"),
        "reps": args.reps,
        "threads": args.threads,
        "notes": args.notes,
        "arms": {arm: ARM_DESCRIPTIONS[arm] for arm in args.arms},
        "results": rows,
        "ratios": ratios(rows, args.reps),
        "scaling": scaling(rows),
    }
    print(table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
