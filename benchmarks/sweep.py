#!/usr/bin/env python3
"""The project's sweep: graph breaks before and after `graphmend fix` over many architectures.

    .venv/bin/python benchmarks/sweep.py [--env pins|latest|both] [--rows gpt2,t5,...|moe]
                                         [--json-dir docs/results] [--report docs/RESULTS.md]
                                         [--batch B] [--tokens T] [--grad] [--name NAME]

Runs the sweep suite (every architecture of _harness/sweep.py: decoder LMs, MoE, encoders,
encoder-decoders, vision and audio, each from its AutoConfig shrunk to a small size, random
weights, float32) the way `graph_breaks.py --suite sweep` does: per row two fresh processes,
the environment's transformers against a copy fixed by graphmend, comparing breaks, Dynamo's
counter, outputs, messages, and listing every break left with its kind and site. An
architecture that the environment's transformers lacks, or no longer builds, is a row
"not available at this version: <reason>".

--env pins (default) runs the arms with .venv (torch 2.12.1, transformers 4.52.4), latest with
.venv-latest (scripts/setup_latest.sh), both runs pins then latest. Each environment writes
<json-dir>/sweep-<env>.json (after every row); then benchmarks/report.py remakes the report
from <json-dir> (--report; default docs/RESULTS.md for the default --json-dir, else
<json-dir>/RESULTS.md). --rows keeps some rows; it needs a --json-dir other than
docs/results, so that a partial run never replaces the whole sweep's results. --merge-into DIR
then puts the rows measured into DIR/sweep-<env>.json (a whole run), records them there under
"remeasured" (the report names them, with the binary that measured them), makes the totals
again, and remakes DIR's report (docs/RESULTS.md for docs/results). It merges nothing when a
row failed, or when any environment cannot be merged. `--rows moe` names the mixture-of-experts
rows (_harness/sweep.py's MOE; graph_breaks.py --suite sweep takes it too).

--batch and --tokens run every row on token ids of shape (B, T) instead of the sweep's (1, 8)
(image and audio inputs take B), --grad with autograd enabled instead of torch.no_grad() (the
forward only); the JSON records the setting. --name NAME writes <json-dir>/sweep-NAME-<env>.json
instead of sweep-<env>.json, so that a run at another setting, or of some rows, sits next to the
whole sweep's results without replacing them: with --name, --rows may write into docs/results.
A setting other than the sweep's needs --name or another --json-dir; --merge-into takes neither.
The MoE rows at four settings (docs/RESULTS.md section 4b):

    .venv/bin/python benchmarks/sweep.py --rows moe --name moe-b1t8
    .venv/bin/python benchmarks/sweep.py --rows moe --tokens 16 --name moe-b1t16
    .venv/bin/python benchmarks/sweep.py --rows moe --batch 2 --tokens 16 --name moe-b2t16
    .venv/bin/python benchmarks/sweep.py --rows moe --grad --name moe-grad

Exit: 0 every row measured (or not available at that version), 1 a row failed, 2 usage or
set-up error (venv or graphmend binary missing, unknown row).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
ENV_CHOICES = {"pins": ("pins",), "latest": ("latest",), "both": ("pins", "latest")}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", choices=sorted(ENV_CHOICES), default="pins",
                   help="pins (.venv, default), latest (.venv-latest) or both, pins first")
    p.add_argument("--rows", metavar="NAME,...", help="only these architectures (gpt2 or gpt2/float32)")
    p.add_argument("--json-dir", metavar="DIR", type=Path, default=RESULTS,
                   help="where sweep-<env>.json go (default docs/results)")
    p.add_argument("--report", metavar="OUT.md", type=Path,
                   help="the report remade from --json-dir (default docs/RESULTS.md, or "
                        "<json-dir>/RESULTS.md for another --json-dir)")
    p.add_argument("--keep", metavar="DIR", help="keep the work files (fixed copy, arm outputs) in DIR/<env>")
    p.add_argument("--merge-into", metavar="DIR", type=Path,
                   help="with --rows: merge the rows measured into DIR/sweep-<env>.json and remake its report")
    p.add_argument("--batch", type=int, metavar="B", help="the inputs' batch (default 1)")
    p.add_argument("--tokens", type=int, metavar="T", help="tokens per sequence (default 8)")
    p.add_argument("--grad", action="store_true", help="run the forwards with autograd enabled")
    p.add_argument("--name", metavar="NAME", help="write sweep-NAME-<env>.json instead of sweep-<env>.json")
    args = p.parse_args(argv)
    from _harness.models import input_shape

    try:
        args.shape = input_shape(args.batch, args.tokens)
    except ValueError as exc:
        p.error(str(exc))
    if args.name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", args.name):
        p.error(f"--name {args.name!r}: letters, digits, '.', '_' and '-' only")
    if args.merge_into and not args.rows:
        p.error("--merge-into needs --rows")
    if args.merge_into and (args.name or args.shape or args.grad):
        p.error("--merge-into merges into the whole sweep: not with --name, --batch, --tokens or --grad")
    into_results = args.json_dir.resolve() == RESULTS.resolve()
    if args.rows and into_results and not args.name:
        p.error("--rows needs --json-dir DIR or --name: a few rows must not replace docs/results/sweep-*.json")
    if (args.shape or args.grad) and into_results and not args.name:
        p.error("--batch, --tokens and --grad need --name or --json-dir DIR: another setting must not replace "
                "docs/results/sweep-*.json")
    if args.report is None:
        args.report = (REPO / "docs" / "RESULTS.md" if args.json_dir.resolve() == RESULTS.resolve()
                       else args.json_dir / "RESULTS.md")
    return args


def json_path(json_dir, env, name=None):
    return Path(json_dir) / (f"sweep-{name}-{env}.json" if name else f"sweep-{env}.json")


def run(envs, only, json_dir, keep=None, name=None, shape=None, grad=False):
    """Run the sweep suite in each environment of `envs`; returns the worst exit code."""
    from _harness import fixer, suite

    try:  # every check before the first (long) run
        suite.check_setting(suite.select_rows("sweep", only), shape)
        for env in envs:
            suite.env_python(env)
        fixer.fixer_command()
    except (ValueError, FileNotFoundError, fixer.FixerMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    codes = [suite.main_suite("sweep", env, json_path(json_dir, env, name), str(Path(keep) / env) if keep else None,
                              only, shape, grad)
             for env in envs]
    return max(codes)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    only = args.rows.split(",") if args.rows else None
    code = run(ENV_CHOICES[args.env], only, args.json_dir, args.keep, args.name, args.shape, args.grad)
    if code == 2:
        return code
    import report

    report.main(["--results", str(args.json_dir), "--out", str(args.report)])
    if args.merge_into:
        if code != 0:
            print(f"error: not merged into {args.merge_into}: a row failed", file=sys.stderr)
            return code
        code = merge(ENV_CHOICES[args.env], args.json_dir, args.merge_into)
    return code


def merge(envs, part_dir, whole_dir):
    """--merge-into: each environment's rows of part_dir into whole_dir's JSON, then its report.
    Every environment is merged in memory first: where one cannot be (a file missing, another
    environment), nothing is written. Returns 0, or 2 with the reason on stderr."""
    import json

    from _harness import suite

    merged = {}
    for env in envs:
        whole_path, part_path = json_path(whole_dir, env), json_path(part_dir, env)
        try:
            part = json.loads(part_path.read_text())
            merged[whole_path] = (suite.merge_remeasured(json.loads(whole_path.read_text()), part), len(part["rows"]))
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: cannot merge {part_path} into {whole_path}: {exc}", file=sys.stderr)
            return 2
    for whole_path, (whole, rows) in merged.items():
        tmp = Path(str(whole_path) + ".tmp")
        tmp.write_text(json.dumps(whole, indent=1))
        os.replace(tmp, whole_path)
        print(f"merged {rows} rows into {whole_path}")
    import report

    out = REPO / "docs" / "RESULTS.md" if whole_dir.resolve() == RESULTS.resolve() else whole_dir / "RESULTS.md"
    report.main(["--results", str(whole_dir), "--out", str(out)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
