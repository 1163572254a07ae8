"""tests/fixtures/data-dependent-shape/size_expressions.py with real torch: the lines graphmend
reports (GM401, refused) are the lines where Dynamo breaks the graph, no more and no fewer."""
import json
import subprocess

import torch

from conftest import BINARY, REPO, load_module, require_graphmend

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
