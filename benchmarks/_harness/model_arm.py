"""Child process of `graph_breaks.py --model`: one arm (before or after), N compiled forwards.

    python model_arm.py --model t5 --package-root DIR --out RESULT.json
                        --outputs OUT.pt (--save-state SD.pt | --load-state SD.pt)
                        [--dtype float32|float16] [--calls N] [--batch B] [--tokens T] [--grad]

--package-root is the folder `import transformers` must load from (the installed
package for "before", the fixed copy for "after"); the arm fails if it does not.
The model is built after torch.manual_seed(0), converted with .to(dtype), then its
state_dict is saved (first arm) or loaded strictly (second arm). The inputs are
made once (after torch.manual_seed(0)), at (B, T) where --batch or --tokens is given (the
sweep's rows only; models.make_inputs); one compiled model (counting backend,
dynamic=False) is called N times on them under torch.no_grad() (with autograd enabled under
--grad: the forward only, no backward; the model stays in eval mode), all calls in one
message recording.

A model that the installed package lacks or cannot build (the spec raises NotAvailable)
gives RESULT.json {model, versions, package_file, not_available: the reason} and nothing else.
Otherwise RESULT.json holds: versions, transformers.__file__, dtype, calls; the model's class,
module, config class and config (difference to the defaults); the first
call's graph count, breaks, Dynamo's break counter and reasons, where each of its graphs
comes from (`graph_sites`: ops, first and last user-code file:line); graphs after all
calls and `recompiles` (graphs made by calls 2..N); `break_sites` (file:line and
reason of every break Dynamo logged, all calls) and `recompile_reasons`; the
recorded messages, the output digest, any exception (with the call index; file names
mapped, object addresses dropped).
OUT.pt holds the flattened outputs [(path, leaf)] of every call for the parent
to compare: call 1 under "out", call i > 1 under "out@call<i>".
"""
import os
import sys

# Run as a script: make `_harness` importable, keep its own folder off sys.path.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from _harness.capture import MessageRecorder  # noqa: E402  (no torch import)
from _harness.paths import PathMapper, standard_roots  # noqa: E402


def parse_args(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--package-root", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--outputs", required=True)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--save-state")
    group.add_argument("--load-state")
    p.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    p.add_argument("--calls", type=int, default=1)
    p.add_argument("--batch", type=int)
    p.add_argument("--tokens", type=int)
    p.add_argument("--grad", action="store_true")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    package_root = os.path.realpath(args.package_root)
    paths = PathMapper()
    recorder = MessageRecorder(paths)
    recorder.install()  # before torch and transformers bind sys.stderr

    import json
    import logging

    import torch
    from torch._logging._internal import handlers as torch_log_handlers

    # torch's log handlers, made on import, bound the capturing stderr. What they print is the
    # compiler's own diagnostics (time, pid, frame ids; e.g. Dynamo's Tensor.item() warning),
    # already recorded as "framework" log records: print it to the real stderr instead.
    for handler in list(torch_log_handlers):
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr:
            handler.setStream(recorder.real_stderr)
        elif not isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) is sys.stderr:
            # Newer torch (2.15): a handler whose `stream` property follows sys.stderr.
            handler.__class__ = _fixed_stream_class(type(handler), recorder.real_stderr)

    from _harness import tensors
    from _harness.dynamo import DynamoLog, GraphCounter
    from _harness.models import NotAvailable, get_spec, input_shape, make_inputs

    spec = get_spec(args.model)
    package = __import__(spec.package)
    package_file = os.path.realpath(package.__file__)
    if not package_file.startswith(package_root + os.sep):
        raise SystemExit(f"{spec.package} loaded from {package_file}, expected under {package_root}")
    paths.add(package_root, spec.package)
    for root, label in standard_roots():
        paths.add(root, label)

    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    try:
        model = spec.build().to(dtype)
    except NotAvailable as exc:  # not a failure: this package version lacks the model
        with open(args.out, "w") as f:
            json.dump({"model": spec.name, "torch": torch.__version__, spec.package: package.__version__,
                       "package_file": package_file, "not_available": str(exc)}, f, indent=1)
        return 0
    if args.save_state:
        torch.save(model.state_dict(), args.save_state)
    else:
        model.load_state_dict(torch.load(args.load_state), strict=True)
    torch.manual_seed(0)
    inputs = make_inputs(spec, dtype, input_shape(args.batch, args.tokens))
    built = _describe_model(model)

    counter = GraphCounter(paths)
    compiled = counter.compile(model)
    dynamo_log = DynamoLog(paths)
    exception = None
    leaves = []
    first = None  # graph and break figures after call 1
    with recorder.record() as rec, dynamo_log, torch.set_grad_enabled(args.grad):
        for call in range(1, args.calls + 1):
            dynamo_log.call = call
            try:
                out = compiled(**inputs)
            except Exception as exc:  # recorded, compared by the parent
                exception = {"type": type(exc).__name__, "message": _portable(str(exc), dynamo_log), "call": call}
                out = None
            leaves += tensors.flatten(out, "out" if call == 1 else f"out@call{call}")
            if call == 1:
                first = (counter.graphs, counter.dynamo_breaks(), counter.break_reasons())
            if exception is not None:
                break
    torch.save(leaves, args.outputs)
    graphs, dynamo_breaks, break_reasons = first
    result = {
        "model": spec.name,
        "torch": torch.__version__,
        spec.package: package.__version__,
        "package_file": package_file,
        "dtype": args.dtype,
        "calls": args.calls,
        "input_shape": input_shape(args.batch, args.tokens),
        "grad": args.grad,
        "graphs": graphs,
        "breaks": graphs - 1,
        "dynamo_breaks": dynamo_breaks,
        "break_reasons": break_reasons,
        "graph_sites": counter.graph_sites[:graphs],
        "graphs_first_call": graphs,
        "graphs_all_calls": counter.graphs,
        "recompiles": counter.graphs - graphs,
        "break_sites": dynamo_log.break_sites,
        "recompile_reasons": dynamo_log.recompiles,
        "messages": rec.to_json(),
        "output_sha256": tensors.digest(leaves),
        "output_layout": tensors.describe(leaves),
        "exception": exception,
        **built,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


def _portable(text, dynamo_log):
    """An exception's text with file names mapped (as in break sites) and object addresses
    dropped, so that the same exception reads the same in both arms."""
    import re

    return re.sub(r" at 0x[0-9a-fA-F]+", "", dynamo_log._map_files(text))


def _fixed_stream_class(cls, stream):
    """A subclass of handler class `cls` whose `stream` is always `stream`."""
    return type(cls.__name__, (cls,), {"stream": property(lambda self: stream)})


def _describe_model(model):
    """{"model_class", "model_module", "config_class", "config"} of the built model.

    config is the config's difference to its class defaults (to_json_string(use_diff=True)),
    as this transformers version built it; None when the model has no transformers config.
    """
    import json

    config = getattr(model, "config", None)
    described = {"model_class": type(model).__name__, "model_module": type(model).__module__,
                 "config_class": type(config).__name__ if config is not None else None, "config": None}
    if config is not None and hasattr(config, "to_json_string"):
        try:
            described["config"] = json.loads(config.to_json_string(use_diff=True))
        except Exception as exc:  # a description only: never fail the arm for it
            described["config"] = {"error": f"{type(exc).__name__}: {exc}"}
    return described


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
