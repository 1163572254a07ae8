"""tests/fixtures/data-dependent-shape/size_expressions.py with real torch: the lines graphmend
reports (GM401, refused) are the lines where Dynamo breaks the graph, no more and no fewer."""
import json
import subprocess

import torch

from conftest import BINARY, REPO, check_sites, load_module, require_graphmend

FIXTURE = REPO / "tests" / "fixtures" / "data-dependent-shape" / "size_expressions.py"


def test_reported_lines_are_the_break_lines():
    require_graphmend()
    report = subprocess.run([str(BINARY), "check", "--isolated", "--exit-zero", "--output-format", "json", str(FIXTURE)],
                            check=True, capture_output=True, text=True).stdout
    sites = [(s["line"], s["code"], s["status"]) for f in json.loads(report)["files"] for s in f["sites"]]
    assert {status for _, _, status in sites} == {"refused"}
    module = load_module(FIXTURE, "size_expressions_orig")
    torch._dynamo.reset()
    args = (torch.tensor([0, 2, 1]), torch.ones(4, 4, dtype=torch.bool), torch.ones(3, 2))
    explained = torch._dynamo.explain(module.Model())(*args)
    lines = sorted({r.user_stack[-1].lineno for r in explained.break_reasons if r.user_stack})
    assert lines == [13, 30, 32, 33]
    assert sorted(line for line, _, _ in sites) == lines


def test_masks_made_by_calls_are_reported_where_dynamo_breaks():
    # mask_calls.py: `m.any(dim=-1)`, `.bool()`, `.to(torch.bool)`, `torch.isnan(x)...all(dim=-1)`
    # masks, a mask first among indices, `x[m][0]` (one break), `y[m] += v`, a size read from the
    # mask and a one-element `m.all()`; the masked store `y[m] = v` does not break.
    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "data-dependent-shape" / "mask_calls.py"
    report = subprocess.run([str(BINARY), "check", "--isolated", "--exit-zero", "--output-format", "json", str(fixture)],
                            check=True, capture_output=True, text=True).stdout
    sites = [(s["line"], s["code"], s["status"], s["graph_break"]) for f in json.loads(report)["files"] for s in f["sites"]]
    assert {(code, status) for _, code, status, _ in sites} == {("GM401", "refused")}
    module = load_module(fixture, "mask_calls_orig")
    torch._dynamo.reset()
    idx = torch.tensor([[2, 0], [1, 3], [2, 2], [0, 1]])
    explained = torch._dynamo.explain(module.Model())(torch.randn(4, 3), idx)
    breaks = {r.user_stack[-1].lineno: str(r.reason).splitlines()[0] for r in explained.break_reasons if r.user_stack}
    assert sorted(breaks) == [15, 16, 17, 18, 21, 22, 23, 24]
    assert sorted(line for line, _, _, _ in sites) == sorted(breaks)
    # Dynamo's kind of break and the report's graph-break id agree for the mask reads.
    kinds = {"GB0036": "Dynamic shape operator", "GB0033": "Data dependent operator"}
    for line, _, _, gb in sites:
        if gb in kinds:
            assert kinds[gb] in breaks[line], (line, gb, breaks[line])


def test_tensor_slice_bounds_are_reported_where_dynamo_breaks():
    # slice_bounds.py: one form per module. A tensor bound, read or stored, breaks, and Dynamo
    # skips the frame (no graph at all); an int bound and a bound made from a `forward`
    # parameter that the caller passes an int do not.
    from torch._dynamo.testing import CompileCounter

    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "data-dependent-shape" / "slice_bounds.py"
    sites = {s["line"]: (s["code"], s["status"], s["graph_break"]) for _, s in check_sites(fixture)}
    assert set(sites.values()) == {("GM401", "refused", "GB0124"), ("GM401", "refused", "GB0033")}
    module = load_module(fixture, "slice_bounds_orig")
    breaking = set()
    for name in ("ReadBound", "SpanBound", "StoreBound", "NarrowStart", "IntBound", "ParameterBound"):
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        counter = CompileCounter()
        args = (torch.randn(2, 6), torch.tensor([2, 1]))
        out = torch.compile(getattr(module, name)(), backend=counter, dynamic=False)(*args)
        assert torch.equal(out, getattr(module, name)()(*args))
        if counter.frame_count != 1 or torch._dynamo.utils.counters["graph_break"]:
            breaking.add(name)
    assert breaking == {"ReadBound", "SpanBound", "StoreBound", "NarrowStart"}
    # One reported line in the forward of each module that breaks.
    lines = fixture.read_text().splitlines()
    owners = [next(l for l in reversed(lines[:line]) if l.startswith("class ")).split()[1].split("(")[0]
              for line in sites]
    assert sorted(owners) == sorted(breaking)
