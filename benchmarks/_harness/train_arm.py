"""Child side of the `gradients` and `training` expectations of a case (tests/cases/README.md).

    python -m _harness.train_arm ORIGINAL FIXED --key gradients|training --out JSON

Runs in a fresh process: loads both files as modules, builds the original Model once
with a fixed seed and gives the fixed Model the same state. Then, for the original run
eagerly as the reference, and for the original compiled, the fixed eager and the fixed
compiled (counting backend, dynamic=False):

gradients: for each input function, floating inputs requiring grad, out.sum().backward();
    input and parameter gradients must equal the reference's bit for bit, and a gradient
    that is None there must be None here.
training: three SGD steps (lr 0.1, momentum 0.9, weight decay 0.1) on the sum of the
    outputs, the input functions taken in turn; parameters after each step equal, and the
    same parameters had no gradient at each step.

Writes {"ok": bool, "details": [str]}.
"""
import argparse
import importlib.util
import json
import sys

import torch

INPUT_FUNCTIONS = ("example_inputs", "other_inputs", "third_inputs")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def input_functions(module):
    return [getattr(module, n) for n in INPUT_FUNCTIONS if hasattr(module, n)]


def make(module, state, compiled):
    torch._dynamo.reset()
    model = module.Model()
    model.load_state_dict(state, strict=True)
    fn = torch.compile(model, backend=lambda gm, ex: gm.forward, dynamic=False) if compiled else model
    return model, fn


def grads_run(module, state, compiled, fn_name):
    model, fn = make(module, state, compiled)
    inputs = [t.clone().requires_grad_(t.is_floating_point()) for t in getattr(module, fn_name)()]
    try:
        out = fn(*inputs)
        out.sum().backward()
    except Exception as exc:  # the same exception is the same behaviour
        return ("raised", type(exc).__name__, str(exc))
    grads = [t.grad for t in inputs] + [p.grad for _, p in model.named_parameters()]
    return ("ok", out.detach(), grads)


def training_run(module, state, compiled, fns):
    model, fn = make(module, state, compiled)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
    steps = []
    for step in range(3):
        inputs = fns[step % len(fns)]()
        opt.zero_grad(set_to_none=True)
        try:
            fn(*inputs).sum().backward()
        except Exception as exc:
            steps.append(("raised", type(exc).__name__, str(exc)))
            continue
        none = [name for name, p in model.named_parameters() if p.grad is None]
        opt.step()
        steps.append(("ok", none, [p.detach().clone() for p in model.parameters()]))
    return steps


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)


def compare_grads(want, got, label, details):
    if want[0] != got[0] or (want[0] == "raised" and want != got):
        details.append(f"{label}: {got[:3] if got[0] == 'raised' else 'ran'} where the original "
                       f"{want[:3] if want[0] == 'raised' else 'ran'}")
        return
    if want[0] == "raised":
        return
    if not same(want[1], got[1]):
        details.append(f"{label}: outputs differ")
    for i, (w, g) in enumerate(zip(want[2], got[2])):
        if (w is None) != (g is None):
            details.append(f"{label}: gradient {i} is {'None' if g is None else 'a tensor'}, "
                           f"the original's is {'None' if w is None else 'a tensor'}")
        elif w is not None and not same(w, g):
            details.append(f"{label}: gradient {i} differs")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("original")
    p.add_argument("fixed")
    p.add_argument("--key", choices=("gradients", "training"), required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    orig, fixed = load(args.original, "gm_original"), load(args.fixed, "gm_fixed")
    torch.manual_seed(0)
    state = orig.Model().state_dict()
    details = []
    arms = ((orig, True, "original compiled"), (fixed, False, "fixed eager"), (fixed, True, "fixed compiled"))
    if args.key == "gradients":
        for fn_name in [f.__name__ for f in input_functions(orig)]:
            want = grads_run(orig, state, False, fn_name)
            for module, compiled, label in arms:
                compare_grads(want, grads_run(module, state, compiled, fn_name), f"{fn_name}, {label}", details)
    else:
        want = training_run(orig, state, False, input_functions(orig))
        for module, compiled, label in arms:
            got = training_run(module, state, compiled, input_functions(module))
            for step, (w, g) in enumerate(zip(want, got), start=1):
                if w[0] != g[0] or (w[0] == "raised" and w != g):
                    details.append(f"{label}, step {step}: {g[:3] if g[0] == 'raised' else 'ran'}")
                    continue
                if w[0] == "raised":
                    continue
                if w[1] != g[1]:
                    details.append(f"{label}, step {step}: parameters without gradient {g[1]}, "
                                   f"the original's {w[1]}")
                if not all(same(a, b) for a, b in zip(w[2], g[2])):
                    details.append(f"{label}, step {step}: parameters differ after the optimizer step")
    with open(args.out, "w") as f:
        json.dump({"ok": not details, "details": details}, f)


if __name__ == "__main__":
    main()
