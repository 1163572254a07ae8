"""GM202 compile-skipped-default on real torch: the fixture's stacks (tests/fixtures/
compile-skipped-default/stacks.py) abandon their frame under torch.compile before the fix
(Dynamo's "Observed exception", GB0088) and compile to one graph after it, with the same
outputs eagerly and compiled. The refused sites keep their code and their behaviour."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import BINARY, REPO, require_graphmend

FIXTURE = REPO / "tests" / "fixtures" / "compile-skipped-default" / "stacks.py"

# The head of both probes: imports, and a module loaded from a path under a name.
LOAD = textwrap.dedent('''
    import importlib.util, json, sys
    import torch
    from torch._dynamo.utils import counters

    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
''')

PROBE = LOAD + textwrap.dedent('''

    def abandoned():
        return sum(n for k, n in counters["unimplemented"].items() if k.startswith("Observed exception"))

    def run(mod, cls_name):
        torch._dynamo.reset()
        counters.clear()
        graphs = []
        def backend(gm, example_inputs):
            graphs.append(len(gm.graph.nodes))
            return gm.forward
        torch.manual_seed(0)
        model = getattr(mod, cls_name)()
        (x,) = mod.make_inputs()
        eager = model(x)
        try:
            compiled = torch.compile(model, backend=backend)(x)
        except Exception as exc:  # the original of a refused site may raise under compile
            compiled = f"{type(exc).__name__}: {exc}"
        return eager, compiled, (len(graphs), abandoned(), counters["frames"]["total"])

    def same(a, b):
        return a == b if isinstance(a, str) or isinstance(b, str) else torch.equal(a, b)

    original, fixed = load(sys.argv[1], "original"), load(sys.argv[2], "fixed")
    out = {}
    for name in sys.argv[3:]:
        e0, c0, g0 = run(original, name)
        e1, c1, g1 = run(fixed, name)
        out[name] = {"graphs_before": g0[0], "graphs_after": g1[0], "abandoned_before": g0[1],
                     "abandoned_after": g1[1], "frames_before": g0[2], "frames_after": g1[2],
                     "eager_equal": same(e0, e1), "compiled_equal": same(c0, c1),
                     "compiled_matches_eager": same(c1, e1), "raised_before": c0 if isinstance(c0, str) else None}
    print(json.dumps(out))
''')


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    require_graphmend()
    tmp = tmp_path_factory.mktemp("gm202")
    fixed = tmp / "fixed.py"
    binary = os.environ.get("GRAPHMEND_BIN", str(BINARY))
    proc = subprocess.run([*binary.split(), "fix", str(FIXTURE), "-o", str(fixed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    probe = tmp / "probe.py"
    probe.write_text(PROBE)
    names = ["SwitchStack", "LongStack", "AcceptsNone", "T5Style", "OwnWrapper", "ArgumentChosenPath", "CallInBetween"]
    run = subprocess.run([sys.executable, str(probe), str(FIXTURE), str(fixed), *names],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    import json
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SwitchStack", "LongStack"])
def test_fixed_stack_compiles_to_one_graph_with_the_same_outputs(measured, name):
    row = measured[name]
    assert row["abandoned_before"] == 1, row  # Dynamo's "Observed exception" (GB0088): frame run eagerly
    assert row["abandoned_after"] == 0 and row["frames_after"] == 1 and row["graphs_after"] == 1, row
    assert row["eager_equal"] and row["compiled_equal"] and row["compiled_matches_eager"], row


@pytest.mark.slow
@pytest.mark.parametrize("name", ["AcceptsNone", "T5Style", "OwnWrapper", "ArgumentChosenPath", "CallInBetween"])
def test_untouched_and_refused_keep_their_behaviour(measured, name):
    row = measured[name]
    assert row["graphs_after"] == row["graphs_before"], row
    assert row["abandoned_after"] == row["abandoned_before"], row
    assert row["eager_equal"] and row["compiled_equal"], row


@pytest.mark.slow
def test_a_wrapper_dynamo_traces_makes_the_original_raise_under_compile(measured):
    """Why OwnWrapper is refused: its original raises under torch.compile (the wrapper returns
    True even in the eager run after Dynamo abandons the frame), and the fixed file keeps that."""
    row = measured["OwnWrapper"]
    assert row["raised_before"] and "'NoneType' object is not subscriptable" in row["raised_before"], row


DYNAMIC_BELOW = REPO / "tests" / "fixtures" / "compile-skipped-default" / "dynamic_below.py"

BREAKS = LOAD + textwrap.dedent('''

    def breaks(mod):
        torch._dynamo.reset()
        counters.clear()
        torch.manual_seed(0)
        model = mod.Stack()
        x = torch.randn(2, 4, 8)
        eager = model(x)
        compiled = torch.compile(model, backend="eager")(x)
        return sum(counters["graph_break"].values()), torch.equal(eager, compiled)

    print(json.dumps({"original": breaks(load(sys.argv[1], "original")),
                      "default_made": breaks(load(sys.argv[2], "default_made"))}))
''')


@pytest.mark.slow
def test_a_default_above_a_refused_dynamic_shape_is_refused(tmp_path):
    """Why GM202 is refused where the file keeps a data-dependent shape as written: made
    under compile too, the default lets Dynamo trace the frame, which then breaks at the
    gather it inlines (2 breaks, against 1 when the frame is abandoned and the gather's
    module is compiled on its own). graphmend leaves the file byte-identical."""
    require_graphmend()
    import json
    out = tmp_path / "fixed.py"
    proc = subprocess.run([str(BINARY), "fix", str(DYNAMIC_BELOW), "-o", str(out)], capture_output=True, text=True)
    assert "GM202 [refused]" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert not out.exists() or out.read_bytes() == DYNAMIC_BELOW.read_bytes()
    made = tmp_path / "default_made.py"
    made.write_text(DYNAMIC_BELOW.read_text().replace(
        "if attention_mask is None and not is_compiling():", "if attention_mask is None:"))
    probe = subprocess.run([sys.executable, "-c", BREAKS, str(DYNAMIC_BELOW), str(made)],
                           capture_output=True, text=True, check=True)
    rows = json.loads(probe.stdout.strip().splitlines()[-1])
    assert rows["original"] == [1, True] and rows["default_made"] == [2, True], rows
