"""Child process of `graph_breaks.py --model`: one arm (before or after), one compiled forward.

    python model_arm.py --model t5 --package-root DIR --out RESULT.json
                        --outputs OUT.pt (--save-state SD.pt | --load-state SD.pt)

--package-root is the folder `import transformers` must load from (the installed
package for "before", the fixed copy for "after"); the arm fails if it does not.
Writes RESULT.json: versions, transformers.__file__, graph count, Dynamo's break
counter and reasons, the recorded messages, the output digest, any exception;
OUT.pt holds the flattened output [(path, leaf)] for the parent to compare.
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
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    package_root = os.path.realpath(args.package_root)
    paths = PathMapper()
    recorder = MessageRecorder(paths)
    recorder.install()  # before torch and transformers bind sys.stderr

    import json

    import torch

    from _harness import tensors
    from _harness.dynamo import GraphCounter
    from _harness.models import MODELS

    spec = MODELS[args.model]
    package = __import__(spec.package)
    package_file = os.path.realpath(package.__file__)
    if not package_file.startswith(package_root + os.sep):
        raise SystemExit(f"{spec.package} loaded from {package_file}, expected under {package_root}")
    paths.add(package_root, spec.package)
    for root, label in standard_roots():
        paths.add(root, label)

    torch.manual_seed(0)
    model = spec.build()
    if args.save_state:
        torch.save(model.state_dict(), args.save_state)
    else:
        model.load_state_dict(torch.load(args.load_state), strict=True)
    torch.manual_seed(0)
    inputs = spec.inputs()

    counter = GraphCounter()
    compiled = counter.compile(model)
    exception = None
    out = None
    with recorder.record() as rec, torch.no_grad():
        try:
            out = compiled(**inputs)
        except Exception as exc:  # recorded, compared by the parent
            exception = {"type": type(exc).__name__, "message": str(exc)}
    leaves = tensors.flatten(out)
    torch.save(leaves, args.outputs)
    result = {
        "model": spec.name,
        "torch": torch.__version__,
        spec.package: package.__version__,
        "package_file": package_file,
        "graphs": counter.graphs,
        "breaks": counter.graphs - 1,
        "dynamo_breaks": counter.dynamo_breaks(),
        "break_reasons": counter.break_reasons(),
        "messages": rec.to_json(),
        "output_sha256": tensors.digest(leaves),
        "output_layout": tensors.describe(leaves),
        "exception": exception,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
