"""GM504 static-span-loop on real torch, through the real tool: the fixed copy of
tests/fixtures/static-span-loop/spans.py, compiled with fullgraph=True (no graph break left),
gives the original's values for every input tried, across rows (the previous column carries over
from the row before), with separators at the ends of rows and none at all; where the original's
torch.arange raises, the compiled fixed function raises the same RuntimeError; eagerly the fixed
copy runs the loop as written.
"""
import itertools
from pathlib import Path

import pytest
import torch

from conftest import fix_copy, load_module, require_graphmend

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "static-span-loop" / "spans.py"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    require_graphmend()
    fixed = fix_copy(FIXTURE, tmp_path_factory.mktemp("span_loop"))
    text = fixed.read_text()
    assert text.count("_graphmend_span_range(") == 3  # two loops and the runtime's own use
    return load_module(FIXTURE, "spans_original"), load_module(fixed, "spans_fixed")


def inputs():
    """Token ids over 0..7 (1, 2 and 5 are separators): random ones, and ones made to carry a
    column from the row before, to end rows with separators, and to hold none."""
    g = torch.Generator().manual_seed(0)
    out = [torch.randint(0, 8, (b, t), generator=g) for b, t in itertools.product((1, 2, 3), (1, 2, 6, 9))]
    out.append(torch.tensor([[1, 3, 4, 5, 3, 3, 4, 2], [1, 3, 5, 4, 4, 4, 4, 2]]))  # Grounding DINO's shape
    out.append(torch.tensor([[3, 3, 5, 4, 3, 3], [3, 3, 3, 3, 5, 4]]))  # carried column below the next one
    out.append(torch.tensor([[3, 4, 3], [4, 3, 4]]))  # no separator
    return out


def raising():
    # Row 0 ends its separators at column 5, row 1's first (not at an end) is at column 3:
    # torch.arange(0, 3 - 5) raises.
    return torch.tensor([[1, 3, 3, 3, 3, 5, 3, 3], [3, 3, 3, 2, 3, 3, 3, 3]])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_fixed_spans_equal_the_original(modules, backend):
    original, fixed = modules
    cases = inputs() if backend == "aot_eager" else inputs()[-3:]
    raised = []
    for ids in cases:
        torch._dynamo.reset()  # a graph per shape: past Dynamo's recompile limit otherwise
        spans = torch.compile(fixed.token_spans, fullgraph=True, backend=backend, dynamic=False)
        points = torch.compile(fixed.marked_points, fullgraph=True, backend=backend, dynamic=False)
        try:
            want_blocks, want_positions = original.token_spans(ids)
        except RuntimeError as e:  # a carried column above a separator's: arange raises
            with pytest.raises(RuntimeError) as got:
                spans(ids)
            assert str(got.value) == str(e)
            raised.append(ids)
            continue
        finally:
            assert torch.equal(points(ids), original.marked_points(ids)), ids
        got_blocks, got_positions = spans(ids)
        assert torch.equal(got_blocks, want_blocks), ids
        assert torch.equal(got_positions, want_positions), ids
        assert got_positions.dtype == want_positions.dtype
    if backend == "aot_eager":
        assert 0 < len(raised) < len(cases) - 3


def test_the_arange_error_is_raised_compiled_and_eagerly(modules):
    original, fixed = modules
    ids = raising()
    with pytest.raises(RuntimeError) as want:
        original.token_spans(ids)
    with pytest.raises(RuntimeError) as eager:
        fixed.token_spans(ids)
    torch._dynamo.reset()
    spans = torch.compile(fixed.token_spans, fullgraph=True, backend="aot_eager", dynamic=False)
    with pytest.raises(RuntimeError) as got:
        spans(ids)
    assert str(got.value) == str(want.value) == str(eager.value)


def test_the_model_compiles_to_one_graph_with_the_original_outputs(modules):
    original, fixed = modules
    torch.manual_seed(0)
    want_model = original.Model().eval()
    got_model = fixed.Model().eval()
    got_model.load_state_dict(want_model.state_dict())
    ids = inputs()[-3]
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        want = want_model(ids)
        got = torch.compile(got_model, backend=counting)(ids)
        before = len(graphs)
        torch._dynamo.reset()
        torch.compile(want_model, backend=counting)(ids)
    assert torch.equal(got, want)
    assert before == 1
    assert len(graphs) - before > 1  # the original breaks


def test_eagerly_the_loop_runs_as_written(modules, monkeypatch):
    _, fixed = modules
    calls = []
    real = torch.nonzero
    monkeypatch.setattr(torch, "nonzero", lambda *a, **k: calls.append(1) or real(*a, **k))
    ids = inputs()[-3]
    fixed.token_spans(ids)
    assert calls  # the index is made: the loop runs as written


