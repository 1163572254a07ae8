"""GM201's state form (unsafe fix): branches that rebind a buffer, as transformers' longrope
update does. Runs the golden fixture tests/fixtures/predicated-control-flow/state_unsafe.py
(class Rope) original and fixed, eagerly and under torch.compile, with real torch; and
transformers' own longrope update (modeling_rope_utils.py, Phi-3) fixed by default and with
--unsafe-fixes, to show what the unsafe fix costs."""
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


# ------------------------------------------------ transformers' longrope update (Phi-3)


def _fixed_rope_utils(tmp_path, *flags):
    """transformers' modeling_rope_utils.py fixed with `flags`, next to a forward that calls its update
    (so the longrope site is in compiled scope), imported as a module of transformers."""
    rope = pytest.importorskip("transformers.modeling_rope_utils")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    source = Path(rope.__file__).read_text()
    (pkg / "modeling_rope_utils.py").write_text(source)
    (pkg / "rotary.py").write_text("from torch import nn\nfrom .modeling_rope_utils import dynamic_rope_update\n\n\n"
                                   "class Rotary(nn.Module):\n    @dynamic_rope_update\n"
                                   "    def forward(self, x, position_ids):\n        return self.inv_freq\n")
    subprocess.run([str(BINARY), "fix", str(pkg), "--runtime", "inline", "--isolated", *flags],
                   check=True, capture_output=True)
    fixed = pkg / "modeling_rope_utils.py"
    return source, fixed.read_text(), load_module(fixed, f"transformers._graphmend_rope{len(flags)}")


def _ropes(rope_utils):
    """The real Phi3RotaryEmbedding (original max 16, max 64) and one whose update is `rope_utils`'s."""
    from transformers import Phi3Config
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding
    import torch

    config = Phi3Config(hidden_size=64, num_attention_heads=2, max_position_embeddings=64,
                        original_max_position_embeddings=16,
                        rope_scaling={"type": "longrope", "short_factor": [1.0] * 16, "long_factor": [2.0] * 16})
    body = Phi3RotaryEmbedding.forward.__wrapped__.__wrapped__
    forward = torch.no_grad()(rope_utils.dynamic_rope_update(body))
    fixed = type("FixedRope", (Phi3RotaryEmbedding,), {"forward": forward})
    return Phi3RotaryEmbedding(config), fixed(config)


def test_longrope_default_fix_leaves_the_site(tmp_path):
    require_graphmend()
    source, fixed, _ = _fixed_rope_utils(tmp_path)
    assert fixed == source


def test_longrope_unsafe_fix_costs_identity_the_cache_and_maker_calls(tmp_path):
    """What --unsafe-fixes costs on Phi-3 (docs/rules/GM201.md, "Phi-3 longrope"): no graph break and the
    same outputs, but under torch.compile inv_freq is an equal copy (not long_inv_freq, not
    original_inv_freq), long_inv_freq is never stored, and rope_init_fn runs on calls where the
    test is false. Eagerly every object is the original's."""
    require_graphmend()
    import torch
    import torch._dynamo

    source, fixed_text, rope_utils = _fixed_rope_utils(tmp_path, "--unsafe-fixes")
    assert fixed_text != source and "_graphmend_if_state(seq_len > original_max_position_embeddings" in fixed_text
    x = torch.randn(1, 4, 64)
    lengths = [24, 8, 24]  # beyond original max 16, within, beyond
    a, b = _ropes(rope_utils)
    for n in lengths:  # eagerly
        pos = torch.arange(n)[None]
        assert all(torch.equal(u, v) for u, v in zip(a(x, pos), b(x, pos)))
        assert (a.inv_freq is a.__dict__.get("long_inv_freq")) == (b.inv_freq is b.__dict__.get("long_inv_freq"))
        assert (a.inv_freq is a.original_inv_freq) == (b.inv_freq is b.original_inv_freq)

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    a, b = _ropes(rope_utils)
    ca, cb = torch.compile(a, backend="eager"), torch.compile(b, backend="eager")
    seen = []
    for n in lengths:
        pos = torch.arange(n)[None]
        want = ca(x, pos)
        breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
        got = cb(x, pos)
        assert sum(torch._dynamo.utils.counters["graph_break"].values()) == breaks  # the fixed call broke nothing
        assert all(torch.equal(u, v) for u, v in zip(want, got)) and torch.equal(a.inv_freq, b.inv_freq)
        seen.append((a.inv_freq is a.__dict__.get("long_inv_freq"), a.inv_freq is a.original_inv_freq,
                     b.inv_freq is b.__dict__.get("long_inv_freq"), b.inv_freq is b.original_inv_freq))
    assert breaks > 0  # the original breaks at modeling_rope_utils.py:50
    # original: long_inv_freq, original_inv_freq, long_inv_freq; fixed: a copy each time
    assert seen == [(True, False, False, False), (False, True, False, False), (True, False, False, False)]
    assert "long_inv_freq" in a.__dict__ and "long_inv_freq" not in b.__dict__

    torch._dynamo.reset()
    calls = {"original": 0, "fixed": 0}
    for name, m in zip(calls, _ropes(rope_utils)):
        make = m.rope_init_fn

        def counted(*args, _name=name, _make=make, **kwargs):
            calls[_name] += 1
            return _make(*args, **kwargs)

        m.rope_init_fn = counted
        compiled = torch.compile(m, backend="eager")
        for _ in range(2):
            compiled(x, torch.arange(8)[None])  # within original max 16: the test is false
    assert calls == {"original": 0, "fixed": 2}  # the maker's effect, replayed by Dynamo on every call
