"""GM501 static-expert-dispatch on real torch: the runtime's pairs are torch.where's pairs, in
its order; a pair the mask does not hold cannot leak an inf or NaN into the result; the static
form is taken only compiled without autograd recording, and eagerly the loop runs as written.
"""
import sys
import textwrap

import pytest
import torch

from conftest import fix_copy, load_module, load_runtime_block, require_graphmend



def runtime(mode="static"):
    return load_runtime_block("static_dispatch", "_graphmend_static_dispatch_v3", "GRAPHMEND_DISPATCH", mode)


def fixed_pair(original, tmp_path, name, marker, *args):
    """The original file and its fixed copy (which must hold `marker`), loaded, with one Model
    each in eval mode sharing the original's weights: (want_module, got_module, want_model,
    got_model)."""
    fixed = fix_copy(original, tmp_path, *args)
    assert marker in fixed.read_text()
    want_module = load_module(original, f"{name}_original")
    got_module = load_module(fixed, f"{name}_fixed")
    torch.manual_seed(0)
    want_model = want_module.Model().eval()
    got_model = got_module.Model().eval()
    got_model.load_state_dict(want_model.state_dict())
    return want_module, got_module, want_model, got_model


def breaks(model, x):
    """Dynamo's graph break count for one call of model(x) without autograd."""
    torch._dynamo.reset()
    with torch.no_grad():
        return torch._dynamo.explain(model)(x).graph_break_count


def outputs_kept(want_module, want_model, got_model, seeds=3):
    """On the fixture's inputs drawn after seeds 0..seeds-1: eagerly the fixed model is the loop as
    written, bit for bit; compiled with Inductor each expert's product runs on more rows, so the
    last bits may differ (another BLAS kernel)."""
    for seed in range(seeds):
        torch.manual_seed(seed)
        (x,) = want_module.example_inputs()
        with torch.no_grad():
            want = want_model(x)
            assert torch.equal(got_model(x), want)
            torch._dynamo.reset()
            got = torch.compile(got_model, dynamic=False)(x)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4), (1, 7), (4, 0)])
def test_static_pairs_are_where_pairs_in_order(shape, monkeypatch):
    rt = runtime()

    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    torch.manual_seed(0)
    mask = torch.randint(0, 3, shape) * (torch.rand(shape) > 0.5)
    with torch.no_grad():
        pairs, valid = rt["_graphmend_pairs"](mask, 1)
    assert valid is not None
    kept = tuple(p[valid] for p in pairs)
    want = torch.where(mask)
    assert len(kept) == len(want)
    for k, w in zip(kept, want):
        assert torch.equal(k, w)
    assert pairs[0].numel() == mask.numel()


def test_eagerly_and_with_autograd_the_loop_runs_as_written(monkeypatch):
    rt = runtime("auto")
    mask = torch.tensor([[1, 0], [0, 1]])
    with torch.no_grad():  # not compiling: as written
        pairs, valid = rt["_graphmend_pairs"](mask, 2)
    assert valid is None and all(torch.equal(a, b) for a, b in zip(pairs, torch.where(mask)))

    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    pairs, valid = rt["_graphmend_pairs"](mask, 2)  # grad mode on: as written
    assert valid is None
    with torch.no_grad():
        assert rt["_graphmend_pairs"](mask, 2)[1] is not None
        assert rt["_graphmend_pairs"](torch.ones(100, 100), 2)[1] is None  # above the limit
        # The cost rule measured in docs/RESULTS.md (section 2a): experts x rows <= 64 and
        # experts <= 4 x rows per expert.
        assert rt["_graphmend_pairs"](torch.ones(2, 4), 8)[1] is not None    # 8 x 8 = 64
        assert rt["_graphmend_pairs"](torch.ones(2, 16), 8)[1] is None       # 8 x 32 = 256
        assert rt["_graphmend_pairs"](torch.ones(2, 1), 8)[1] is not None    # 8 experts, 2 rows each
        assert rt["_graphmend_pairs"](torch.ones(2, 1), 16)[1] is None       # 16 experts, 2 rows each


