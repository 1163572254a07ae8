"""tests/fixtures/predicated-control-flow/narrowing.py with real torch: the sites graphmend
reports are the graph breaks Dynamo takes (2 in the original, on tensor tests only; none on
a name an isinstance test narrowed to a Python number or a numpy array), the fixed file takes
none, and both give the same outputs eagerly and compiled, for tensor and numpy inputs."""
import json
import subprocess

import numpy as np
import torch
from torch._dynamo.utils import counters

from conftest import BINARY, REPO, fix_copy, load_module, require_graphmend

FIXTURE = REPO / "tests" / "fixtures" / "predicated-control-flow" / "narrowing.py"


def breaks_and_output(module, *args):
    torch._dynamo.reset()
    counters.clear()
    out = torch.compile(module.Model(), backend="eager")(*args)
    return sum(counters["graph_break"].values()), out


def test_sites_are_the_breaks_and_the_fix_removes_them(tmp_path):
    require_graphmend()
    fixed = load_module(fix_copy(FIXTURE, tmp_path, "--isolated", "--runtime", "inline"), "narrowing_fixed")
    original = load_module(FIXTURE, "narrowing_orig")
    x = torch.tensor([0.6, 1.2, 0.9])
    image = torch.tensor([0.5, 2.0, 3.0])
    breaks, expected = breaks_and_output(original, x, image)
    assert breaks == 2
    report = subprocess.run([str(BINARY), "check", "--isolated", "--exit-zero", "--output-format", "json", str(FIXTURE)],
                            check=True, capture_output=True, text=True).stdout
    lines = [s["line"] for f in json.loads(report)["files"] for s in f["sites"]]
    assert lines == [20, 30]  # the two tensor tests
    assert torch.equal(original.Model()(x, image), expected)
    fixed_breaks, out = breaks_and_output(fixed, x, image)
    assert fixed_breaks == 0
    assert torch.equal(out, expected)
    assert torch.equal(fixed.Model()(x, image), expected)
    # The numpy path (not traced here: torch.from_numpy of an ndarray argument) is the original's.
    array = np.array([0.5, 2.0, 3.0])
    assert torch.equal(fixed.to_unit(array), original.to_unit(array))
    assert fixed.clip(3.0, 2.0) == original.clip(3.0, 2.0) == 2.0
