"""graphmend verify's Python side (docs/verify.md): the hook that runs inside the user's process
(src/verify/python/sitecustomize.py, _graphmend_verify_hook.py) and the compare of two runs'
outputs (_graphmend_verify_compare.py). Each run is a fresh subprocess of this interpreter with
src/verify/python first on PYTHONPATH, as the C++ side starts them."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "src" / "verify" / "python"

pytestmark = pytest.mark.slow


def _env(tmp, record=True, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEND_VERIFY", "_GRAPHMEND_VERIFY", "TORCH_LOGS"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HOOK)] + extra.pop("pythonpath", []))
    if record:
        env["GRAPHMEND_VERIFY_RECORD"] = str(tmp / "record.json")
        env["GRAPHMEND_VERIFY_OUTPUTS"] = str(tmp / "outputs.pt")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(script, tmp, *, cwd=None, record=True, check=True, **env):
    """Run `python script` under the hook; (process, record dict or None)."""
    tmp.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, str(script)], cwd=cwd or script.parent, env=_env(tmp, record, **env),
                          capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    path = tmp / "record.json"
    return proc, (json.loads(path.read_text()) if path.exists() else None)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def compare(a, b):
    out = subprocess.run([sys.executable, "-m", "_graphmend_verify_compare", str(a), str(b)],
                         env=_env(a.parent, record=False), capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)["calls"]


PROGRAM = '''
import dataclasses, logging, warnings
import torch
import torch._dynamo.testing

log = logging.getLogger("prog")


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        x = self.lin(x)
        print("in forward")
        if x.sum() > 0:
            x = x * 2
        return x, {"double": x * 2}


@dataclasses.dataclass
class Out:
    y: torch.Tensor
    n: int


@torch.compile
def f(x):
    return Out(x.sin(), 3)


@torch.compile(dynamic=False)
def g(x, fail=False):
    if fail:
        raise ValueError("asked to")
    return x.cos()


class Scheduler:
    def step(self, x):
        return x + 1


warnings.warn("first warning")
log.warning("a log record")
torch.manual_seed(0)
model = Model()
compiled = torch.compile(model, backend="inductor")  # count backend: inductor never runs
x = torch.randn(2, 4)
for _ in range(3):
    compiled(x)
f(x)
g(x)
try:
    g(x, fail=True)
except ValueError:
    pass
torch.compile(Scheduler().step)(x)
other = Model()
other.compile()
other(x)
warnings.warn("last warning")
# Dynamo's own counting, outside any compiled callable of the program's
torch._dynamo.reset()
counter = torch._dynamo.testing.CompileCounter()
torch._dynamo.optimize(counter)(Model())(x)
print("frames", counter.frame_count)
'''


@pytest.fixture(scope="module")
def program_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("program")
    script = write(tmp / "prog.py", PROGRAM)
    start = time.monotonic()
    proc, record = run(script, tmp / "out", GRAPHMEND_VERIFY_EAGER_GAP=1)
    return script, proc, record, time.monotonic() - start


def test_callables_are_named_and_counted(program_run):
    script, proc, record, _ = program_run
    names = [(c["index"], c["name"], c["line"]) for c in record["callables"]]
    # in creation order: the decorators run first; a decorated function's line is its `def`
    assert names == [(0, "f", 28), (1, "g", 33), (2, "Model", 13), (3, "Scheduler.step", 40), (4, "Model", 13)]
    assert all(c["file"] == str(script) for c in record["callables"])
    model = record["callables"][2]
    assert model["calls"] == 3 and record["callables"][1]["calls"] == 2
    frames = int(proc.stdout.split("frames", 1)[1])
    assert model["graphs"] == frames == 3  # the counting backend sees what Dynamo's does
    assert model["compile_s"] is None and model["first_call_s"] > 0 and model["steady_s"] > 0
    assert record["callables"][0]["steady_s"] is None
    assert record["complete"] is True and record["schema"] == 1


def test_breaks_name_gb_site_and_callable(program_run):
    script, proc, record, _ = program_run
    got = {(b["callable"], b["gb"], b["kind"], b["line"], b["action"]) for b in record["breaks"]}
    assert got == {(2, "GB0059", "print", 15, "break"), (2, "GB0170", "data-dependent branch", 16, "break"),
                   (4, "GB0059", "print", 15, "break"), (4, "GB0170", "data-dependent branch", 16, "break"),
                   (None, "GB0059", "print", 15, "break"), (None, "GB0170", "data-dependent branch", 16, "break"),
                   (1, "GB0088", "exception", 35, "skip")}  # g's `raise`: Dynamo runs that frame eagerly
    assert all(b["file"] == str(script) for b in record["breaks"])
    assert "Graph break" not in proc.stderr  # our logging of Dynamo printed nothing


def test_messages_are_warnings_and_log_records_in_order(program_run):
    _, proc, record, _ = program_run
    assert proc.stdout.count("in forward") == 5  # the eager gap runs print nothing
    assert record["messages"] == [
        {"stream": "warning", "source": "UserWarning", "text": "first warning"},
        {"stream": "log", "source": "prog", "level": "WARNING", "text": "a log record"},
        {"stream": "warning", "source": "UserWarning", "text": "last warning"}]


def test_outputs_exceptions_and_eager_gap(program_run):
    import torch

    _, _, record, _ = program_run
    assert {"callable": 1, "call": 2, "leaves": 0, "exception": "ValueError: asked to"} in record["outputs"]
    saved = torch.load(program_run[0].parent / "out" / "outputs.pt", weights_only=False)
    first = next(c for c in saved["calls"] if c["callable"] == 2)
    assert first["call"] == 1
    assert list(first["leaves"]) == ["[0]", '[1]["double"]']
    assert set(first["gaps"]) == {"[0]", '[1]["double"]'} and max(first["gaps"].values()) < 1e-5
    out_f = next(c for c in saved["calls"] if c["callable"] == 0)
    assert list(out_f["leaves"]) == [".y"] and out_f["other"] == {".n": "3"}
    assert len([c for c in saved["calls"] if c["callable"] == 2]) == 3


def test_eager_gap_leaves_a_stateful_objects_state_alone(tmp_path):
    # A diffusers scheduler's `step` reads and advances Python state (a step index, a list of
    # past outputs). The eager gap run must start from the state before the compiled call and
    # leave the program's object as its own call left it: the program sees the same steps with
    # and without the gap, and the gap compares like with like.
    script = write(tmp_path / "sched.py", """
        import torch

        class Scheduler:
            def __init__(self):
                self.index = 0
                self.past = []
                self.sigmas = torch.tensor([1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.0])

            def step(self, x):
                self.past.append(x)
                out = x * self.sigmas[self.index] + len(self.past)
                self.index += 1
                return out

        s = Scheduler()
        step = torch.compile(s.step)
        x = torch.ones(2)
        for _ in range(3):
            x = step(x)
        print("index", s.index, "past", len(s.past), "x", x.tolist())
        """)
    plain, _ = run(script, tmp_path / "plain")
    gap, _ = run(script, tmp_path / "gap", GRAPHMEND_VERIFY_EAGER_GAP=1)
    assert gap.stdout == plain.stdout
    assert "index 3 past 3" in plain.stdout
    import torch

    saved = torch.load(tmp_path / "gap" / "outputs.pt", weights_only=False)
    assert [c["call"] for c in saved["calls"]] == [1, 2, 3]
    assert all("gap_error" not in c and c["gaps"] == {"": 0.0} for c in saved["calls"])


def test_redirect_runs_fixed_code_and_compare_sees_it(tmp_path):
    original, fixed = tmp_path / "A", tmp_path / "B"
    model = '''
        import torch
        SCALE = {scale}
        class Net(torch.nn.Module):
            def forward(self, x):
                return x * SCALE
        '''
    main = '''
        import torch
        from net import Net
        print("main {tag}")
        torch.compile(Net())(torch.arange(3.0))
        '''
    write(original / "net.py", model.format(scale=2))
    write(original / "main.py", main.format(tag="original"))
    write(fixed / "net.py", model.format(scale=3))
    write(fixed / "main.py", main.format(tag="fixed"))
    redirect = json.dumps([[str(original), str(fixed)]])
    runs = {}
    for name, extra in (("one", {}), ("two", {}), ("fixed", {"GRAPHMEND_VERIFY_REDIRECT": redirect})):
        proc, record = run(original / "main.py", tmp_path / name, **extra)
        runs[name] = (proc, record)
    assert runs["one"][0].stdout.strip() == "main original"
    assert runs["fixed"][0].stdout.strip() == "main fixed"  # the script and its module, from B
    assert runs["fixed"][1]["callables"][0]["file"] == str(fixed / "net.py")
    same = compare(tmp_path / "one" / "outputs.pt", tmp_path / "two" / "outputs.pt")
    assert [(c["name"], c["call"], c["status"]) for c in same] == [("Net", 1, "bit-equal")]
    changed = compare(tmp_path / "one" / "outputs.pt", tmp_path / "fixed" / "outputs.pt")
    assert changed[0]["status"] == "different" and changed[0]["max_abs_diff"] == 2.0
    missing = compare(tmp_path / "one" / "outputs.pt", tmp_path / "nothing.pt")
    assert missing[0]["status"] == "missing"


def test_redirect_of_packages_without_torch(tmp_path):
    original, fixed = tmp_path / "A", tmp_path / "B"
    for root, word in ((original, "original"), (fixed, "fixed")):
        write(root / "pkg" / "__init__.py", "from .inner import WORD\n")
        write(root / "pkg" / "inner.py", f"WORD = {word!r}\n")
        write(root / "helper.py", f"WORD = {word!r}\n")
    write(original / "pkg" / "only_original.py", "WORD = 'only in A'\n")
    script = write(tmp_path / "elsewhere" / "run.py", f'''
        import sys
        sys.path.insert(0, {str(original)!r})
        import helper, pkg, pkg.only_original
        print(helper.WORD, pkg.WORD, pkg.only_original.WORD)
        print("torch" in sys.modules)
        ''')
    proc, record = run(script, tmp_path / "out", GRAPHMEND_VERIFY_REDIRECT=json.dumps([[str(original), str(fixed)]]))
    assert proc.stdout.split("\n")[:2] == ["fixed fixed only in A", "False"]
    assert record["callables"] == [] and record["breaks"] == [] and record["complete"] is True
    assert not (tmp_path / "out" / "outputs.pt").exists()


def test_inert_without_record(tmp_path):
    script = write(tmp_path / "p.py", '''
        import sys, logging
        print(sorted(type(f).__module__ for f in sys.meta_path))
        print(logging.Logger.callHandlers.__module__)
        ''')
    proc, record = run(script, tmp_path / "out", record=False)
    assert "_graphmend_verify_hook" not in proc.stdout and "logging" in proc.stdout
    assert record is None and proc.stderr == ""


def test_chained_sitecustomize_runs_and_failures_do_not_stop_the_program(tmp_path):
    site = write(tmp_path / "site" / "sitecustomize.py", "import builtins\nbuiltins.SITE_RAN = True\n")
    script = write(tmp_path / "p.py", "print(getattr(__builtins__, 'SITE_RAN', False))\n")
    proc, _ = run(script, tmp_path / "ok", pythonpath=[str(site.parent)])
    assert proc.stdout.strip() == "True" and proc.stderr == ""
    write(site, "raise RuntimeError('site broke')\n")
    proc, record = run(script, tmp_path / "broken", pythonpath=[str(site.parent)], GRAPHMEND_VERIFY_REDIRECT="not json")
    assert proc.stdout.strip() == "False"
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("graphmend verify: hook failed: ")
    assert "site broke" in lines[1]


def test_sigterm_writes_an_incomplete_record(tmp_path):
    script = write(tmp_path / "p.py", '''
        import time, warnings
        warnings.warn("before")
        print("ready", flush=True)
        time.sleep(60)
        ''')
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, str(script)], env=_env(out), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    record = json.loads((out / "record.json").read_text())
    assert record["complete"] is False and record["messages"][0]["text"] == "before"


def test_user_backend_is_timed_and_user_logs_still_print(tmp_path):
    script = write(tmp_path / "p.py", '''
        import torch
        @torch.compile(backend="eager")
        def h(x):
            x = x * 2
            print("x")
            return x + 1
        h(torch.ones(2)); h(torch.ones(2))
        ''')
    proc, record = run(script, tmp_path / "out", GRAPHMEND_VERIFY_BACKEND="user", TORCH_LOGS="graph_breaks")
    (h,) = record["callables"]
    assert h["graphs"] == 2 and h["compile_s"] is not None and h["calls"] == 2
    assert [b["gb"] for b in record["breaks"]] == ["GB0059"]
    assert "Graph break" in proc.stderr  # the program asked for these logs: they still print


def test_remote_code_checkout_is_redirected_through_the_modules_cache(tmp_path):
    # transformers copies a local checkout's remote code into HF_MODULES_CACHE and imports the
    # copy by file: the redirected run gets the fixed files there, under the same module name,
    # and the record names the fixed folder, not the cache.
    import shutil

    original, fixed = tmp_path / "A" / "alpha", tmp_path / "B"
    shutil.copytree(REPO / "tests" / "checkouts" / "alpha", original)
    shutil.copytree(original, fixed)
    modeling = fixed / "modeling_alpha.py"
    modeling.write_text(modeling.read_text().replace("alpha attention: max score", "FIXED attention"))
    script = write(tmp_path / "drive.py", f'''
        import torch
        from transformers import AutoConfig, AutoModel
        config = AutoConfig.from_pretrained({str(original)!r}, trust_remote_code=True)
        model = AutoModel.from_config(config, trust_remote_code=True).eval()
        with torch.no_grad():
            torch.compile(model, dynamic=False)(torch.randn(1, 3, 16))
        ''')
    proc, record = run(script, tmp_path / "out", HF_MODULES_CACHE=tmp_path / "cache",
                       GRAPHMEND_VERIFY_REDIRECT=json.dumps([[str(original), str(fixed)]]))
    assert "FIXED attention" in proc.stdout and "alpha attention" not in proc.stdout
    assert record["callables"][0]["file"] == str(modeling)
    assert {(b["file"], b["line"], b["gb"]) for b in record["breaks"]} >= {(str(modeling), 19, "GB0059"),
                                                                             (str(modeling), 20, "GB0291")}
    assert "transformers_modules.alpha.modeling_alpha" in {m["source"] for m in record["messages"]}