MODEL = '''
import torch
from torch import nn


class LogExpert(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(torch.log(x))   # NaN for the rows with negative entries


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([LogExpert() for _ in range(2)])

    def forward(self, x):
        # Expert 0 takes the positive rows, expert 1 the others (through their absolute value).
        mask = torch.stack([(x > 0).all(-1), ~(x > 0).all(-1)])[:, None, :].long()
        out = torch.zeros_like(x)
        for e in range(2):
            slot, rows = torch.where(mask[e])
            inputs = x[rows] if e == 0 else x[rows].abs()
            out.index_add_(0, rows, self.experts[e](inputs))
        return out
'''


@pytest.mark.slow
def test_unrouted_rows_cannot_leak_nan_and_the_graph_does_not_break(tmp_path):
    require_graphmend()
    original = tmp_path / "leak.py"
    original.write_text(textwrap.dedent(MODEL))
    want_module, got_module, want_model, got_model = fixed_pair(original, tmp_path, "gm501_leak", "_graphmend_pairs")
    x = torch.randn(16, 4)
    x[:5] = x[:5].abs() + 0.1  # some rows for each expert
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        want = want_model(x)
        got = torch.compile(got_model, backend=counting, dynamic=False)(x)
    assert not torch.isnan(want).any()
    assert torch.equal(got, want)
    assert len(graphs) == 1


# ---- Split-size dispatch (GraniteMoE's form): _graphmend_sizes / _graphmend_split / _graphmend_join.

def test_split_sizes_stay_a_list_eagerly_with_autograd_or_when_told(monkeypatch):
    rt = runtime("auto")
    sizes = torch.tensor([2, 0, 3])
    with torch.no_grad():
        assert rt["_graphmend_sizes"](sizes) == [2, 0, 3]  # not compiling: as written
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert rt["_graphmend_sizes"](sizes) == [2, 0, 3]  # autograd records: as written
    with torch.no_grad():
        kept = rt["_graphmend_sizes"](sizes)
        assert isinstance(kept, torch.Tensor) and torch.equal(kept, sizes) and kept is not sizes
        assert rt["_graphmend_sizes"](sizes.float()) == [2.0, 0.0, 3.0]  # not sizes: as written
    rt = runtime("loop")
    with torch.no_grad():
        assert rt["_graphmend_sizes"](sizes) == [2, 0, 3]


def test_split_join_keep_each_rows_own_expert_and_cannot_leak_nan(monkeypatch):
    rt = runtime("auto")
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    torch.manual_seed(0)
    x = torch.randn(5, 3)
    sizes = torch.tensor([2, 0, 3])
    # Expert e computes x * (e + 1) on its own rows and NaN or inf on the others.
    own = torch.tensor([0, 0, 2, 2, 2])

    def expert(e, rows):
        if rows.shape[0] == 5:  # static form: every row
            bad = torch.where(torch.arange(5) % 2 == 0, float("nan"), float("inf"))[:, None]
            return torch.where((own == e)[:, None], rows * (e + 1), bad)
        return rows * (e + 1)

    want = torch.cat([expert(e, p) for e, p in enumerate(x.split([2, 0, 3], dim=0))], dim=0)
    with torch.no_grad():
        parts, kept = rt["_graphmend_split"](x, sizes)
        assert kept is sizes and len(parts) == 3 and all(p.shape == x.shape for p in parts)
        got = rt["_graphmend_join"]([expert(e, parts[e]) for e in range(3)], sizes)
        assert torch.equal(got, want)
        with pytest.raises(RuntimeError):  # sizes that do not cover the rows: split raises too
            rt["_graphmend_join"]([x, x, x], torch.tensor([1, 1, 1]))
        # The cost rule (experts x rows <= 64, experts <= rows), where the rows are known:
        # above it the sizes are read out once, and the split runs as written.
        assert rt["_graphmend_choose"](sizes, torch.zeros(21, 3)) is sizes     # 3 x 21 = 63
        assert rt["_graphmend_choose"](sizes, torch.zeros(22, 3)) == [2, 0, 3]  # 3 x 22 = 66
        assert rt["_graphmend_choose"](sizes, torch.zeros(2, 3)) == [2, 0, 3]   # more experts than rows
        big = torch.zeros(30, 3)
        parts, listed = rt["_graphmend_split"](big, torch.tensor([10, 0, 20]))
        assert listed == [10, 0, 20] and [p.shape[0] for p in parts] == [10, 0, 20]
    # A list: as written.
    parts, listed = rt["_graphmend_split"](x, [2, 0, 3])
    assert listed == [2, 0, 3]
    assert torch.equal(rt["_graphmend_join"](list(parts), listed), torch.cat(x.split([2, 0, 3], dim=0), dim=0))


