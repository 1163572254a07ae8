"""GM201's state form (unsafe fix): branches that rebind a buffer, as transformers' longrope
update does. Runs the golden fixture tests/fixtures/predicated-control-flow/state_unsafe.py
(class Rope) original and fixed, eagerly and under torch.compile, with real torch."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import BINARY, load_module, require_graphmend  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "tests/fixtures/predicated-control-flow/state_unsafe.py"


def _fix(tmp_path, *flags):
    out = tmp_path / ("fixed_unsafe.py" if flags else "fixed_default.py")
    subprocess.run([str(BINARY), "fix", str(FIXTURE), "-o", str(out), *flags], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    require_graphmend()
    tmp = tmp_path_factory.mktemp("state")
    original = load_module(FIXTURE, "state_original")
    fixed = load_module(_fix(tmp, "--unsafe-fixes"), "state_fixed")
    return original, fixed


def _inputs(torch):
    long = torch.arange(4.0) + 10.0  # max + 1 > n: the long branch
    short = torch.arange(4.0)
    return [long, short, long, long, short]


def test_without_unsafe_fixes_the_file_is_unchanged(tmp_path):
    require_graphmend()
    assert _fix(tmp_path).read_text() == FIXTURE.read_text()


def test_eager_outputs_and_state_are_the_original(modules):
    import torch

    original, fixed = modules
    a, b = original.Rope(8), fixed.Rope(8)
    for x in _inputs(torch):
        assert torch.equal(a(x), b(x))
        # the same objects are bound: inv is long (or orig), as in the original
        assert hasattr(a, "long") == hasattr(b, "long")
        assert (a.inv is a.orig) == (b.inv is b.orig)
        assert (a.inv is getattr(a, "long", None)) == (b.inv is getattr(b, "long", None))
        assert torch.equal(a.inv, b.inv)


def test_compiled_no_break_no_recompile_same_values(modules):
    import torch
    import torch._dynamo

    original, fixed = modules
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    a, b = original.Rope(8), fixed.Rope(8)
    compiled = torch.compile(b, backend=counting, dynamic=False)
    for i, x in enumerate(_inputs(torch)):
        want = a(x)
        got = compiled(x)
        assert torch.equal(want, got), f"call {i + 1}"
        assert torch.equal(a.inv, b.inv), f"buffer after call {i + 1}"
        assert len(graphs) == 1, f"call {i + 1} made graph {len(graphs)}"
    # What the report calls unsafe: the cache is not filled under compile, and the
    # buffer is an equal tensor, not the one the branch named.
    assert not hasattr(b, "long") and hasattr(a, "long")
    assert b.inv is not b.orig


def test_report_names_the_unsafe_fix(tmp_path):
    require_graphmend()
    proc = subprocess.run([str(BINARY), "check", str(FIXTURE)], capture_output=True, text=True)
    line = next(ln for ln in proc.stderr.splitlines() if ":17:9:" in ln)
    assert "unsafe fix not applied (--unsafe-fixes)" in line
    assert "not the tensor the branch names" in line and "self.make(...) taken to have no effects" in line
