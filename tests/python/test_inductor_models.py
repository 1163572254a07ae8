"""Fixed transformers models compiled with Inductor on CPU run and match eager.

Regression test: at torch 2.12.1, Inductor ran graphmend's message op (deferred_effects)
without flushing its pending fused kernels when the op had no tensor argument, and freed
their inputs first: the fixed Marian, Whisper and LayoutLMv3 raised UnboundLocalError on
their first compiled call (found by benchmarks/latency.py). The op now always gets a
tensor. Each model runs in a fresh process with an empty Inductor cache.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require_graphmend

SCRIPT = r"""
import sys
import torch
sys.path.insert(0, sys.argv[2])
from _harness.models import MODELS
spec = MODELS[sys.argv[1]]
torch.manual_seed(0)
model = spec.build()
inputs = spec.inputs(torch.float32)
import transformers
assert transformers.__file__.startswith(sys.argv[3]), transformers.__file__
with torch.no_grad():
    want = model(**inputs)
    got = torch.compile(model, backend="inductor", dynamic=False)(**inputs)
flat = lambda o: [t for t in (o.to_tuple() if hasattr(o, "to_tuple") else o) if isinstance(t, torch.Tensor)]
pairs = list(zip(flat(want), flat(got)))
assert pairs
for a, b in pairs:
    torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
print("OK", len(pairs))
"""


@pytest.fixture(scope="module")
def fixed_site(tmp_path_factory):
    """The folder holding a fixed copy of transformers: the harness's (model_bench.fix_package),
    shared with the model tests through GRAPHMEND_FIX_CACHE when conftest set it."""
    require_graphmend()
    import transformers

    from _harness.model_bench import fix_package

    installed = os.path.realpath(os.path.dirname(transformers.__file__))
    copy, fix = fix_package(Path(installed), tmp_path_factory.mktemp("work") / "site")
    assert fix.returncode == 0, fix.stderr[-4000:]
    return copy.parent


@pytest.mark.slow
@pytest.mark.parametrize("model", ["marian", "whisper", "layoutlmv3"])
def test_fixed_model_compiles_with_inductor(model, fixed_site, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(fixed_site), PYTHONDONTWRITEBYTECODE="1",
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"), TORCHINDUCTOR_FX_GRAPH_CACHE="0",
               HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, model, str(REPO / "benchmarks"), str(fixed_site)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0 and "OK" in proc.stdout, (proc.stdout + proc.stderr)[-4000:]