@pytest.mark.slow
def test_split_fixture_compiles_to_one_graph_and_keeps_outputs_and_gradients(tmp_path):
    require_graphmend()
    import pathlib

    original = pathlib.Path(__file__).parents[1] / "fixtures" / "static-expert-dispatch" / "split_sizes.py"
    want_module, _, want_model, got_model = fixed_pair(original, tmp_path, "gm501_split", "_graphmend_sizes")
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def count_graphs(model, x):
        torch._dynamo.reset()
        graphs.clear()
        with torch.no_grad():
            out = torch.compile(model, backend=counting, dynamic=False)(x)
        return out, len(graphs)

    # Above the cost rule (4 experts x 80 rows): the sizes are read out once, and no more breaks
    # than before (fewer: the read-out is no longer inside the router's frame).
    big = torch.randn(2, 20, 8)
    with torch.no_grad():
        torch._dynamo.reset()
        want_breaks = torch._dynamo.explain(want_model)(big).graph_break_count
        torch._dynamo.reset()
        got_breaks = torch._dynamo.explain(got_model)(big).graph_break_count
    assert 0 < got_breaks <= want_breaks
    want_big, _ = count_graphs(want_model, big)
    got_big, _ = count_graphs(got_model, big)
    assert all(torch.equal(w, g) for w, g in zip(want_big, got_big))
    for seed in range(3):
        torch.manual_seed(seed)
        (x,) = want_module.example_inputs()
        with torch.no_grad():
            want = want_model(x)
            eager = got_model(x)  # eagerly: the loop as written, bit for bit
            torch._dynamo.reset()
            graphs.clear()
            got = torch.compile(got_model, backend=counting, dynamic=False)(x)
        assert len(graphs) == 1  # no break: the sizes were not read out
        for w, e, g in zip(want, eager, got):
            assert torch.equal(e, w)
            # Each expert's product runs on more rows: the last bits may differ (BLAS kernels).
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    # With autograd recording the loop runs as written: the same gradients, bit for bit.
    (x,) = want_module.example_inputs()
    want_model(x)[0].sum().backward()
    got_model(x)[0].sum().backward()
    for (name, w), (_, g) in zip(want_model.named_parameters(), got_model.named_parameters()):
        assert (w.grad is None) == (g.grad is None), name
        if w.grad is not None:
            assert torch.equal(w.grad, g.grad), name


def test_sorted_slices_counts_bounds_and_skip(monkeypatch):
    rt = runtime("auto")
    counts = torch.tensor([2, 0, 3])
    rows = torch.arange(15.0).reshape(5, 3)
    with torch.no_grad():  # not compiling: read out as written
        read = rt["_graphmend_counts"](counts, rows, lambda: counts.numpy())
        assert not isinstance(read, torch.Tensor) and list(read) == [2, 0, 3]
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert rt["_graphmend_counts"](counts, rows, lambda: counts.tolist()) == [2, 0, 3]  # autograd records
    with torch.no_grad():
        kept = rt["_graphmend_counts"](counts, rows, lambda: counts.tolist())
        assert isinstance(kept, torch.Tensor) and torch.equal(kept, counts) and kept is not counts
        # The cost rule: experts x rows <= 64 and no more experts than rows.
        assert rt["_graphmend_counts"](counts, torch.zeros(22, 3), lambda: "read") == "read"
        assert rt["_graphmend_counts"](counts, torch.zeros(2, 3), lambda: "read") == "read"
    # The bounds: a slice of Python ints as written, every row once a bound is a tensor.
    assert torch.equal(rt["_graphmend_between"](rows, 2, 5), rows[2:5])
    every = rt["_graphmend_between"](rows, 0, torch.tensor(2))
    assert torch.equal(every, rows) and every is not rows  # a copy: in-place work stays in it
    assert rt["_graphmend_no_rows"](0) is True and rt["_graphmend_no_rows"](3) is False
    assert rt["_graphmend_no_rows"](torch.tensor(0)) is False  # static: every expert runs
    # An expert container holding None (another rank's expert): read out as written.
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    with torch.no_grad():
        experts = torch.nn.ModuleList([torch.nn.Linear(3, 3), None, torch.nn.Linear(3, 3)])
        assert rt["_graphmend_counts"](counts, rows, lambda: "read", experts) == "read"
        experts[1] = torch.nn.Linear(3, 3)
        assert isinstance(rt["_graphmend_counts"](counts, rows, lambda: "read", experts), torch.Tensor)


