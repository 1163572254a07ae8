"""Predicated validation under Inductor on CPU (issue 4: c07, c08).

The fixed model compiled with Inductor gives the original's outputs (within Inductor's
tolerance against eager) on the good inputs, and raises the original exception type with
the original message on the bad ones.
"""
import sys

import pytest
import torch

from conftest import REPO, fix_copy, load_module, require_graphmend

CASES = {
    "c07_trap_raise": (ValueError, "attention scores contain NaN"),
    "c08_trap_equal": (ValueError, "mask must be symmetric for this attention variant"),
}




@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_inductor_keeps_the_check(case, tmp_path):
    require_graphmend()
    original = REPO / "tests" / "cases" / f"{case}.py"
    fixed = fix_copy(original, tmp_path)
    module = load_module(fixed, f"inductor_{case}")
    torch.manual_seed(0)
    model = module.Model().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="inductor")
    with torch.no_grad():
        want = model(*module.example_inputs())
        got = compiled(*module.example_inputs())
        torch.testing.assert_close(got, want)
        exc_type, message = CASES[case]
        with pytest.raises(exc_type) as info:
            compiled(*module.other_inputs())
    assert str(info.value) == message


SOURCE_FROM_NONE = '''
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        try:
            y = x * 2
        except RuntimeError:
            y = x
        if y.max() > 10:
            raise OverflowError(f"max {y.max():.1f} over 10") from None
        return y
'''


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["eager-mode", "counting", "inductor"])
def test_raise_from_none_keeps_type_message_and_suppressed_context(backend, tmp_path):
    require_graphmend()
    original = tmp_path / "from_none.py"
    original.write_text(SOURCE_FROM_NONE)
    fixed = fix_copy(original, tmp_path)
    assert "_graphmend_check(" in fixed.read_text()
    model = load_module(fixed, f"from_none_{backend}").Model()
    torch._dynamo.reset()
    if backend == "counting":
        fn = torch.compile(model, backend=lambda gm, ex: gm.forward, fullgraph=True)
    elif backend == "inductor":
        fn = torch.compile(model, backend="inductor", fullgraph=True)
    else:
        fn = model
    assert torch.equal(fn(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(OverflowError) as info:
        fn(torch.full((2,), 7.0))
    assert str(info.value) == "max 14.0 over 10"
    assert info.value.__suppress_context__ and info.value.__cause__ is None
