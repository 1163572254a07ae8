"""The Hub-style checkouts of tests/checkouts/ (see its README.md): every row of its table.

- `graphmend check` on each checkout, and on all of them at once in any order or from another
  folder, finds the expected sites per file;
- the fixed `alpha`, loaded as remote code with AutoModel/AutoConfig(trust_remote_code=True),
  gives the same outputs, stdout and log records as the original, eagerly and under
  torch.compile, and compiles to 1 FX graph;
- `delta`'s DeltaModel logs through a logger imported from another module of its package: the
  call is fixed (its detail names the import), also when log_utils.py is not given (then the
  logger is assumed, which the detail says), and the fixed model compiles to 1 FX graph where
  the original makes 2, with the same outputs and log records, eagerly and compiled;
- `delta` run the way its `sample.py` runs it (the model and `scheduler.step` compiled, with
  counting backends): fixed, 1 FX graph each where the original makes 2, with the same outputs,
  stdout and log records.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import BINARY, REPO, require_graphmend

CHECKOUTS = REPO / "tests" / "checkouts"


def check(args, tmp_path, cwd=REPO):
    """`graphmend check --exit-zero --report-json` ARGS; returns {absolute path: [(line, code, status), ...]}.

    --exit-zero: a fixable site exits 1 without it; exit 0 then says no file failed.
    """
    report = tmp_path / "report.json"
    proc = subprocess.run([str(BINARY), "check", "--exit-zero", "--report-json", str(report), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-4000:]
    sites = {}
    for entry in json.loads(report.read_text())["files"]:
        path = str((Path(cwd) / entry["path"]).resolve())
        sites[path] = [(s["line"], s["code"], s["status"]) for s in entry["sites"]]
    return sites


def in_checkout(sites, name):
    return {Path(p).name: s for p, s in sites.items() if Path(p).parent.name == name}


def test_alpha_four_sites_all_fixed(tmp_path):
    require_graphmend()
    sites = in_checkout(check([CHECKOUTS / "alpha"], tmp_path), "alpha")
    assert sites == {
        "configuration_alpha.py": [],
        "modeling_alpha.py": [(19, "GM101", "fixable-when"), (20, "GM101", "fixable"),  # MyAttention.forward
                              (41, "GM201", "fixable-when"), (43, "GM101", "fixable-when")],  # AlphaModel.forward
    }


def test_phi_a_two_sites_fixed(tmp_path):
    require_graphmend()
    sites = in_checkout(check([CHECKOUTS / "phi-a"], tmp_path), "phi-a")
    assert sites == {
        "configuration_phi.py": [],
        "modeling_phi.py": [(13, "GM101", "fixable-when")],  # MyAttention.forward, base BaseAttention(nn.Module)
        "utils_phi.py": [(9, "GM101", "fixable-when")],  # debug_stats, called by PhiModel.forward
    }


def test_phi_b_no_sites(tmp_path):
    require_graphmend()
    sites = check([CHECKOUTS / "phi-b"], tmp_path)
    assert len(sites) == 3
    assert all(s == [] for s in sites.values()), sites


def test_delta_logger_and_compiled_scheduler_step_fixed(tmp_path):
    require_graphmend()
    sites = check([CHECKOUTS / "delta"], tmp_path)
    assert sites == {
        str(CHECKOUTS / "delta" / "sample.py"): [],
        str(CHECKOUTS / "delta" / "delta" / "__init__.py"): [],
        str(CHECKOUTS / "delta" / "delta" / "log_utils.py"): [],
        # DeltaModel.forward: `logger` comes from `from .log_utils import logger`.
        str(CHECKOUTS / "delta" / "delta" / "modeling_delta.py"): [(14, "GM101", "fixable")],
        # DeltaScheduler.step's conditional expression: sample.py compiles `scheduler.step`, the class
        # imported through the package's lazy `__getattr__`; `timestep: int` is a tensor by the caller.
        str(CHECKOUTS / "delta" / "delta" / "scheduling_delta.py"): [(16, "GM201", "fixable-when")],
    }
    detail = site_details(tmp_path)[str(CHECKOUTS / "delta" / "delta" / "modeling_delta.py")][0]
    assert "`from .log_utils import logger`" in detail and "delta.log_utils" in detail, detail


def site_details(tmp_path):
    """{absolute path: [detail or reason, ...]} of the last check()."""
    out = {}
    for entry in json.loads((tmp_path / "report.json").read_text())["files"]:
        out[str((REPO / entry["path"]).resolve())] = [s["detail"] or s["reason"] for s in entry["sites"]]
    return out


def test_delta_model_alone_assumes_the_logger_and_says_so(tmp_path):
    """log_utils.py not given: `from .log_utils import logger` leaves the inputs, and is taken as
    a logging.Logger because both names say so; the detail says what was assumed."""
    require_graphmend()
    model = CHECKOUTS / "delta" / "delta" / "modeling_delta.py"
    assert check([model], tmp_path) == {str(model): [(14, "GM101", "fixable")]}
    detail = site_details(tmp_path)[str(model)][0]
    assert detail.startswith("assumed a logging.Logger: `logger` comes from `from .log_utils import logger`"), detail


@pytest.mark.parametrize("args,cwd", [
    (["."], CHECKOUTS),
    (["phi-b", "phi-a", "delta", "alpha"], CHECKOUTS),
    (["alpha", "phi-b", "delta", "phi-a"], CHECKOUTS),
    (["tests/checkouts"], REPO),
    ([str(CHECKOUTS)], "/"),
    (["alpha/modeling_alpha.py", "phi-b", "delta/delta/modeling_delta.py", "alpha/configuration_alpha.py",
      "phi-a/utils_phi.py", "delta/sample.py", "phi-a/modeling_phi.py", "delta/delta/log_utils.py",
      "phi-a/configuration_phi.py", "delta/delta/scheduling_delta.py", "delta/delta/__init__.py"], CHECKOUTS),
], ids=["dot", "reversed", "mixed", "parent-folder", "absolute-from-root", "files-shuffled"])
def test_all_checkouts_at_once_match_the_separate_runs(tmp_path, args, cwd):
    require_graphmend()
    separate = {}
    for name in ("alpha", "delta", "phi-a", "phi-b"):
        separate.update(check([CHECKOUTS / name], tmp_path))
    assert sum(len(s) for s in separate.values()) == 8
    together = check(args, tmp_path, cwd=cwd)
    assert together == separate


# --- the fixed alpha, loaded as remote code --------------------------------------------------------

RUN_ALPHA = textwrap.dedent('''
    import io, json, logging, sys, contextlib
    import torch
    from transformers import AutoConfig, AutoModel
    from transformers.utils import logging as hf_logging

    folder, out = sys.argv[1], sys.argv[2]

    class Records(logging.Handler):
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.records = []

        def emit(self, record):
            if record.name.startswith("transformers_modules"):
                self.records.append([record.name, record.levelname, record.getMessage()])

    handler = Records()
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG)
    hf_logging.set_verbosity_info()

    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
    torch.manual_seed(0)
    model = AutoModel.from_config(config, trust_remote_code=True).eval()
    source = sys.modules[type(model).__module__].__file__

    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    torch.manual_seed(1)
    small = torch.randn(2, 4, 16)
    big = small * 1000  # takes the data-dependent branch of AlphaModel.forward
    result = {"source": source}
    with torch.no_grad():
        for arm, fn in (("eager", model), ("compiled", torch.compile(model, backend=counting_backend, dynamic=False))):
            for name, x in (("small", small), ("big", big)):
                handler.records.clear()
                stdout = io.StringIO()
                with contextlib.redirect_stdout(stdout):
                    y = fn(x)
                torch.save(y, f"{out}/{arm}-{name}.pt")
                result[f"{arm}-{name}"] = {"stdout": stdout.getvalue(), "records": list(handler.records)}
    result["graphs"] = len(graphs)
    with open(f"{out}/result.json", "w") as f:
        json.dump(result, f, indent=1)
''')


def run_alpha(folder, out, modules_cache):
    out.mkdir()
    env = dict(os.environ, HF_MODULES_CACHE=str(modules_cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TORCHINDUCTOR_CACHE_DIR=str(modules_cache / "inductor"))
    proc = subprocess.run([sys.executable, "-c", RUN_ALPHA, str(folder), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return json.loads((out / "result.json").read_text())


def fixed_alpha(tmp_path, runtime):
    """Copies alpha twice under tmp_path and fixes the second copy with `--runtime RUNTIME`;
    returns (original folder, fixed folder)."""
    original = tmp_path / "original" / "alpha"
    fixed = tmp_path / "fixed" / "alpha"
    shutil.copytree(CHECKOUTS / "alpha", original)
    shutil.copytree(CHECKOUTS / "alpha", fixed)
    proc = subprocess.run([str(BINARY), "fix", "--runtime", runtime, str(fixed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return original, fixed


@pytest.mark.slow
def test_fixed_alpha_as_remote_code_behaves_the_same_in_one_graph(tmp_path):
    require_graphmend()
    import torch

    # The inline form (test_runtime_module.py loads the module form).
    original, fixed = fixed_alpha(tmp_path, "inline")
    assert (fixed / "modeling_alpha.py").read_text() != (original / "modeling_alpha.py").read_text()

    before = run_alpha(original, tmp_path / "out-original", tmp_path / "modules-original")
    after = run_alpha(fixed, tmp_path / "out-fixed", tmp_path / "modules-fixed")
    # Each arm ran its own copy (remote code is cached per HF_MODULES_CACHE).
    assert Path(before["source"]).is_relative_to(tmp_path / "modules-original")
    assert Path(after["source"]).is_relative_to(tmp_path / "modules-fixed")
    assert "_graphmend" in Path(after["source"]).read_text()

    for key in ("eager-small", "eager-big", "compiled-small", "compiled-big"):
        y0 = torch.load(tmp_path / "out-original" / f"{key}.pt")
        y1 = torch.load(tmp_path / "out-fixed" / f"{key}.pt")
        assert torch.equal(y0, y1), key
        assert after[key]["stdout"] == before[key]["stdout"], key
        assert after[key]["records"] == before[key]["records"], key
    # The messages are there at all (else the comparisons above prove little).
    assert "alpha attention: max score" in before["eager-small"]["stdout"]
    assert any("output norm" in r[2] for r in before["compiled-big"]["records"])
    assert torch.equal(torch.load(tmp_path / "out-original" / "eager-big.pt"),
                       torch.load(tmp_path / "out-original" / "compiled-big.pt"))
    assert before["graphs"] > 1
    assert after["graphs"] == 1, after["graphs"]


# --- the fixed delta: DeltaModel, its logger imported from log_utils.py ---------------------------

# The records of the "delta" logger (logger, level, message, file, line, function), in `handler`.
DELTA_RECORDS = '''
class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append([record.name, record.levelname, record.getMessage(), record.filename,
                             record.lineno, record.funcName])

handler = Records()
logging.getLogger("delta").addHandler(handler)
logging.getLogger("delta").setLevel(logging.INFO)
'''

RUN_DELTA = textwrap.dedent('''
    import json, logging, sys
    folder, out = sys.argv[1], sys.argv[2]
    sys.path.insert(0, folder)
    import torch
    from delta import DeltaModel

    DELTA_RECORDS
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    torch.manual_seed(0)
    model = DeltaModel().eval()
    x = torch.randn(2, 8)
    result = {"source": sys.modules[type(model).__module__].__file__}
    with torch.no_grad():
        for arm, fn in (("eager", model), ("compiled", torch.compile(model, backend=counting_backend, dynamic=False))):
            handler.records.clear()
            torch.save(fn(x), f"{out}/{arm}.pt")
            result[arm] = list(handler.records)
    result["graphs"] = len(graphs)
    with open(f"{out}/result.json", "w") as f:
        json.dump(result, f)
''').replace("DELTA_RECORDS\n", DELTA_RECORDS.lstrip("\n"))


def run_delta(folder, out):
    out.mkdir()
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(out / "inductor"))
    proc = subprocess.run([sys.executable, "-c", RUN_DELTA, str(folder), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return json.loads((out / "result.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("given", ["checkout", "model-file-alone"])
def test_fixed_delta_model_behaves_the_same_in_one_graph(tmp_path, given):
    """Fixed with the whole checkout given (the logger resolved through log_utils.py, runtime
    module), or with modeling_delta.py alone (the logger assumed, runtime inline)."""
    require_graphmend()
    import torch

    original = tmp_path / "original"
    fixed = tmp_path / "fixed"
    shutil.copytree(CHECKOUTS / "delta", original)
    shutil.copytree(CHECKOUTS / "delta", fixed)
    target = fixed if given == "checkout" else fixed / "delta" / "modeling_delta.py"
    proc = subprocess.run([str(BINARY), "fix", str(target)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    model = fixed / "delta" / "modeling_delta.py"
    assert "_graphmend_log(\"logger\", \"info\", lambda: None, \"forward\"" in model.read_text()

    before = run_delta(original, tmp_path / "out-original")
    after = run_delta(fixed, tmp_path / "out-fixed")
    assert Path(before["source"]).is_relative_to(original) and Path(after["source"]).is_relative_to(fixed)
    for arm in ("eager", "compiled"):
        y0 = torch.load(tmp_path / "out-original" / f"{arm}.pt")
        y1 = torch.load(tmp_path / "out-fixed" / f"{arm}.pt")
        assert torch.equal(y0, y1), arm
        assert after[arm] == before[arm], arm
        assert before[arm] == [["delta", "INFO", "DeltaModel hidden of shape (2, 8)", "modeling_delta.py", 14,
                                "forward"]], before[arm]
    assert before["graphs"] == 2, before["graphs"]
    assert after["graphs"] == 1, after["graphs"]


# --- the fixed delta run as sample.py runs it: the model and the scheduler's step compiled --------

RUN_DELTA_SAMPLE = textwrap.dedent('''
    import contextlib, io, json, logging, sys
    folder, out = sys.argv[1], sys.argv[2]
    sys.path.insert(0, folder)
    import torch
    from delta import DeltaModel, DeltaScheduler

    DELTA_RECORDS
    graphs = {"model": 0, "step": 0}

    def counting(name):
        def backend(gm, example_inputs):
            graphs[name] += 1
            return gm.forward
        return backend

    torch.manual_seed(0)
    model = torch.compile(DeltaModel().eval(), backend=counting("model"), dynamic=False)
    scheduler = DeltaScheduler()
    step = torch.compile(scheduler.step, backend=counting("step"), dynamic=False)
    sample = torch.randn(2, 8)
    stdout = io.StringIO()
    result = {"source": sys.modules[type(scheduler).__module__].__file__}
    samples = []
    with contextlib.redirect_stdout(stdout), torch.no_grad():
        for i, t in enumerate(scheduler.timesteps):  # both branches: prev_t < 0 in the last steps
            sample = step(model(sample), t, sample)
            samples.append(sample)
            if i == 0:
                result["graphs"] = dict(graphs)  # one model call and one step
        print(sample.sum().item())
    result["records"] = handler.records
    result["stdout"] = stdout.getvalue()
    torch.save(samples, f"{out}/samples.pt")
    with open(f"{out}/result.json", "w") as f:
        json.dump(result, f)
''').replace("DELTA_RECORDS\n", DELTA_RECORDS.lstrip("\n"))


@pytest.mark.slow
def test_fixed_delta_sample_compiles_model_and_step_to_one_graph_each(tmp_path):
    require_graphmend()
    import torch

    original = tmp_path / "original"
    fixed = tmp_path / "fixed"
    shutil.copytree(CHECKOUTS / "delta", original)
    shutil.copytree(CHECKOUTS / "delta", fixed)
    proc = subprocess.run([str(BINARY), "fix", str(fixed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "_graphmend_index(self.alphas, prev_t)" in (fixed / "delta" / "scheduling_delta.py").read_text()
    results = []
    for folder, out in ((original, tmp_path / "out-original"), (fixed, tmp_path / "out-fixed")):
        out.mkdir()
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(out / "inductor"))
        run = subprocess.run([sys.executable, "-c", RUN_DELTA_SAMPLE, str(folder), str(out)],
                             capture_output=True, text=True, env=env, timeout=600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
        results.append(json.loads((out / "result.json").read_text()))
    before, after = results
    assert Path(after["source"]).is_relative_to(fixed)
    assert before["graphs"] == {"model": 2, "step": 2}, before["graphs"]
    assert after["graphs"] == {"model": 1, "step": 1}, after["graphs"]
    assert after["records"] == before["records"] and len(before["records"]) == 10
    assert after["stdout"] == before["stdout"]
    y0 = torch.load(tmp_path / "out-original" / "samples.pt")
    y1 = torch.load(tmp_path / "out-fixed" / "samples.pt")
    assert len(y0) == len(y1) == 10
    assert all(torch.equal(a, b) for a, b in zip(y0, y1))