@pytest.mark.slow
def test_sorted_slices_fixture_compiles_to_one_graph_and_keeps_outputs(tmp_path):
    require_graphmend()
    import pathlib

    original = pathlib.Path(__file__).parents[1] / "fixtures" / "static-expert-dispatch" / "sorted_slices.py"
    want_module, got_module, want_model, got_model = fixed_pair(original, tmp_path, "gm501_sorted",
                                                                "_graphmend_counts")

    (x,) = want_module.example_inputs()
    assert breaks(want_model, x) > 0
    assert breaks(got_model, x) == 0
    # Above the cost rule (4 experts x 80 rows): the counts are read out and sliced as written.
    big = torch.randn(2, 20, 8)
    assert 0 < breaks(got_model, big) <= breaks(want_model, big)
    with torch.no_grad():  # Dynamo's eager backend: the graphs run as traced, bit for bit
        torch._dynamo.reset()
        want_big = torch.compile(want_model, backend="eager", dynamic=False)(big)
        torch._dynamo.reset()
        assert torch.equal(torch.compile(got_model, backend="eager", dynamic=False)(big), want_big)
    outputs_kept(want_module, want_model, got_model)
    # Expert parallelism (DeepSeek's layout): this rank holds None for the other rank's experts,
    # so the static form is not taken and the walk runs as written, also compiled.
    torch.manual_seed(0)
    want_ep = want_module.Model(ep_size=2).eval()
    got_ep = got_module.Model(ep_size=2).eval()
    got_ep.load_state_dict(want_ep.state_dict())
    assert any(e is None for e in got_ep.moe.experts)
    (x,) = want_module.example_inputs()
    assert breaks(got_ep.moe, x) > 0
    with torch.no_grad():
        want = want_ep.moe(x)
        assert torch.equal(got_ep.moe(x), want)
        torch._dynamo.reset()
        assert torch.equal(torch.compile(got_ep.moe, backend="eager", dynamic=False)(x), want)
    # With autograd recording (ListMoE is not under no_grad) the walk runs as written.
    (x,) = want_module.example_inputs()
    want_model(x).sum().backward()
    got_model(x).sum().backward()
    for (name, w), (_, g) in zip(want_model.named_parameters(), got_model.named_parameters()):
        assert (w.grad is None) == (g.grad is None), name
        if w.grad is not None:
            assert torch.equal(w.grad, g.grad), name


# The transformers 5.x form (Switch Transformers, NLLB-MoE; Mixtral's eager experts): the loop
# runs over the rows of `...nonzero()`, the hit list taken under torch.no_grad().
MODEL_5X = '''
import torch
from torch import nn


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


class Experts(nn.ModuleDict):
    def __init__(self):
        super().__init__()
        for idx in range(4):
            self[f"expert_{idx}"] = Expert()

    def forward(self, x, selected, weights):
        out = torch.zeros_like(x)
        with torch.no_grad():
            expert_mask = selected.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            rows = self[f"expert_{expert_idx[0]}"](x[top_x]) * weights[top_x, idx, None]
            out.index_add_(0, top_x, rows.to(x.dtype))
        return out


class ListExperts(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_experts = 4
        self.experts = nn.ModuleList([Expert() for _ in range(4)])

    def forward(self, x, top_k_index, weights):
        out = torch.zeros_like(x)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            pos, token = torch.where(expert_mask[expert_idx])
            rows = self.experts[expert_idx](x[token]) * weights[token, pos, None]
            out.index_add_(0, token, rows.to(x.dtype))
        return out


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Experts()
        self.b = ListExperts()

    def forward(self, x):
        # Expert 3 is never chosen: its gradients stay None.
        choice = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
        selected = torch.nn.functional.one_hot(choice, num_classes=4)[:, None, :]
        h = x + self.a(x, selected, torch.ones(x.shape[0], 1))
        return h + self.b(h, choice[:, None], torch.ones(x.shape[0], 1))
'''