def test_the_static_form_matches_the_loop_for_every_small_mask(monkeypatch):
    # Every 2 x 4 mask, with the loop's body applied by hand against the runtime's writes.
    from conftest import load_runtime_block

    rt = load_runtime_block("span_loop", "_graphmend_span_loop_v1", "GRAPHMEND_SPAN_LOOP", "auto")
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    b, t = 2, 4
    for bits in range(1 << (b * t)):
        mask = torch.tensor([(bits >> i) & 1 for i in range(b * t)]).reshape(b, t).bool()
        want_sq = torch.zeros(b, t, t, dtype=torch.bool)
        want_line = torch.full((b, t), -7)
        prev = 0
        for r, c in torch.nonzero(mask).tolist():
            if c % 2 == 0:
                want_sq[r, c, c] = True
            else:
                want_sq[r, prev + 1 : c + 1, prev + 1 : c + 1] = True
                want_line[r, prev + 1 : c + 1] = 3
            want_line[r, c] = 9
            prev = c
        got_sq = torch.zeros(b, t, t, dtype=torch.bool)
        got_line = torch.full((b, t), -7)
        idx = rt["_graphmend_span_index"](mask)
        assert not isinstance(idx, torch.Tensor)
        steps = rt["_graphmend_span_range"](
            idx,
            0,
            lambda r, c, p: (
                (got_sq, "p3", True, (c % 2 == 0)),
                (got_sq, "s3", True, ~(c % 2 == 0)),
                (got_line, "s2", 3, ~(c % 2 == 0)),
                (got_line, "p2", 9, True),
            ),
        )
        assert tuple(steps) == ()
        assert torch.equal(got_sq, want_sq), mask
        assert torch.equal(got_line, want_line), mask


def test_what_does_not_fit_runs_the_loop_as_written(monkeypatch):
    # A 3-D mask, a target of another shape, one that requires grad, and a value masked_fill_
    # would convert otherwise than the index store: the index is torch.nonzero's, nothing is
    # written by the runtime, and the loop gets its iterations.
    from conftest import load_runtime_block

    rt = load_runtime_block("span_loop", "_graphmend_span_loop_v1", "GRAPHMEND_SPAN_LOOP", "auto")
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    mask = torch.tensor([[True, False, True], [False, True, False]])
    assert isinstance(rt["_graphmend_span_index"](mask.unsqueeze(0)), torch.Tensor)
    for target, value in [
        (torch.zeros(2, 4), 1),  # not (B, T)
        (torch.zeros(2, 3, requires_grad=True), 1),
        (torch.zeros(2, 3, dtype=torch.float16), 1e10),  # the store gives inf, masked_fill_ raises
        (torch.zeros(2, 3, dtype=torch.int32), 1000),
    ]:
        before = target.detach().clone()
        idx = rt["_graphmend_span_index"](mask)
        steps = rt["_graphmend_span_range"](idx, 0, lambda r, c, p: ((target, "p2", value, True),))
        assert list(steps) == [0, 1, 2]
        assert torch.equal(idx[1], torch.nonzero(mask)[1])
        assert torch.equal(target.detach(), before)


def test_the_separators_are_those_of_the_mask_when_the_index_was_made(monkeypatch):
    # A write into the mask between the index and the loop reaches neither form.
    from conftest import load_runtime_block

    rt = load_runtime_block("span_loop", "_graphmend_span_loop_v1", "GRAPHMEND_SPAN_LOOP", "auto")
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    marks = torch.tensor([[False, True, False]])
    want = torch.zeros(1, 3, dtype=torch.long)
    for r, c in torch.nonzero(marks).tolist():
        want[r, c] = 1
    idx = rt["_graphmend_span_index"](marks)
    marks[:, 0] = True
    got = torch.zeros(1, 3, dtype=torch.long)
    assert tuple(rt["_graphmend_span_range"](idx, 0, lambda r, c, p: ((got, "p2", 1, True),))) == ()
    assert torch.equal(got, want)


def test_a_test_of_several_elements_runs_the_loop_as_written(monkeypatch):
    # `c < LIMIT` with LIMIT of two elements: the original's `if` raises, the static form would
    # broadcast. The runtime sees the test's size for one separator and keeps the loop.
    from conftest import load_runtime_block

    rt = load_runtime_block("span_loop", "_graphmend_span_loop_v1", "GRAPHMEND_SPAN_LOOP", "auto")
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    limit = torch.tensor([[2], [3]])
    mask = torch.tensor([[True, False, True], [False, True, False]])
    out = torch.zeros(2, 3, dtype=torch.long)
    idx = rt["_graphmend_span_index"](mask)
    steps = rt["_graphmend_span_range"](idx, 0, lambda r, c, p: ((out, "p2", 1, c < limit),))
    assert list(steps) == [0, 1, 2]
    assert not out.any()
