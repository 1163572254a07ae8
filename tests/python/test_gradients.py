"""Gradients of the fixed model equal the original's (issue 3: c04, c05, c06).

For each input function of the case, with requires_grad inputs and autograd on: the
original and the graphmend-fixed model, each run eagerly and compiled (counting backend,
dynamic=False), give bit-identical outputs and bit-identical gradients of the inputs and
of every parameter.
"""
import sys

import pytest
import torch

from conftest import REPO, fix_copy, load_module, require_graphmend

CASES = ["c04_where_if_else", "c05_where_else_less", "c06_where_both_return"]




def _run(module, inputs_fn, compiled, state):
    torch._dynamo.reset()
    model = module.Model()
    model.load_state_dict(state, strict=True)
    inputs = [t.clone().requires_grad_(t.is_floating_point()) for t in getattr(module, inputs_fn)()]
    graphs = []
    fn = torch.compile(model, backend=lambda gm, ex: graphs.append(gm) or gm.forward, dynamic=False) \
        if compiled else model
    out = fn(*inputs)
    out.sum().backward()
    grads = [t.grad for t in inputs] + [p.grad for p in model.parameters()]
    return out.detach(), grads


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_gradients_equal(case, tmp_path):
    require_graphmend()
    original = REPO / "tests" / "cases" / f"{case}.py"
    fixed = fix_copy(original, tmp_path)
    assert fixed.read_text() != original.read_text()
    orig_mod, fixed_mod = load_module(original, f"orig_{case}"), load_module(fixed, f"fixed_{case}")
    torch.manual_seed(0)
    state = orig_mod.Model().state_dict()
    for inputs_fn in ("example_inputs", "other_inputs"):
        want_out, want_grads = _run(orig_mod, inputs_fn, False, state)
        for module, compiled in ((orig_mod, True), (fixed_mod, False), (fixed_mod, True)):
            out, grads = _run(module, inputs_fn, compiled, state)
            assert torch.equal(out, want_out), (inputs_fn, module.__name__, compiled)
            assert len(grads) == len(want_grads)
            for g, w in zip(grads, want_grads):
                assert (g is None and w is None) or torch.equal(g, w), (inputs_fn, module.__name__, compiled)
