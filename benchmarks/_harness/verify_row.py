"""The command `graphmend verify` runs for a reference row (benchmarks/verify_agreement.py).

    python verify_row.py --model NAME [--dtype float32|float16] [--calls N]

Builds the model as the harness's model arm does (benchmarks/_harness/model_arm.py): the
registry's builder after torch.manual_seed(0), `.to(dtype)`, its inputs after
torch.manual_seed(0), `torch.compile(model, dynamic=False)` and N calls on the same inputs
under torch.no_grad(). No counting backend of its own and no message capture: verify's hook
wraps torch.compile and records the graphs, breaks and outputs. Run under
`graphmend verify <site-packages>/transformers/models/<name> -- python verify_row.py ...`, the
fixed run loads the fixed copy of that folder in place of the installed one.
"""
import argparse
import os
import sys

# Run as a script: make `_harness` importable, keep its own folder off sys.path.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    p.add_argument("--calls", type=int, default=1)
    args = p.parse_args(argv)

    import torch

    from _harness.models import get_spec, make_inputs

    spec = get_spec(args.model)
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    model = spec.build().to(dtype)
    torch.manual_seed(0)
    inputs = make_inputs(spec, dtype)
    compiled = torch.compile(model, dynamic=False)
    with torch.no_grad():
        for _ in range(args.calls):
            compiled(**inputs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
