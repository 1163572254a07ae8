#!/usr/bin/env python3
"""Count TorchDynamo graph breaks before and after `graphmend fix`, and check behaviour.

    graph_breaks.py --model t5 [--dtype float16] [--calls 2] --json OUT.json
        Builds a small transformers model (random weights, no download) in two
        fresh processes, on the installed package and on a copy fixed by
        graphmend, converts it to --dtype and calls it --calls times; compares
        graph counts, recompiles, outputs (bit-equal) and messages, and lists
        the file:line and reason of every break left.
    graph_breaks.py --case PATH --json OUT.json
        Fixes one single-file model (defines Model, example_inputs(), maybe
        other_inputs()/third_inputs(), header lines `# expect: KEY: VALUE`), runs
        original and fixed, eager and compiled, and checks every expectation.

    graph_breaks.py --suite reference [--env pins|latest] [--rows NAME,...] --json OUT.json
        Every row of docs/reference.md section 2 the harness can build (the
        --model measurement per row; BART, Marian and Whisper also in float16),
        next to the reference's figures, with totals and the versions used.
        --env pins (default) runs the arms with .venv (torch 2.12.1,
        transformers 4.52.4), --env latest with .venv-latest
        (scripts/setup_latest.sh). --rows keeps the named rows (row "bart/float16"
        or model "bart"); --list prints the rows and runs nothing. A failing row
        is recorded in its entry and the suite goes on.
    graph_breaks.py --suite sweep [--rows gpt2,t5,...] --json OUT.json
        The same for every architecture of _harness/sweep.py (over 60 transformers
        classes, each from its AutoConfig shrunk to a small size, random weights,
        float32); rows made worse by the fix (breaks up, outputs or messages
        differ) are flagged in the JSON ("flags", totals "flagged") and the summary.
        An architecture that the environment's transformers lacks, or no longer builds
        from its config, is a row "not available at this version: <reason>" (totals
        "rows_not_available"), not a failure. benchmarks/sweep.py runs this suite at
        both pins and remakes docs/RESULTS.md.
    graph_breaks.py --suite sweep --batch 2 --tokens 16 [--grad] ...
        A setting other than the sweep's input (1 x 8 tokens, torch.no_grad()) for every
        row: token ids of shape (batch, tokens) (image and audio inputs take the batch),
        and with --grad the forwards run with autograd enabled (the forward only, no
        backward; the model stays in eval mode). --model sweep:ARCH takes them too.

The graphmend binary comes from env GRAPHMEND_BIN (default <repo>/build/graphmend).
Run with the project's venv (.venv/bin/python). Exit: 0 ok, 1 a check failed or
behaviour differs (a suite: a row failed), 2 usage or set-up error (binary missing,
unknown model, or --model not available in this transformers).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
    from _harness.models import MODELS
    from _harness.suite import ENVS, SUITES

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help=f"one of: {', '.join(sorted(MODELS))}; or sweep:ARCH, a row of --suite sweep")
    what.add_argument("--case", metavar="PATH", help="a single-file model following tests/cases")
    what.add_argument("--suite", choices=sorted(SUITES),
                      help="every row of a suite (reference: docs/reference.md section 2; "
                           "sweep: many architectures from small configs)")
    p.add_argument("--env", choices=sorted(ENVS),
                   help="--suite only: the arms' environment: pins (.venv, default) or latest (.venv-latest)")
    p.add_argument("--rows", metavar="NAME,...",
                   help="--suite only: run only these rows (row name such as bart/float16, or model name; "
                        "moe: the sweep's mixture-of-experts rows)")
    p.add_argument("--list", action="store_true", help="--suite only: print the rows, run nothing")
    p.add_argument("--json", metavar="OUT.json", help="write the full result here")
    p.add_argument("--keep", metavar="DIR", help="keep the work files (fixed copy, arm outputs) in DIR")
    p.add_argument("--log-level", metavar="LEVEL",
                   help="--case only: set the root logger's level in every arm (default: leave it)")
    p.add_argument("--grad", action="store_true",
                   help="call the model with autograd enabled (default: torch.no_grad()); the forward only")
    p.add_argument("--batch", type=int, metavar="B",
                   help="--suite sweep or --model sweep:ARCH: the inputs' batch (default 1)")
    p.add_argument("--tokens", type=int, metavar="T",
                   help="--suite sweep or --model sweep:ARCH: tokens per sequence (default 8)")
    p.add_argument("--dtype", choices=("float32", "float16"),
                   help="--model only: convert the model with .to(dtype) (default float32)")
    p.add_argument("--calls", type=int, metavar="N",
                   help="--model only: forwards on the same inputs (default 1); "
                        "graphs made by calls 2..N are reported as recompiles")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="--model or --case: fix the copy with `graphmend fix --unsafe-fixes`")
    args = p.parse_args(argv)
    if args.unsafe_fixes and not (args.model or args.case):
        p.error("--unsafe-fixes applies to --model and --case only")
    if (args.case or args.suite) and (args.dtype or args.calls):
        p.error("--dtype and --calls apply to --model only")
    if not args.suite and (args.env or args.rows or args.list):
        p.error("--env, --rows and --list apply to --suite only")
    if args.suite and args.log_level:
        p.error("--log-level applies to --case only")
    if args.case and (args.batch is not None or args.tokens is not None):
        p.error("--batch and --tokens apply to --suite sweep and --model sweep:ARCH only")
    try:
        from _harness.models import input_shape

        args.shape = input_shape(args.batch, args.tokens)
    except ValueError as exc:
        p.error(str(exc))
    if args.suite and not args.list and not args.json:
        p.error("--suite needs --json OUT.json (or --list)")
    if args.calls is not None and args.calls < 1:
        p.error("--calls must be at least 1")
    return args


def _list_line(row):
    """--list: the reference row and its figures, or (no reference) the model's description."""
    if row.reference is None:
        from _harness.models import get_spec

        return get_spec(row.model).description
    before, after = row.reference_figures()
    return f"{row.reference.label} (reference {before} -> {after})"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.suite:
        from _harness import suite

        only = args.rows.split(",") if args.rows else None
        if args.list:
            try:
                rows = suite.select_rows(args.suite, only)
            except ValueError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            for row in rows:
                print(f"{row.name:26} {_list_line(row)}" + ("" if row.in_totals else " [not in totals]"))
            return 0
        return suite.main_suite(args.suite, args.env or "pins", args.json, args.keep, only, args.shape, args.grad)
    if args.model:
        from _harness.model_bench import main_model

        return main_model(args.model, args.json, args.keep, args.dtype or "float32", args.calls or 1,
                          args.unsafe_fixes, args.shape, args.grad)
    from _harness.case_bench import main_case

    return main_case(args.case, args.json, args.keep, args.log_level, args.grad, args.unsafe_fixes)


if __name__ == "__main__":
    sys.exit(main())
