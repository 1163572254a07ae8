"""Child process of `moe_gaps.py`: one arm (the installed transformers, or the fixed copy on
PYTHONPATH) runs sweep rows on several inputs and saves every output.

    python moe_gaps_arm.py --arm original|fixed --rows dbrx,mixtral --inputs 5
                           --state-dir DIR --out OUT.pt

Per row: torch.manual_seed(0), the sweep's build(), float32 (the original arm saves the
state_dict into DIR/<row>.pt, the fixed arm loads it strictly). Per input k (0..inputs-1):
torch.manual_seed(k), the sweep's inputs() (input 0 is the sweep's own input). Under
torch.no_grad() it runs:
  - "traced": torch.compile(model, backend=<counting>, dynamic=False), each FX graph run as
    traced (the kind of backend the sweep's arms count graphs with), and "graphs", how many
    FX graphs it made (1 where a static form was taken and nothing else breaks);
  - "inductor": torch.compile(model, dynamic=False), Inductor, what users run;
  - original arm only: "eager" (float32) and "float64" (a deep copy in float64, eagerly: the
    reference both float32 runs are measured against; None, with the error under
    (row, "float64_error"), where the model does not run in float64).
Dynamo is reset before each compiled run. OUT.pt holds {(row, k, run): [(path, leaf), ...]}.
"""
import copy
import os
import sys

sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--arm", choices=("original", "fixed"), required=True)
    p.add_argument("--rows", required=True)
    p.add_argument("--inputs", type=int, default=5)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)

    import torch

    from _harness import tensors
    from _harness.models import get_spec

    out = {}
    for row in args.rows.split(","):
        spec = get_spec("sweep:" + row)
        torch.manual_seed(0)
        model = spec.build().to(torch.float32)
        state = os.path.join(args.state_dir, row + ".pt")
        if args.arm == "original":
            torch.save(model.state_dict(), state)
            double = copy.deepcopy(model).to(torch.float64)
        else:
            model.load_state_dict(torch.load(state), strict=True)
        for k in range(args.inputs):
            torch.manual_seed(k)
            inputs = spec.inputs(torch.float32)
            with torch.no_grad():
                if args.arm == "original":
                    out[(row, k, "eager")] = tensors.flatten(model(**inputs), "out")
                    try:  # some models fix a float32 dtype somewhere (DeepSeek-V3's index_add_)
                        out[(row, k, "float64")] = tensors.flatten(double(**spec_inputs_double(inputs)), "out")
                    except Exception as exc:  # noqa: BLE001 - recorded, the row has no float64 reference
                        out[(row, k, "float64")] = None
                        out[(row, "float64_error")] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                torch._dynamo.reset()
                graphs = []

                def counting(gm, example_inputs, graphs=graphs):
                    graphs.append(gm)
                    return gm.forward

                out[(row, k, "traced")] = tensors.flatten(
                    torch.compile(model, backend=counting, dynamic=False)(**inputs), "out")
                out[(row, k, "graphs")] = len(graphs)
                torch._dynamo.reset()
                out[(row, k, "inductor")] = tensors.flatten(torch.compile(model, dynamic=False)(**inputs), "out")
        print(f"{args.arm}: {row} done", file=sys.stderr, flush=True)
    torch.save(out, args.out)
    return 0


def spec_inputs_double(inputs):
    """The same inputs with floating tensors in float64 (ids stay integers)."""
    import torch

    return {k: v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
            for k, v in inputs.items()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
