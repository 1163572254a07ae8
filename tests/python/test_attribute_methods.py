"""tests/fixtures/predicated-control-flow/attribute_methods.py with real torch: the method a
forward calls on a module attribute breaks the graph once (a test on a buffer), graphmend
reports that one site, and the fixed file runs without a break and gives the original's
outputs, with the buffer's test false and true."""
import json
import subprocess

import torch
from torch._dynamo.utils import counters

from conftest import BINARY, REPO, fix_copy, load_module, require_graphmend

FIXTURE = REPO / "tests" / "fixtures" / "predicated-control-flow" / "attribute_methods.py"


def compiled(module, calls, x):
    model = module.Model()
    model.updater.calls.fill_(calls)
    torch._dynamo.reset()
    counters.clear()
    out = torch.compile(model, backend="eager")(x)
    return sum(counters["graph_break"].values()), out, model(x)


def test_the_attribute_method_is_in_scope_and_fixed(tmp_path):
    require_graphmend()
    report = subprocess.run([str(BINARY), "check", "--isolated", "--exit-zero", "--output-format", "json", str(FIXTURE)],
                            check=True, capture_output=True, text=True).stdout
    sites = [(s["line"], s["status"]) for f in json.loads(report)["files"] for s in f["sites"]]
    assert sites == [(16, "fixable")]  # check writes nothing
    original = load_module(FIXTURE, "attribute_methods_orig")
    fixed = load_module(fix_copy(FIXTURE, tmp_path, "--isolated", "--runtime", "inline"), "attribute_methods_fixed")
    x = torch.tensor([0.5, 1.0, 2.0])
    for calls in (0, 5):
        breaks, out, eager = compiled(original, calls, x)
        assert breaks == 1
        assert torch.equal(out, eager)
        fixed_breaks, fixed_out, fixed_eager = compiled(fixed, calls, x)
        assert fixed_breaks == 0
        assert torch.equal(fixed_out, out) and torch.equal(fixed_eager, eager)
