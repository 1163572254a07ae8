"""tests/fixtures/predicated-control-flow/wild_forms.py with real torch: original and fixed,
each run eagerly and compiled (Dynamo's eager backend), give the same outputs, gradients
(None stays None), requires_grad, module state, tensor identity and exceptions.

The forms come from libraries graphmend was not shown (torchmetrics, kornia, speechbrain,
monai); each of these differed before it was fixed or refused.
"""
import logging

import pytest
import torch

from conftest import REPO, fix_copy, load_module, require_graphmend

FIXTURE = REPO / "tests" / "fixtures" / "predicated-control-flow" / "wild_forms.py"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    require_graphmend()
    fixed = fix_copy(FIXTURE, tmp_path_factory.mktemp("wild"), "--isolated", "--runtime", "inline")
    # Importing runs check_range: the fixed file binds its runtime before that line.
    return load_module(FIXTURE, "wild_orig"), load_module(fixed, "wild_fixed")


def arms(modules):
    for module in modules:
        for compiled in (False, True):
            yield module, compiled


def call(module, name, compiled, *args):
    torch._dynamo.reset()
    model = getattr(module, name)()
    fn = torch.compile(model, backend="eager", dynamic=False) if compiled else model
    return model, fn(*args)


def test_import_time_call_and_its_check(modules):
    for module, compiled in arms(modules):
        assert torch.equal(module.TABLE, torch.full((3,), 2.0))
        _, out = call(module, "Table", compiled, torch.ones(3))
        assert torch.equal(out, torch.full((3,), 4.0))
        with pytest.raises(ValueError, match="NaN in table"):
            call(module, "Table", compiled, torch.tensor([1.0, float("nan"), 2.0]))


def test_the_untaken_side_keeps_a_none_gradient(modules):
    for module, compiled in arms(modules):
        applied = torch.ones(3, requires_grad=True)
        identity = torch.zeros(3, requires_grad=True)
        _, out = call(module, "Blend", compiled, applied, identity, torch.tensor([1.0]))
        out.sum().backward()
        assert torch.equal(applied.grad, torch.full((3,), 2.0)), (module.__name__, compiled)
        assert identity.grad is None, (module.__name__, compiled)


def test_a_constant_branch_needs_no_gradient(modules):
    for module, compiled in arms(modules):
        x = torch.full((4,), 0.5, requires_grad=True)
        _, out = call(module, "CosineGap", compiled, x)
        assert torch.equal(out, torch.tensor(1.0)) and not out.requires_grad, (module.__name__, compiled)
        with pytest.raises(RuntimeError, match="does not require grad"):
            out.backward()
        x = torch.full((4,), 0.05, requires_grad=True)
        _, out = call(module, "CosineGap", compiled, x)
        out.backward()
        assert torch.allclose(x.grad, torch.full((4,), 0.25)), (module.__name__, compiled)


def test_state_keeps_the_branchs_own_tensor(modules):
    for module, compiled in arms(modules):
        model, _ = call(module, "MinMax", compiled, torch.tensor(0.5))
        val = torch.tensor(0.7)
        model(val) if not compiled else torch.compile(model, backend="eager")(val)
        assert model.max_val is val, (module.__name__, compiled)
        val.add_(1)
        assert model.max_val.item() == pytest.approx(1.7)


def test_an_in_place_change_reaches_the_selected_tensor(modules):
    for module, compiled in arms(modules):
        x, z = torch.ones(2), torch.zeros(2)
        call(module, "Inplace", compiled, x, z)
        assert torch.equal(x, torch.full((2,), 2.0)) and torch.equal(z, torch.zeros(2)), (module.__name__, compiled)


def test_a_python_int_branch_stays_an_int(modules):
    for module, compiled in arms(modules):
        _, out = call(module, "NumInds", compiled, torch.tensor([1, 5, 2]), 9)
        assert out == 9 and isinstance(out, int), (module.__name__, compiled)
        _, out = call(module, "NumInds", compiled, torch.tensor([1, 5, 2]), 3)
        assert torch.equal(out, torch.tensor(1)), (module.__name__, compiled)


@pytest.mark.parametrize("positive, doubled", [(3, False), (2, False), (4, True)])
def test_an_int_read_meets_a_python_float_as_python_does(modules, positive, doubled):
    x = torch.tensor([1.0] * positive + [-1.0] * (7 - positive))
    for module, compiled in arms(modules):
        _, out = call(module, "Ratio", compiled, x)
        assert torch.equal(out, x * 2 if doubled else x), (module.__name__, compiled, positive)


SIZES_MODEL = '''import logging

import torch
from torch import nn

logger = logging.getLogger("wild_sizes")


class GN(nn.Module):
    def forward(self, x):
        logger.info(f"input size: {x.size()}")
        out = x * 2
        logger.info("last dim %d, sum %s", out.shape[-1], out.sum())
        return out
'''


def test_messages_with_symbolic_sizes(tmp_path, caplog):
    """monai's MAISI autoencoder logs `input.size()`: under dynamic shapes the sizes are
    symbolic, and the deferred message carries them to the graph's run (1 graph, no break)."""
    require_graphmend()
    original = tmp_path / "sizes.py"
    original.write_text(SIZES_MODEL)
    fixed = fix_copy(original, tmp_path, "--isolated", "--runtime", "inline")
    results = {}
    for name, path in (("orig", original), ("fixed", fixed)):
        module = load_module(path, f"wild_sizes_{name}")
        torch._dynamo.reset()
        graphs = []
        fn = torch.compile(module.GN(), backend=lambda gm, ex: graphs.append(gm) or gm.forward, dynamic=True)
        with caplog.at_level(logging.INFO, logger="wild_sizes"):
            caplog.clear()
            for shape in ((1, 3, 4), (1, 5, 6)):
                fn(torch.ones(shape))
            results[name] = ([r.getMessage() for r in caplog.records], len(graphs))
    assert results["fixed"][0] == results["orig"][0] == [
        "input size: torch.Size([1, 3, 4])", "last dim 4, sum tensor(24.)",
        "input size: torch.Size([1, 5, 6])", "last dim 6, sum tensor(60.)"]
    assert results["fixed"][1] == 1 < results["orig"][1]
