"""The graph break a site reports is the one Dynamo makes there (torch 2.12.1): the same line,
the same kind, and none where Dynamo makes none. Run through build/graphmend and
torch._dynamo.explain on the original fixture."""
import os
import re
import subprocess
import sys

import torch

from conftest import REPO, check_sites, load_module, require_graphmend

# Dynamo's reason for a data-dependent jump (GB0170, "Data-dependent branching") as explain
# words it for these sites.
KINDS = {"GB0170": "generic_jump TensorVariable()"}


def reported(fixture):
    return {s["line"]: s["graph_break"] for _, s in check_sites(fixture)}


def dynamo_breaks(module, *args):
    torch._dynamo.reset()
    explained = torch._dynamo.explain(module.Model())(*args)
    return {r.user_stack[-1].lineno: str(r.reason).splitlines()[0] for r in explained.break_reasons if r.user_stack}


def test_asserts_name_the_break_dynamo_makes():
    # asserts.py: an assert with no message or a constant one makes no break (Dynamo keeps it
    # in the graph); one whose message is built at run time, or whose test takes a tensor's
    # truth with Python's `not`/`and`, is a data-dependent jump: GB0170, not GB0171 ("assert
    # with non-string message", which the c20 report used to claim).
    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "predicated-validation" / "asserts.py"
    sites = reported(fixture)
    breaks = dynamo_breaks(load_module(fixture, "asserts_orig"), torch.rand(3) + 0.5)
    assert sorted(breaks) == [14, 15, 16, 17]
    assert sorted(line for line, gb in sites.items() if gb) == sorted(breaks)
    assert sorted(line for line, gb in sites.items() if not gb) == [12, 13]
    for line, reason in breaks.items():
        assert KINDS[sites[line]] == reason, (line, sites[line], reason)


def test_a_check_whose_test_holds_a_dynamic_shape_op_is_refused_and_the_op_reported():
    # shape_tests.py: Dynamo breaks at `torch.unique_consecutive` (GB0036) inside the test of
    # the check; GM301 used to report "removes GB0170" there (T5's eos check, modeling_t5.py).
    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "predicated-validation" / "shape_tests.py"
    sites = [(s["line"], s["code"], s["status"], s["graph_break"]) for _, s in check_sites(fixture)]
    assert ("GM301", "refused") in {(code, status) for _, code, status, _ in sites}
    assert not [s for s in sites if s[2] != "refused"]
    module = load_module(fixture, "shape_tests_orig")
    torch._dynamo.reset()
    explained = torch._dynamo.explain(module.Model())(torch.tensor([[1, 2, 0], [3, 1, 2]]), torch.randn(2, 3, 4))
    breaks = {r.user_stack[-1].lineno: str(r.reason).splitlines()[0] for r in explained.break_reasons if r.user_stack}
    assert breaks == {14: "Dynamic shape operator", 16: "Dynamic shape operator"}
    # Each break is reported by GM401 with its kind; the check's site claims none of its own.
    assert {(line, gb) for line, code, _, gb in sites if code == "GM401"} == {(14, "GB0036"), (16, "GB0036")}


UNTRACEABLE = '''import bisect
from bisect import bisect_left

import torch
import tqdm
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        grid = [0.1, 0.5, 0.9]
        i = bisect.bisect(grid, 0.5)
        j = bisect_left(grid, 0.25)
        for _ in tqdm.tqdm(range(2), disable=True):
            x = x + 1
        if not torch.compiler.is_compiling():
            bisect.insort(grid, 0.75)
        return x * (i + j)
'''


def test_untraceable_calls_are_the_breaks_dynamo_makes(tmp_path):
    # GM402 reports a call of a C function (bisect) or of a library in Dynamo's skip list (tqdm)
    # at the line where Dynamo breaks ("Attempted to call function marked as skipped", GB0007),
    # and nothing in the branch Dynamo never traces.
    require_graphmend()
    fixture = tmp_path / "untraceable.py"
    fixture.write_text(UNTRACEABLE)
    sites = {s["line"]: (s["code"], s["status"], s["graph_break"]) for _, s in check_sites(fixture)}
    assert sites == {12: ("GM402", "refused", "GB0007"), 13: ("GM402", "refused", "GB0007"),
                     14: ("GM402", "refused", "GB0007")}, sites
    # explain() counts no break for a skipped call: Dynamo's own log is read instead, each
    # record placed at the last frame of the fixture in its traceback (tqdm's break is in
    # Dynamo's iteration polyfill, called from line 14).
    run = subprocess.run([sys.executable, "-c", "import runpy, torch; m = runpy.run_path(%r); "
                          "torch.compile(m['Model'](), backend='eager')(torch.ones(2))" % str(fixture)],
                         env={**os.environ, "TORCH_LOGS": "graph_breaks"}, capture_output=True, text=True,
                         check=True)
    breaks = {}
    for record in run.stderr.split("Graph break in user code at ")[1:]:
        lines = re.findall(r'File "%s", line (\d+)' % re.escape(str(fixture)), record)
        at = re.match(r"(\S+):(\d+)", record)
        line = int(lines[-1]) if lines else int(at.group(2))
        breaks[line] = breaks.get(line, True) and "function marked as skipped" in record
    assert breaks == {12: True, 13: True, 14: True}, run.stderr[-3000:]
