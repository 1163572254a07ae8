#!/usr/bin/env python3
"""Time of `graphmend check` against method-chain length and nesting depth (issue 12).

    depth_scaling.py [--json docs/results/depth-scaling.json] [--repeat 3]

Generates one model file per size: a forward whose `y = x.f().f()...` chain has N links
(N = 100 ... 1600), then one whose expression nests N unary minuses (N = 1000 ... 16000), each
next to a print that graphmend fixes, so every file goes through the whole pipeline; then one
whose forward holds N prints, N sites in one function (N = 500 ... 8000), and one whose
forward holds N data-dependent `if`s (GM201, whose per-site checks read the most of it). Runs
`graphmend check` on each (the best of --repeat runs) and reports seconds and seconds per 1,000
links or levels: linear growth keeps the second figure flat. A benchmark, not a test: nothing
fails on a slow machine. The binary comes from GRAPHMEND_BIN (default build/graphmend).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAD = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
TAIL = "        print(x.sum())\n        return y\n"


def chain(n):
    return HEAD + "        y = x" + ".f()" * n + "\n" + TAIL


def unary(n):
    return HEAD + "        y = " + "-" * n + "x\n" + TAIL


def prints(n):
    return HEAD + "        y = x\n" + "        print(x)\n" * n + TAIL


def ifs(n):
    return HEAD + "        y = x\n" + "        if x.sum() > 0:\n            x = x + 1\n" * n + TAIL


def best_time(binary, path, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([binary, "check", str(path), "--isolated", "--exit-zero", "-q"], capture_output=True)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"graphmend failed on {path}: exit {proc.returncode}\n{proc.stderr.decode()[-500:]}")
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=REPO / "docs" / "results" / "depth-scaling.json")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    binary = os.environ.get("GRAPHMEND_BIN", str(REPO / "build" / "graphmend"))
    series = {"chain": (chain, [100, 200, 400, 800, 1600]), "unary minus": (unary, [1000, 2000, 4000, 8000, 16000]),
              "prints in one function": (prints, [500, 1000, 2000, 4000, 8000]),
              "ifs in one function": (ifs, [250, 500, 1000, 2000, 4000])}
    out = {"binary": binary, "repeat": args.repeat, "series": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, sizes) in series.items():
            rows = []
            for n in sizes:
                path = Path(tmp) / f"{name.replace(' ', '_')}_{n}.py"
                path.write_text(make(n))
                s = best_time(binary, path, args.repeat)
                rows.append({"n": n, "seconds": round(s, 4), "seconds_per_1000": round(s / n * 1000, 4)})
                print(f"{name:12} n={n:6}  {s:8.3f} s  {s / n * 1000:7.4f} s per 1,000", flush=True)
            out["series"][name] = rows
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
