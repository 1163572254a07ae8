"""The gated masked store of a data-dependent `continue` / `break` (GM201's loop form,
src/runtime/predicated_control_flow.py: _graphmend_store_when) on real torch: the same tensor
as the original `if active: t[m] = v`, eagerly and compiled, with no graph break where the
store can be gated, and no error where the original stored nothing."""
import sys

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")
import torch._dynamo.testing  # noqa: E402

RUNTIME = {}
exec((REPO / "src" / "runtime" / "predicated_control_flow.py").read_text(), RUNTIME)
store_when = RUNTIME["_graphmend_store_when"]
as_bool = RUNTIME["_graphmend_scalar"]
# The raw source registers its runtime in sys.modules without the shared blocks graphmend
# expands when it emits one (skip_frames): a fixed file loaded later in this process would
# reuse it, and Dynamo would compile the runtime's frames on their own (extra graph breaks in
# tests/python/test_layout_note.py, run after this file in one process).
sys.modules.pop("_graphmend_predicated_v1", None)


def clean(feat, value):
    feat = feat.clone()
    for c in range(feat.size(1)):
        col = feat[:, c]
        mask = torch.isnan(col)
        store_when(as_bool("bool", mask.any()), col, mask, value)
    return feat * 2


def original(feat, value):
    feat = feat.clone()
    for c in range(feat.size(1)):
        col = feat[:, c]
        mask = torch.isnan(col)
        if not mask.any():
            continue
        col[mask] = value
    return feat * 2


FEAT = torch.tensor([[1.0, float("nan"), 2.0], [0.5, -1.0, float("nan")], [2.0, 0.0, 4.0]])


@pytest.mark.parametrize("value", [0.5, 3, True, torch.tensor(1.5)], ids=["float", "int", "bool", "tensor0d"])
def test_gated_store_is_one_graph_with_the_original_values(value):
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()
    for feat in (FEAT, torch.ones(3, 3)):
        compiled = torch.compile(clean, backend=counter, dynamic=False)
        assert torch.equal(compiled(feat, value), original(feat, value))
        assert torch.equal(clean(feat, value), original(feat, value))
    assert counter.frame_count == 1  # one graph for both inputs: no break, no recompile


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gradients_equal_the_original(backend):
    torch._dynamo.reset()
    feat = FEAT.clone().requires_grad_(True)
    ref = FEAT.clone().requires_grad_(True)
    torch.compile(clean, backend=backend, dynamic=False)(feat, 0.5).sum().backward()
    original(ref, 0.5).sum().backward()
    assert torch.equal(feat.grad, ref.grad)


def test_no_store_on_a_view_of_a_leaf_requiring_grad_where_the_original_skipped():
    torch._dynamo.reset()
    leaf = torch.zeros(4, requires_grad=True)
    view = leaf[:2]

    def f(x):
        store_when(x.sum() > 100, view, x[:2] > 0, 1.0)
        return x + 1

    assert torch.equal(torch.compile(f, backend="eager")(torch.ones(4)), torch.full((4,), 2.0))


def test_a_value_of_the_masked_count_keeps_the_if():
    torch._dynamo.reset()

    def f(x, v):
        m = x > 0
        store_when(m.any() & (x.sum() > 100), x, m, v)
        return x * 2

    x = torch.tensor([1.0, -1.0, 2.0])
    out = torch.compile(f, backend="eager")(x.clone(), torch.tensor([7.0, 8.0]))
    assert torch.equal(out, x * 2)