@pytest.mark.slow
def test_transformers_5x_hit_rows_static_and_gradients_as_written(tmp_path, monkeypatch):
    require_graphmend()
    # Above the cost rule's size: force the static form (it still requires autograd off).
    import sys

    monkeypatch.setenv("GRAPHMEND_DISPATCH", "static")
    monkeypatch.delitem(sys.modules, "_graphmend_static_dispatch_v3", raising=False)
    original = tmp_path / "hit_rows.py"
    original.write_text(textwrap.dedent(MODEL_5X))
    # The 5.x form is an unsafe fix (docs/rules/GM501.md): by default the file stays as written.
    assert fix_copy(original, tmp_path).read_text() == original.read_text()
    want_module, got_module, want_model, got_model = fixed_pair(original, tmp_path, "gm501_rows",
                                                                "if _graphmend_dispatch_all(", "--unsafe-fixes")
    text = (tmp_path / f"{original.stem}_fixed.py").read_text()
    assert text.count("if _graphmend_dispatch_all(") == 2 and "expert_hit = " not in text
    x = torch.randn(32, 8)  # each expert gets enough rows for the same kernel (docs/rules/GM501.md)
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        want = want_model(x)
        got = torch.compile(got_model, backend=counting, dynamic=False)(x)
    assert torch.equal(got, want)
    assert len(graphs) == 1

    # With autograd recording the loop runs as written, although the hit list is taken under
    # torch.no_grad(): an expert no token reaches keeps a None gradient.
    torch._dynamo.reset()
    want_model(x).sum().backward()
    torch.compile(got_model, backend="eager", dynamic=False)(x).sum().backward()
    for (name, w), (_, g) in zip(want_model.named_parameters(), got_model.named_parameters()):
        assert (w.grad is None) == (g.grad is None), name
        if w.grad is not None:
            assert torch.equal(w.grad, g.grad), name
    assert want_model.a["expert_3"].fc.weight.grad is None
    assert want_model.b.experts[3].fc.weight.grad is None
    sys.modules.pop("_graphmend_static_dispatch_v3", None)


