"""GM201's layout note (docs/rules/GM201.md, "Fix safety"), measured on real torch: where the
report says the code does not show that the branch values agree, the select holds only where
they do; where it carries no note, the break is gone for every input tried.

tests/fixtures/predicated-control-flow/layouts.py, fixed with build/graphmend, run with the
`torch._dynamo.explain` (torch 2.12.1: GB0170 for the data-dependent `if`)."""
import torch

from conftest import REPO, fix_copy, load_module, require_graphmend

FIXTURE = REPO / "tests" / "fixtures" / "predicated-control-flow" / "layouts.py"


def _breaks(model, *args):
    torch._dynamo.reset()
    return torch._dynamo.explain(model)(*args).graph_break_count


def _fixed(tmp_path):
    require_graphmend()
    return load_module(FIXTURE, "layouts_orig"), load_module(fix_copy(FIXTURE, tmp_path), "layouts_fixed")


def test_mask_broadcast_keeps_its_break_only_where_the_shapes_differ(tmp_path):
    orig, fixed = _fixed(tmp_path)
    report = (FIXTURE.with_suffix(".report.txt")).read_text()
    assert "values of `mask4d` agree at run time" in report
    for batch, breaks_after in ((1, 0), (2, 1)):
        scores = torch.randn(batch, 2, 4, 4)
        mask = torch.ones(batch, 4, dtype=torch.long)
        mask[0, -1] = 0
        assert _breaks(orig.Masker(), scores, mask) == 1
        assert _breaks(fixed.Masker(), scores, mask) == breaks_after, batch
        want = orig.Masker()(scores, mask)
        for model in (fixed.Masker(), torch.compile(fixed.Masker(), backend="eager")):
            assert torch.equal(model(scores, mask), want)


def test_sites_without_the_note_lose_their_breaks(tmp_path):
    orig, fixed = _fixed(tmp_path)
    report = (FIXTURE.with_suffix(".report.txt")).read_text()
    assert sum("agree at run time" in line for line in report.splitlines()) == 3  # mask4d, tokens x2
    for dtype in (torch.float32, torch.float16):
        for sign in (1.0, -1.0):
            h = (torch.randn(3, 3) + 2 * sign).to(dtype)
            a, b = torch.randn(3, 1).to(dtype), torch.randn(1, 3).to(dtype)
            assert _breaks(orig.Shown(), h, a, b) >= 2
            assert _breaks(fixed.Shown(), h, a, b) == 0, (dtype, sign)
            want = orig.Shown()(h, a, b)
            for model in (fixed.Shown(), torch.compile(fixed.Shown(), backend="eager")):
                got = model(h, a, b)
                assert all(torch.equal(x, y) for x, y in zip(got, want)), (dtype, sign)
