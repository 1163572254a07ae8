"""benchmarks/sweep.py: the sweep's entry point writes sweep-<env>.json and remakes the report.

The rows run with the stand-in fixer that changes nothing (the wiring is under test here, not
graphmend's fixes): gpt2 at the pins (about 20 s), nezha at the latest pins, where
transformers 5 no longer has it (skipped without .venv-latest).
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, identity_fixer

SWEEP = REPO / "benchmarks" / "sweep.py"


def run_sweep(*args, timeout=600):
    env = {**os.environ, "GRAPHMEND_BIN": identity_fixer()}
    return subprocess.run([sys.executable, str(SWEEP), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_rows_without_a_json_dir_are_refused():
    proc = run_sweep("--rows", "gpt2", timeout=60)
    assert proc.returncode == 2 and "--rows needs --json-dir" in proc.stderr
    assert run_sweep("--env", "neither", timeout=60).returncode == 2


@pytest.mark.slow
def test_one_row_at_the_pins_writes_its_json_and_the_report(tmp_path):
    proc = run_sweep("--rows", "gpt2", "--json-dir", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "sweep-pins.json").read_text())
    assert data["suite"] == "sweep" and data["env"] == "pins" and data["finished"]
    [row] = data["rows"]
    assert (row["row"], row["breaks_before"], row["breaks_after"], row["outputs_identical"]) == (
        "gpt2/float32", 0, 0, True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["RESULTS.md", "sweep-pins.json"]
    page = (tmp_path / "RESULTS.md").read_text()
    assert "| gpt2 | GPT2LMHeadModel | 0 → 0 | 0 → 0 | yes | yes |  |  |" in page
    assert "Totals: 1/1 rows measured, breaks 0 → 0" in page


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / ".venv-latest" / "bin" / "python").exists(),
                    reason=".venv-latest missing (bash scripts/setup_latest.sh)")
def test_an_architecture_transformers_5_lacks_is_a_row_not_available(tmp_path):
    proc = run_sweep("--env", "latest", "--rows", "nezha", "--json-dir", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "sweep-latest.json").read_text())
    [row] = data["rows"]
    assert row["not_available"] == f"transformers {data['environment']['transformers']} has no model type 'nezha'"
    assert row["flags"] == [] and "breaks_before" not in row
    assert data["totals"]["rows_not_available"] == {"nezha/float32": row["not_available"]}
    assert "nezha/float32: not available at this version: transformers 5" in proc.stdout
    assert "| nezha |  | not available at this version: transformers 5" in (tmp_path / "RESULTS.md").read_text()


@pytest.mark.slow
def test_the_eager_gap_child_runs_the_original_in_float64_too(tmp_path):
    import torch
    import transformers

    from _harness.models import get_spec

    torch.manual_seed(0)
    model = get_spec("sweep:gpt2").build()
    torch.save(model.state_dict(), tmp_path / "state.pt")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "_harness" / "eager_gap.py"), "--model", "sweep:gpt2",
                           "--package-root", os.path.dirname(transformers.__file__), "--load-state",
                           tmp_path / "state.pt", "--out", tmp_path / "gap.pt"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    runs = torch.load(tmp_path / "gap.pt")
    eager, double = dict(runs["eager"]), dict(runs["float64"])
    assert runs["float64_error"] is None and eager.keys() == double.keys()
    logits, exact = eager["out['logits']"], double["out['logits']"]
    assert logits.dtype == torch.float32 and exact.dtype == torch.float64
    # the same model in another precision: close, not equal
    assert not torch.equal(logits.double(), exact) and torch.allclose(logits.double(), exact, atol=1e-5)


@pytest.mark.slow
def test_another_setting_reaches_the_arms_and_has_a_json_of_its_own(tmp_path):
    keep = tmp_path / "keep"
    proc = run_sweep("--rows", "gpt2", "--batch", "2", "--tokens", "4", "--grad", "--name", "b2t4",
                     "--json-dir", tmp_path, "--keep", keep)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "inputs 2 x 4; autograd enabled" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["RESULTS.md", "sweep-b2t4-pins.json"]
    data = json.loads((tmp_path / "sweep-b2t4-pins.json").read_text())
    assert data["setting"] == {"batch": 2, "tokens": 4, "grad": True}
    [row] = data["rows"]
    assert (row["input_shape"], row["grad"], row["outputs_identical"]) == ([2, 4], True, True)
    for arm in ("before", "after"):
        result = json.loads((keep / "pins" / "gpt2-float32" / f"{arm}.json").read_text())
        assert (result["input_shape"], result["grad"]) == ([2, 4], True)
        logits = next(o for o in result["output_layout"] if o["path"] == "out['logits']")
        assert logits["shape"] == [2, 4, 128]