@pytest.mark.parametrize("cls", ["HitList", "Experts"])
def test_a_mask_with_more_experts_than_modules_runs_the_loop(cls, tmp_path):
    """one_hot(..., num_classes=n + 1) over n experts: the loop never reached expert n, and the
    static form would index it (IndexError / KeyError while Dynamo traces, the frame falling
    back to Python). `_graphmend_has` keeps the loop there; with n classes the static form is
    taken and the forward is one graph."""
    require_graphmend()
    import pathlib

    original = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "static-expert-dispatch" / "extra_class.py"
    fixed = fix_copy(original, tmp_path, "--unsafe-fixes")
    assert fixed.read_text().count("_graphmend_has(") == 2
    want_module = load_module(original, f"gm501_extra_{cls}_original")
    got_module = load_module(fixed, f"gm501_extra_{cls}_fixed")

    def run(module, extra, compiled):
        torch.manual_seed(0)
        model = getattr(module, cls)(extra=extra).eval()
        h = torch.randn(6, 8)
        w, i = torch.topk(torch.randn(6, 4).softmax(-1), 2)
        graphs, errors = [], []

        def counting(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        torch._dynamo.reset()
        with torch.no_grad():
            out = torch.compile(model, backend=counting, dynamic=False)(h, i, w) if compiled else model(h, i, w)
        return out, len(graphs)

    for extra in (1, 0):
        want, _ = run(want_module, extra, False)
        _, want_graphs = run(want_module, extra, True)
        got, got_graphs = run(got_module, extra, True)
        assert torch.equal(run(got_module, extra, False)[0], want)  # eagerly: the loop as written, bit for bit
        # Compiled, each expert's product runs on the padded candidate rows (the pairs form of
        # the body, also where the hit list falls back to the loop): the last bits may differ
        # (BLAS kernels; 1.19e-7 measured on an AVX-512 Xeon, equal on the machine before).
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        if extra:  # the loop as written: it breaks on nonzero, not on an exception in the static form
            assert 1 < got_graphs <= want_graphs
            torch.manual_seed(0)
            model = getattr(got_module, cls)(extra=extra).eval()
            torch._dynamo.reset()
            with pytest.raises(Exception) as info, torch.no_grad():
                torch.compile(model, backend="eager", fullgraph=True)(
                    torch.randn(6, 8), torch.tensor([[0, 1]] * 6), torch.ones(6, 2))
            assert "Observed exception" not in str(info.value) and "nonzero" in str(info.value)
        else:
            assert got_graphs == 1 < want_graphs


def test_an_activation_made_by_a_method_of_the_expert_is_followed(tmp_path):
    # activation_maker.py: `self.act = self._activation(name)`, whose every return makes an nn
    # activation (the hand-written form outside transformers); the expert also holds no Dropout.
    require_graphmend()
    import pathlib

    original = pathlib.Path(__file__).parents[1] / "fixtures" / "static-expert-dispatch" / "activation_maker.py"
    want_module, got_module, want_model, got_model = fixed_pair(original, tmp_path, "gm501_maker", "_graphmend_pairs")

    (x,) = want_module.example_inputs()
    assert breaks(want_model, x) > 0
    assert breaks(got_model, x) == 0
    outputs_kept(want_module, want_model, got_model)
    # In training with autograd the loop runs as written: the same gradients, None where no row
    # reached an expert.
    want_model.train()
    got_model.train()
    x = torch.randn(1, 2, 8)
    want_model(x).sum().backward()
    torch._dynamo.reset()
    torch.compile(got_model, backend="eager", dynamic=False)(x).sum().backward()
    grads = [(n, w.grad, g.grad) for (n, w), (_, g) in zip(want_model.named_parameters(), got_model.named_parameters())]
    assert any(w is None for _, w, _ in grads)  # 2 tokens x top-2 of 4 experts: some expert unused
    for name, w, g in grads:
        assert (w is None) == (g is None), name
        if w is not None:
            assert torch.equal(w, g), name


EXPERT_BASE = '''
import torch.nn as nn


class Base(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.up = nn.Linear(hidden, inner)
        self.act = self._activation()
        self.down = nn.Linear(inner, hidden)

    def _activation(self):
        return nn.GELU()

    def forward(self, x):
        return self.down(self.act(self.up(x)))
'''

EXPERT_MOE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from base import Base


class Expert(Base):
    SUBCLASS_BODY


class Moe(nn.Module):
    def __init__(self, experts=4, hidden=8, inner=16):
        super().__init__()
        self.num_experts = experts
        self.experts = nn.ModuleList([Expert(hidden, inner) for _ in range(experts)])

    def forward(self, flat, expert_mask, weights):
        out = torch.zeros_like(flat)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            out.index_add_(0, top_x, self.experts[expert_idx](flat[top_x]) * weights[top_x, idx, None])
        return out
'''


@pytest.mark.parametrize("body, fixed", [
    ("pass", True),  # the base's forward, bindings and maker, unchanged
    ("def _activation(self):\n        return nn.Softmax(dim=0)", False),  # the maker overridden
    ("def __init__(self, hidden, inner):\n        super().__init__(hidden, inner)\n"
     "        self.act = nn.Softmax(dim=0)", False),  # the activation bound again
])
def test_a_forward_inherited_from_another_file_reads_what_the_subclass_changes(tmp_path, body, fixed):
    # Found by a review: the row-wise check read an inherited forward with the base's bindings
    # only, so a subclass in another file that changes the activation (Softmax mixes rows) was
    # reported fixed, and its compiled outputs differed (0.6).
    require_graphmend()
    import json
    import subprocess

    from conftest import BINARY

    (tmp_path / "base.py").write_text(EXPERT_BASE)
    (tmp_path / "model.py").write_text(EXPERT_MOE.replace("SUBCLASS_BODY", body))
    report = subprocess.run([str(BINARY), "check", "--isolated", "--exit-zero", "--output-format", "json",
                             str(tmp_path)], check=True, capture_output=True, text=True).stdout
    [site] = [s for f in json.loads(report)["files"] for s in f["sites"]]
    assert site["code"] == "GM501" and site["status"] == ("fixable-when" if fixed else "refused"), site["message"]
    if not fixed:
        assert "inherits its forward from `Base` in another file" in site["message"]
