"""Child process of `graph_breaks.py --model`, run only when the fixed model's outputs are not
bit-equal to the original's: how far the original model compiled with Inductor (the default
backend users run; the arms count graphs with a backend that runs each FX graph as traced) is
from its own eager run. That gap is the tolerance the fixed model's outputs are held to.

    python eager_gap.py --model NAME --package-root DIR --load-state SD.pt --out GAP.pt
                        [--dtype float32|float16] [--batch B] [--tokens T] [--grad]

Builds the model as the arms do (torch.manual_seed(0), .to(dtype), the first arm's state),
makes the inputs after torch.manual_seed(0) (at --batch/--tokens as the arms do), and under
torch.no_grad() (with autograd enabled under --grad, as the arms then run) runs it eagerly and then
torch.compile(model) (Inductor, dynamic=False) once each, and a float64 copy of it eagerly (the
reference that says which float32 run is closer to float64 arithmetic, as benchmarks/moe_gaps.py
does). GAP.pt holds {"eager": leaves, "inductor": leaves, "float64": leaves or None,
"float64_error": None or why the model did not run in float64}, each leaves a list of
(path, leaf) for call 1.
"""
import copy
import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--package-root", required=True)
    p.add_argument("--load-state", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    p.add_argument("--batch", type=int)
    p.add_argument("--tokens", type=int)
    p.add_argument("--grad", action="store_true")
    args = p.parse_args(argv)

    import torch

    from _harness import tensors
    from _harness.models import get_spec, input_shape, make_inputs

    spec = get_spec(args.model)
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    model = spec.build().to(dtype)
    model.load_state_dict(torch.load(args.load_state), strict=True)
    torch.manual_seed(0)
    inputs = make_inputs(spec, dtype, input_shape(args.batch, args.tokens))
    with torch.set_grad_enabled(args.grad):
        eager = tensors.flatten(model(**inputs), "out")
        compiled = tensors.flatten(torch.compile(model, dynamic=False)(**inputs), "out")
        double, double_error = None, None
        try:  # some models fix a float32 dtype somewhere (DeepSeek-V3's index_add_)
            double = tensors.flatten(copy.deepcopy(model).to(torch.float64)(**{
                k: v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                for k, v in inputs.items()}), "out")
        except Exception as exc:  # noqa: BLE001 - recorded: the row has no float64 reference
            double_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    torch.save({"eager": eager, "inductor": compiled, "float64": double, "float64_error": double_error}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
