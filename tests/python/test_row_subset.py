"""GM502 static-row-subset's runtime on real torch: the static form (every row through the
same code, the picked rows written back) equals the original gather/compute/write on the
picked rows; an unpicked row's inf or NaN cannot leak; eagerly, with autograd, with a module in
training mode, with a tensor whose rows are not the mask's, or with a mask of several elements
per row, the index is torch.where's and every helper does what the code did as written.
"""

import pytest
import torch

from conftest import load_runtime_block



def runtime(mode="auto"):
    return load_runtime_block("row_subset", "_graphmend_row_subset_v1", "GRAPHMEND_ROW_SUBSET", mode)


def original(x, y, idx, f):
    if len(idx) > 0:
        y[idx, 1:] = f(x[idx, 1:])
    return y


def rewritten(rt, x, y, idx, f, module=None):
    if len((idx := rt["_graphmend_subset_enter"](idx, (x, y), module=module))) > 0:
        rt["_graphmend_subset_put"](y, (idx, slice(1, None)), f(x[rt["_graphmend_subset_at"](idx), 1:]))
    return y


@pytest.mark.parametrize("picked", [[True, False, True, True], [False, False, False, False], [True] * 4, [True]])
def test_static_form_equals_the_picked_rows(picked, monkeypatch):
    rt = runtime()
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    torch.manual_seed(0)
    n = len(picked)
    x, y = torch.randn(n, 3, 5), torch.randn(n, 3, 5)
    mask = torch.tensor(picked).reshape(n, 1)

    def f(r):
        return torch.tanh(r) * 2 + 1

    with torch.no_grad():
        idx = rt["_graphmend_subset_index"](mask)
        assert not isinstance(idx, torch.Tensor)  # the static form
        assert len(idx) == n
        got = rewritten(rt, x, y.clone(), idx, f)
        want = original(x, y.clone(), torch.where(mask)[0], f)
    assert torch.equal(got, want)


def test_an_unpicked_rows_nan_does_not_leak(monkeypatch):
    rt = runtime()
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    x = torch.ones(3, 2, 2)
    x[1] = float("nan")
    y = torch.zeros(3, 2, 2)
    mask = torch.tensor([True, False, True])
    with torch.no_grad():
        got = rewritten(rt, x, y, rt["_graphmend_subset_index"](mask), lambda r: r * 3)
    assert not got.isnan().any()
    assert torch.equal(got[1], torch.zeros(2, 2))


def test_as_written_eagerly_with_autograd_and_for_several_elements_per_row(monkeypatch):
    rt = runtime()
    mask = torch.tensor([[1, 0], [1, 1]])
    with torch.no_grad():  # not compiling
        assert torch.equal(rt["_graphmend_subset_index"](mask), torch.where(mask)[0])
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert isinstance(rt["_graphmend_subset_index"](mask[:, :1]), torch.Tensor)  # grad mode on
    with torch.no_grad():  # row 1 listed twice by torch.where: the static form would differ
        assert torch.equal(rt["_graphmend_subset_index"](mask), torch.where(mask)[0])
    index_rt = runtime("index")
    with torch.no_grad():
        assert isinstance(index_rt["_graphmend_subset_index"](mask[:, 0]), torch.Tensor)


def test_enter_falls_back_to_the_index(monkeypatch):
    rt = runtime()
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    mask = torch.tensor([True, False, True])
    want = torch.where(mask)[0]
    module = torch.nn.Sequential(torch.nn.BatchNorm1d(2))
    with torch.no_grad():
        rows = rt["_graphmend_subset_index"](mask)
        enter = rt["_graphmend_subset_enter"]
        assert not isinstance(enter(rows, (torch.zeros(3, 2),)), torch.Tensor)
        assert torch.equal(enter(rows, (torch.zeros(4, 2),)), want)  # another row count
        module.train()
        assert torch.equal(enter(rows, (torch.zeros(3, 2),), module), want)  # batch statistics
        module.eval()
        assert not isinstance(enter(rows, (torch.zeros(3, 2),), module), torch.Tensor)
        module[0].running_mean = None  # no running statistics: batch statistics in eval mode too
        assert torch.equal(enter(rows, (torch.zeros(3, 2),), module), want)
    plain = torch.tensor([0, 2])
    assert enter(plain, (torch.zeros(3, 2),)) is plain  # an index tensor: as written
    assert rt["_graphmend_subset_at"](plain) is plain
