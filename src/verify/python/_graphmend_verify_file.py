"""`graphmend verify FILE.py`'s driver: a file that defines Model and example_inputs(), compiled and called.

    python -m _graphmend_verify_file FILE.py [--device D] [--calls N]

The cases' convention (tests/cases/README.md): FILE defines `Model` (an nn.Module built with no
arguments) and `example_inputs()` (a tuple of positional arguments, or a dict of keyword
arguments). Other functions the file may define (other_inputs, third_inputs, training steps)
are not run: only example_inputs' forward is.

What it does, matched to the harness's compiled arm (benchmarks/_harness/case_arm.py), so that
the graphs it makes are the ones `graph_breaks.py --case FILE` reports as `graphs_before`
(the example_inputs call):

- FILE's folder goes first on sys.path and FILE is imported as the module named after its stem,
  by `importlib.import_module`, i.e. through `sys.meta_path`, where verify's redirecting finder
  sits first (its second run then loads the fixed copy). The harness loads it under the name
  `graphmend_case` instead; that changes logger names only, which both of verify's runs share.
  A stem that is not a plain module name, or one already imported (`torch`, `json`), is loaded
  from the file directly under that name (the redirect then does not apply to FILE itself).
- `torch.manual_seed(0)`, `Model()`; the model stays in the mode its constructor leaves
  (training mode for an nn.Module): the harness calls no `eval()` either.
- `torch.manual_seed(0)`, `example_inputs()`; tensors are moved to --device (default cpu).
- `torch.compile(model, dynamic=False)` (the harness: the same with its counting backend),
  then N calls (default 1) on the same inputs under `torch.no_grad()`, as the harness's
  default (it runs with autograd only under --grad). The harness gives each call fresh clones
  of the inputs; so does this driver, so an in-place op on an input does not leak into the
  next call.

Exit 0 on success; on failure the traceback goes to stderr and the exit code is 1. Nothing is
printed to stdout but what the model prints (verify compares the two runs' stdout).

GRAPHMEND_VERIFY_DRIVER_COUNT=PATH (for tests, undocumented in verify's help): compile with a
counting backend that runs each FX graph as traced, and write `{"graphs": total, "per_call":
[graphs made by each call]}` to PATH.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from _graphmend_verify_driver import COUNT_ENV, compile_and_call, run_main  # noqa: F401  (COUNT_ENV: tests)



class FileError(Exception):
    """FILE does not follow the convention (no Model, no example_inputs)."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m _graphmend_verify_file",
                                description="Import FILE, build Model(), torch.compile it and call it "
                                            "on example_inputs().")
    p.add_argument("file")
    p.add_argument("--device", default="cpu")
    p.add_argument("--calls", type=int, default=1, help="compiled calls on the same inputs (default 1)")
    args = p.parse_args(argv)
    if args.calls < 1:
        p.error("--calls must be at least 1")
    return args


def import_file(path):
    """Import `path` as the module named after its stem, its folder first on sys.path."""
    folder = os.path.dirname(path)
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, folder)
    if name.isidentifier() and name not in sys.modules:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and os.path.basename(spec.origin) == os.path.basename(path):
            return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _to(value, device):
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_to(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value


def _fresh(value):
    """`value` with every tensor cloned (the harness calls on fresh clones)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def run(args):
    path = os.path.abspath(args.file)
    if not os.path.isfile(path):
        raise FileError(f"no such file: {path}")
    module = import_file(path)
    for name in ("Model", "example_inputs"):
        if not hasattr(module, name):
            raise FileError(f"{path} defines no {name} (the convention: Model and example_inputs())")

    import torch

    torch.manual_seed(0)
    model = module.Model().to(args.device)
    torch.manual_seed(0)
    inputs = module.example_inputs()
    if isinstance(inputs, dict):
        args_in, kwargs_in = (), _to(inputs, args.device)
    elif isinstance(inputs, (list, tuple)):
        args_in, kwargs_in = tuple(_to(v, args.device) for v in inputs), {}
    else:
        raise FileError(f"example_inputs() returned a {type(inputs).__name__}: want a tuple of positional "
                        "arguments or a dict of keyword arguments")

    compile_and_call(torch, model, args.calls, lambda compiled: compiled(*_fresh(args_in), **_fresh(kwargs_in)))


def main(argv=None):
    return run_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
