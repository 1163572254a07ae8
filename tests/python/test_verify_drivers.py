"""The drivers `graphmend verify` runs (docs/verify.md, "Drivers"), run here without the hook.

- `_graphmend_verify_file` on cases c01 and c04 makes the graphs the harness's compiled arm
  (benchmarks/_harness/case_arm.py, what `graph_breaks.py --case` reports as graphs_before)
  makes; it takes example_inputs() as a tuple or a dict; a file without the convention exits 1
  with the traceback on stderr and nothing on stdout.
- `_graphmend_verify_checkout` builds tests/checkouts/alpha (remote code) from the checkout's
  own files, never a copy in HF_MODULES_CACHE, importing them through sys.meta_path (where
  verify's redirecting finder sits); phi-a (a plain nn.Module model); a config-only checkout
  {"model_type": "gpt2"} with --tiny, which gives the harness's `sweep:gpt2` graphs; and the
  reference row t5 saved as a config.json, which gives the harness's `--model t5` graphs
  (benchmarks/_harness/model_arm.py). A folder without config.json exits 1.

Graph counts come from the drivers' test-only GRAPHMEND_VERIFY_DRIVER_COUNT=PATH.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import CASES, REPO

pytestmark = pytest.mark.slow

DRIVERS = REPO / "src" / "verify" / "python"
CHECKOUTS = REPO / "tests" / "checkouts"
HARNESS = REPO / "benchmarks" / "_harness"


def _env(tmp_path, **extra):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_MODULES_CACHE=str(tmp_path / "hf-modules"), **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DRIVERS), env.get("PYTHONPATH")]))
    return env


def run_driver(module, args, tmp_path, code=None):
    """`python -m MODULE ARGS` (or `python -c CODE ARGS`) with the count file; returns (proc, counts)."""
    count = tmp_path / "count.json"
    count.unlink(missing_ok=True)
    head = ["-c", code] if code else ["-m", module]
    proc = subprocess.run([sys.executable, *head, *map(str, args)], capture_output=True, text=True,
                          cwd=tmp_path, env=_env(tmp_path, GRAPHMEND_VERIFY_DRIVER_COUNT=str(count)),
                          timeout=600)
    counts = json.loads(count.read_text()) if count.exists() else None
    return proc, counts


def harness_case_graphs(case, tmp_path):
    """Graphs of the harness's compiled arm per input function of `case`."""
    work = tmp_path / "harness"
    work.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, str(HARNESS / "case_arm.py"), "--case", str(case), "--mode", "compiled",
                           "--out", "r.json", "--tensors", "t.pt", "--save-state", "sd.pt",
                           "--save-inputs", "in.pt"], capture_output=True, text=True, cwd=work, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {c["input"]: c["graphs"] for c in json.loads((work / "r.json").read_text())["calls"]}


