"""Child process of `graph_breaks.py --case`: one file, one mode, every input function.

    python case_arm.py --case FILE --mode eager|compiled --out RESULT.json --tensors T.pt
                       (--save-state SD.pt --save-inputs IN.pt | --load-state SD.pt --load-inputs IN.pt)
                       [--log-level LEVEL] [--grad]

Loads FILE as module `graphmend_case` (the same name in every arm, so
`logging.getLogger(__name__)` names the same logger), builds `Model()` after
torch.manual_seed(0), then either saves its state_dict and the inputs (each input
function called after torch.manual_seed(0)) or loads both (state strictly). For
each of example_inputs / other_inputs / third_inputs that exists, in that order,
on the same model instance: compiled mode resets Dynamo and compiles with the
counting backend (dynamic=False); then one call with fresh clones of the inputs,
under torch.no_grad() (as the reference measurement) unless --grad is given.
The calls share one warnings context, so once-only warning rules carry from
call to call as in a real process.

RESULT.json: setup messages (module load + construction), and per call the
outcome (exception type and message), messages, graph count, Dynamo break counter
and reasons. T.pt: {"outputs": {fn: [(path, leaf)]}, "buffers": [(name, tensor)]}.
"""
import os
import sys

# Run as a script: make `_harness` importable, keep its own folder off sys.path.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from _harness.capture import MessageRecorder  # noqa: E402  (no torch import)
from _harness.paths import PathMapper, standard_roots  # noqa: E402

MODULE_NAME = "graphmend_case"
INPUT_FUNCTIONS = ("example_inputs", "other_inputs", "third_inputs")


def parse_args(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--case", required=True)
    p.add_argument("--mode", choices=("eager", "compiled"), required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--tensors", required=True)
    p.add_argument("--save-state")
    p.add_argument("--load-state")
    p.add_argument("--save-inputs")
    p.add_argument("--load-inputs")
    p.add_argument("--log-level")
    p.add_argument("--grad", action="store_true", help="run the calls with autograd enabled")
    args = p.parse_args(argv)
    if bool(args.save_state) == bool(args.load_state) or bool(args.save_inputs) == bool(args.load_inputs):
        p.error("give --save-state/--save-inputs or --load-state/--load-inputs")
    return args


def _exception(exc):
    import traceback

    return {"type": type(exc).__name__, "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))[-3000:]}


def load_case(path):
    """Import `path` as module MODULE_NAME; returns the module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


def main(argv):
    args = parse_args(argv)
    case = os.path.realpath(args.case)
    paths = PathMapper([(case, os.path.basename(case))])
    recorder = MessageRecorder(paths)
    recorder.install()  # before torch binds sys.stderr anywhere

    import logging

    import torch

    for root, label in standard_roots():
        paths.add(root, label)
    if args.log_level:
        logging.getLogger().setLevel(args.log_level.upper())
    result = {"case": case, "mode": args.mode, "grad": args.grad, "torch": torch.__version__,
              "calls": []}

    with recorder.record() as setup:
        try:
            module = load_case(case)
            torch.manual_seed(0)
            model = module.Model()
            error = None
        except Exception as exc:
            error = _exception(exc)
    result["setup"] = {"messages": setup.to_json(), "exception": error}
    if error is not None:
        _write(args.out, result)
        return 3

    if args.save_state:
        torch.save(model.state_dict(), args.save_state)
        inputs = {}
        for name in INPUT_FUNCTIONS:
            if hasattr(module, name):
                torch.manual_seed(0)
                inputs[name] = tuple(getattr(module, name)())
        torch.save(inputs, args.save_inputs)
    else:
        model.load_state_dict(torch.load(args.load_state), strict=True)
        inputs = torch.load(args.load_inputs)

    outputs = {}
    with recorder.session():  # once-only warning rules carry across the calls
        for name, args_in in inputs.items():
            outputs[name] = run_call(recorder, model, name, args_in, args, result)

    buffers = [(n, b.detach().clone()) for n, b in model.named_buffers()]
    torch.save({"outputs": outputs, "buffers": buffers}, args.tensors)
    _write(args.out, result)
    return 0


def run_call(recorder, model, name, args_in, args, result):
    """One call of `model` on input function `name`'s inputs; returns the flattened output.

    Compiled mode resets Dynamo and compiles afresh. Appends the call's record
    (exception, messages, and in compiled mode graph and break counts) to
    result["calls"].
    """
    import torch

    from _harness import tensors
    from _harness.dynamo import GraphCounter

    counter = GraphCounter()
    fn = counter.compile(model) if args.mode == "compiled" else model
    call_args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args_in)
    out, error = None, None
    with recorder.record() as rec, torch.set_grad_enabled(args.grad):
        try:
            out = fn(*call_args)
        except Exception as exc:  # compared across arms by the parent
            error = _exception(exc)
    call = {"input": name, "exception": error, "messages": rec.to_json()}
    if args.mode == "compiled":
        call.update(graphs=counter.graphs, dynamo_breaks=counter.dynamo_breaks(),
                    break_reasons=counter.break_reasons())
    result["calls"].append(call)
    return tensors.flatten(out)


def _write(path, result):
    import json

    with open(path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