def harness_model_graphs(name, tmp_path):
    """The first call's graphs of the harness's `--model NAME` arm on the installed transformers."""
    import transformers

    work = tmp_path / "harness"
    work.mkdir(exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.realpath(transformers.__file__)))
    proc = subprocess.run([sys.executable, str(HARNESS / "model_arm.py"), "--model", name, "--package-root", root,
                           "--out", "r.json", "--outputs", "o.pt", "--save-state", "sd.pt"],
                          capture_output=True, text=True, cwd=work, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((work / "r.json").read_text())
    assert result.get("exception") is None and "not_available" not in result, result
    return result["graphs"]


# --- _graphmend_verify_file ---------------------------------------------------------------------

@pytest.mark.parametrize("case", ["c01_defer_print_fstring", "c04_where_if_else"])
def test_file_driver_makes_the_harness_graphs(tmp_path, case):
    path = CASES / f"{case}.py"
    proc, counts = run_driver("_graphmend_verify_file", [path], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    want = harness_case_graphs(path, tmp_path)["example_inputs"]
    assert want == 2  # one break: the figure is worth comparing
    assert counts == {"graphs": want, "per_call": [want]}
    if case.startswith("c01"):  # the model's own print is the only stdout
        assert proc.stdout.count("hidden: mean=") == 1 and proc.stdout.count("\n") == 1, proc.stdout


def test_file_driver_calls_and_keyword_inputs(tmp_path):
    (tmp_path / "kw_model.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x, scale=1.0):
                x.mul_(2)  # in place on the input: each call must get fresh inputs
                return self.fc(x) * scale

        def example_inputs():
            return {"x": torch.ones(2, 4), "scale": 3.0}
    '''))
    proc, counts = run_driver("_graphmend_verify_file", [tmp_path / "kw_model.py", "--calls", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert counts == {"graphs": 1, "per_call": [1, 0]}
    assert proc.stdout == ""


def test_file_driver_failure_exits_1_with_the_traceback(tmp_path):
    (tmp_path / "no_inputs.py").write_text("from torch import nn\n\nclass Model(nn.Module):\n    pass\n")
    proc, counts = run_driver("_graphmend_verify_file", [tmp_path / "no_inputs.py"], tmp_path)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "example_inputs" in proc.stderr
    assert proc.stdout == "" and counts is None


# --- _graphmend_verify_checkout -----------------------------------------------------------------

def test_checkout_driver_builds_alpha_from_its_own_files(tmp_path):
    proc, counts = run_driver("_graphmend_verify_checkout", [CHECKOUTS / "alpha"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert counts["graphs"] > 1, counts  # alpha's breaks (tests/checkouts/README.md)
    assert "alpha attention: max score" in proc.stdout
    # transformers made no copy of the remote code to import instead of the checkout's files.
    modules = tmp_path / "hf-modules"
    assert not modules.exists() or not list(modules.rglob("*.py")), list(modules.rglob("*.py"))


# A finder first on sys.meta_path that loads the checkout's modules from another folder, as
# verify's GRAPHMEND_VERIFY_REDIRECT finder does: the driver must import through it.
REDIRECTED = textwrap.dedent('''
    import importlib.machinery, sys
    original, fixed = sys.argv[1], sys.argv[2]

    class Redirect:
        seen = []

        def find_spec(self, name, path=None, target=None):
            if path and original in list(path):
                self.seen.append(name)
                return importlib.machinery.PathFinder.find_spec(name, [fixed])
            return None

    sys.meta_path.insert(0, Redirect())
    import _graphmend_verify_checkout as driver
    code = driver.main([original])
    print("redirected:", ",".join(sorted(Redirect.seen)))
    sys.exit(code)
''')


def test_checkout_driver_imports_through_meta_path(tmp_path):
    original, fixed = tmp_path / "alpha", tmp_path / "fixed" / "alpha"
    shutil.copytree(CHECKOUTS / "alpha", original)
    shutil.copytree(CHECKOUTS / "alpha", fixed)
    model = fixed / "modeling_alpha.py"
    model.write_text(model.read_text().replace("alpha attention: max score", "FIXED COPY: max score"))
    proc, counts = run_driver(None, [original, fixed], tmp_path, code=REDIRECTED)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "FIXED COPY: max score" in proc.stdout and "alpha attention" not in proc.stdout, proc.stdout
    assert "redirected: graphmend_checkout.configuration_alpha,graphmend_checkout.modeling_alpha" in proc.stdout


def test_checkout_driver_builds_a_plain_module_model(tmp_path):
    proc, counts = run_driver("_graphmend_verify_checkout", [CHECKOUTS / "phi-a"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "phi-a attention" in proc.stdout and counts["graphs"] >= 1


def test_checkout_driver_tiny_config_only_matches_the_sweep(tmp_path):
    checkout = tmp_path / "gpt2"
    checkout.mkdir()
    (checkout / "config.json").write_text('{"model_type": "gpt2"}')
    proc, counts = run_driver("_graphmend_verify_checkout", [checkout, "--tiny"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert counts["per_call"][0] == harness_model_graphs("sweep:gpt2", tmp_path)
    assert proc.stdout == ""


def test_checkout_driver_reference_row_t5_matches_the_harness(tmp_path):
    """The reference row t5 at the pins, built through a checkout that is only its config.json."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from _harness.models import MODELS

    model = MODELS["t5"].build()
    model.config.architectures = [type(model).__name__]
    model.config.save_pretrained(tmp_path / "t5")
    proc, counts = run_driver("_graphmend_verify_checkout", [tmp_path / "t5"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    want = harness_model_graphs("t5", tmp_path)
    assert want > 1
    assert counts["per_call"][0] == want


def test_checkout_driver_without_config_exits_1(tmp_path):
    proc, counts = run_driver("_graphmend_verify_checkout", [CHECKOUTS / "delta"], tmp_path)
    assert proc.returncode == 1
    assert "config.json" in proc.stderr and "Traceback" in proc.stderr
    assert proc.stdout == "" and counts is None


# Remote code that leaves its weights to from_pretrained (ChatGLM2: skip_init, torch.empty, no
# post_init): built by the driver, its weights must be random numbers, the same in every run.
UNINITIALISED = {
    "config.json": '{"model_type": "omega", "initializer_range": 0.5, '
                   '"auto_map": {"AutoConfig": "configuration_omega.OmegaConfig", '
                   '"AutoModel": "modeling_omega.OmegaModel"}}',
    "configuration_omega.py": textwrap.dedent('''
        from transformers import PretrainedConfig

        class OmegaConfig(PretrainedConfig):
            model_type = "omega"
    '''),
    "modeling_omega.py": textwrap.dedent('''
        import torch
        from torch import nn
        from torch.nn.utils import skip_init

        class OmegaModel(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.proj = skip_init(nn.Linear, 64, 64)
                self.norm = nn.Parameter(torch.empty(64))
                self.scale = nn.Parameter(torch.full((64,), 3.0))

            def forward(self, hidden_states):
                w = self.proj.weight
                print("omega", bool(torch.isfinite(w).all()), round(w.std().item(), 1),
                      self.proj.bias.abs().sum().item(), self.norm.sum().item(), self.scale.sum().item(),
                      w.sum().item())
                return self.proj(hidden_states) * self.norm * self.scale
    '''),
}


def test_checkout_driver_gives_uninitialised_weights_random_values(tmp_path):
    checkout = tmp_path / "omega"
    checkout.mkdir()
    for name, text in UNINITIALISED.items():
        (checkout / name).write_text(text)
    lines = []
    for _ in range(2):
        proc, counts = run_driver("_graphmend_verify_checkout", [checkout], tmp_path)
        assert proc.returncode == 0, proc.stderr[-4000:]
        lines.append(proc.stdout)
    words = lines[0].split()
    assert words[:6] == ["omega", "True", "0.5", "0.0", "64.0", "192.0"], lines[0]
    assert lines[0] == lines[1]
