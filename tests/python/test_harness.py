"""Self-tests of the verification harness (benchmarks/_harness), without graphmend.

The integration tests use stand-ins for the binary: the identity fixer (after ==
before) and a fixer that changes a message and the arithmetic, to show that the
checks see such changes. The unit tests cover the pure helpers.
"""
import json
import subprocess
import sys
import textwrap

import pytest
import torch

from conftest import CASES, REPO, failed_checks, identity_fixer, run_harness

from _harness import capture, expect, fixer, tensors
from _harness.case_bench import check_graphs_after, check_refused, check_untouched, first_difference
from _harness.paths import PathMapper

# ------------------------------------------------------------------ unit tests


def test_expectations_of_every_case_parse_to_known_keys():
    for path in sorted(CASES.glob("c*.py")):
        found = expect.parse(path.read_bytes().decode())
        assert found, f"{path.name}: no expectations found"
        unknown = [e.key for e in found if e.key not in expect.KNOWN_KEYS]
        assert not unknown, f"{path.name}: {unknown}"


def test_expectations_crlf_and_raises():
    c12 = expect.parse((CASES / "c12_format_preserved.py").read_bytes().decode())
    assert [e.text for e in c12] == ["graphs-after: 1", "outputs: identical", "stdout: identical"]
    c07 = {e.key: e.value for e in expect.parse((CASES / "c07_trap_raise.py").read_text())}
    assert expect.parse_raises(c07["raises"]) == ("ValueError", "attention scores contain NaN")


def test_expectations_stop_at_first_code_line():
    text = "# expect: stdout: identical\nimport torch\n# expect: graphs-after: 1\n"
    assert [e.key for e in expect.parse(text)] == ["stdout"]


@pytest.mark.parametrize("summary,count", [
    ("a.py: 3 sites, 2 fixed, 1 refused (stateful branch)", 1),
    ("a.py: sites=3 fixed=1 refused=2", 2),
    ("a.py: refused: 1\n  line 19: refused: mutates module state", 1),
    ("a.py: 2 sites refused", 2),
    ("a.py: 3 sites, 3 fixed, 0 refused", 0),
    ("a.py: 1 site, 1 fixed", 0),
])
def test_refused_count(summary, count):
    assert fixer.refused_count(summary) == count


def test_path_mapper_longest_root_wins(tmp_path):
    pkg = tmp_path / "site" / "transformers"
    (pkg / "models").mkdir(parents=True)
    paths = PathMapper([(tmp_path, "tmp"), (pkg, "transformers")])
    assert paths(str(pkg / "models" / "t5.py")) == "transformers/models/t5.py"
    assert paths(str(tmp_path / "x.py")) == "tmp/x.py"
    assert paths("/elsewhere/y.py") == "/elsewhere/y.py"
    assert paths("<string>") == "<string>"


def test_recording_merges_writes_and_sets_framework_apart():
    rec = capture.Recording()
    rec.add_text("stdout", "a ")
    rec.add_text("stdout", "b\n")
    rec.add({"kind": "log", "logger": "torch.__trace", "level": "DEBUG", "message": ""})
    rec.add({"kind": "warning", "category": "builtins.UserWarning", "message": "m",
             "filename": "torch/_dynamo/variables/functions.py", "lineno": 1})
    rec.add({"kind": "log", "logger": "m", "level": "WARNING", "message": "x"})
    rec.add_text("stdout", "c\n")
    view = rec.to_json()
    assert [e["kind"] for e in view["events"]] == ["stdout", "log", "stdout"]
    assert view["stdout"] == "a b\nc\n"
    assert len(view["framework"]) == 2


def test_what_a_compiler_log_handler_prints_is_framework():
    # Dynamo's handler prints "Graph break from `Tensor.item()`" to stderr when it breaks:
    # a message of the compiler, not of the model, so no stream view may hold it.
    code = """
import json, logging, sys
from _harness import capture
recorder = capture.MessageRecorder()
recorder.install()
handler = logging.StreamHandler(sys.stderr)
logging.getLogger("torch._dynamo.t").addHandler(handler)
logging.getLogger("model").addHandler(logging.StreamHandler(sys.stderr))
with recorder.session(), recorder.record() as rec:
    logging.getLogger("torch._dynamo.t").warning("Graph break from `Tensor.item()`")
    logging.getLogger("model").warning("kept")
view = rec.to_json()
print(json.dumps([view["stderr"], [e.get("text", e.get("message")) for e in view["framework"]]]),
      file=recorder.real_stdout)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO / "benchmarks").stdout
    stderr, framework = json.loads(out)
    assert stderr == "kept\n"
    assert framework == ["Graph break from `Tensor.item()`", "Graph break from `Tensor.item()`\n"]


def test_graphs_after_is_a_bound_that_an_input_may_stay_under_but_never_at_zero():
    # c23 expects 3 graphs where the cached decision runs; its first call skips that break and
    # makes 1. No graph at all is a frame Dynamo skipped, and always fails.
    def arms(*counts):
        calls = [{"input": f"in{i}", "graphs": n, "dynamo_breaks": max(n - 1, 0), "break_reasons": {}}
                 for i, n in enumerate(counts)]
        return {"fixed-compiled": {"result": {"calls": calls}}}

    assert check_graphs_after(arms(1, 3, 3), "3", "graphs-after: 3").ok
    assert not check_graphs_after(arms(3, 4), "3", "graphs-after: 3").ok
    assert not check_graphs_after(arms(0, 3), "3", "graphs-after: 3").ok
    assert check_graphs_after(arms(1), "1", "graphs-after: 1").ok


def test_tensor_compare_is_bitwise():
    a = tensors.flatten({"x": torch.tensor([0.0, float("nan")]), "n": (1, None)})
    same = tensors.flatten({"x": torch.tensor([0.0, float("nan")]), "n": (1, None)})
    negzero = tensors.flatten({"x": torch.tensor([-0.0, float("nan")]), "n": (1, None)})
    other_dtype = tensors.flatten({"x": torch.tensor([0.0, float("nan")], dtype=torch.float64), "n": (1, None)})
    other_leaf = tensors.flatten({"x": torch.tensor([0.0, float("nan")]), "n": (2, None)})
    assert tensors.compare(a, same) == (True, [])
    assert tensors.digest(a) == tensors.digest(same)
    for b in (negzero, other_dtype, other_leaf, tensors.flatten(None)):
        ok, details = tensors.compare(a, b)
        assert not ok and details
        assert tensors.digest(a) != tensors.digest(b)


def test_first_difference_names_the_spot():
    assert "line 1" in first_difference("a\nb\n", "a\nc\n")
    assert "missing" in first_difference([{"k": 1}], [{"k": 1}, {"k": 2}])


def test_untouched_and_refused_checks(tmp_path):
    fixed = tmp_path / "f.py"
    fixed.write_bytes(b"x = 1\r\n")
    assert check_untouched(b"x = 1\r\n", fixed, "untouched: true").ok
    assert not check_untouched(b"x = 1\n", fixed, "untouched: true").ok

    def result(stderr):
        return fixer.FixResult([], 0, "", stderr, 0.0)

    unless = "unless the state update itself stays conditional on the data"
    assert check_refused(result("f.py: 1 refused"), unless, b"x = 1\r\n", fixed, True, True, "").ok
    assert not check_refused(result("f.py: 0 refused"), unless, b"x = 1\r\n", fixed, True, True, "").ok
    # Rewritten without a refusal: accepted only under "unless" and with behaviour kept.
    assert check_refused(result("f.py: 1 fixed"), unless, b"x = 2\n", fixed, True, True, "").ok
    assert not check_refused(result("f.py: 1 fixed"), unless, b"x = 2\n", fixed, True, False, "").ok
    assert not check_refused(result("f.py: 1 fixed"), "always", b"x = 2\n", fixed, True, True, "").ok


# ------------------------------------------------------- harness with stand-ins


def _checks(result):
    return {c["name"]: c for c in result["checks"]}


@pytest.mark.slow
def test_identity_fixer_on_c01_fails_only_graphs_after(tmp_path):
    code, r, output = run_harness(["--case", CASES / "c01_defer_print_fstring.py"], tmp_path,
                                  fixer=identity_fixer())
    assert code == 1 and not r["ok"], output
    assert r["failed"] == ["graphs-after"], failed_checks(r)
    assert r["graphs_before"] == 2 and r["graphs_after"] == 2
    calls = r["arms"]["orig-eager"]["result"]["calls"]
    assert calls[0]["messages"]["stdout"].startswith("hidden: mean="), "stdout was not captured"


MUTATING_FIXER = textwrap.dedent('''\
    import sys
    src, dst = sys.argv[2], sys.argv[4]
    text = open(src).read()
    text = text.replace('hidden: mean=', 'hidden: avg=').replace('self.fc2(h)', 'self.fc2(h) * 1.0001')
    open(dst, 'w').write(text)
    print(src + ": 1 site, 1 fixed, 0 refused", file=sys.stderr)
''')


@pytest.mark.slow
def test_checks_see_changed_messages_and_outputs(tmp_path):
    script = tmp_path / "mutating_fix.py"
    script.write_text(MUTATING_FIXER)
    code, r, output = run_harness(["--case", CASES / "c01_defer_print_fstring.py"], tmp_path,
                                  fixer=f"{sys.executable} {script}")
    checks = _checks(r)
    assert code == 1, output
    for name in ("outputs", "messages", "stdout"):
        assert not checks[name]["ok"], f"{name} did not notice the change"
    for name in ("graphmend", "arms", "state"):
        assert checks[name]["ok"], failed_checks(r)
    assert any("hidden: avg=" in d for d in checks["stdout"]["details"])


@pytest.mark.slow
def test_identity_fixer_on_t5_measures_the_baseline(tmp_path):
    code, r, output = run_harness(["--model", "t5"], tmp_path, fixer=identity_fixer())
    assert "graphs_before" in r, f"{r.get('error')}\n{output}"
    assert (r["graphs_before"], r["breaks_before"]) == (4, 3), output
    assert (r["graphs_after"], r["breaks_after"]) == (4, 3), output
    assert r["outputs_identical"] and r["messages_identical"], output
    assert r["package_file_after"] != r["package_file_before"]
    assert "/site/transformers/" in r["package_file_after"]
    assert r["messages_before"]["stderr"], "the T5 deprecation message was not captured"
    assert code == 0


def test_fix_cache_fixes_a_package_once_per_key(tmp_path, monkeypatch):
    """GRAPHMEND_FIX_CACHE (set by conftest for the test run): one fix per fixer, package files
    and flag; a changed package file or the flag makes another."""
    from _harness import model_bench

    pkg = tmp_path / "installed" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("x = 1\n")
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "fake_fix.py"
    fake.write_text(textwrap.dedent(f"""\
        import sys
        from pathlib import Path
        with open({str(calls)!r}, "a") as f:
            f.write(" ".join(sys.argv[2:]) + "\\n")
        for p in Path(sys.argv[2]).rglob("*.py"):
            p.write_text(p.read_text() + "# fixed\\n")
        print(sys.argv[2] + ": 1 site found, 1 fixed", file=sys.stderr)
        """))
    monkeypatch.setenv("GRAPHMEND_BIN", f"{sys.executable} {fake}")
    monkeypatch.setenv("GRAPHMEND_FIX_CACHE", str(tmp_path / "cache"))
    copy1, fix1 = model_bench.fix_package(pkg, tmp_path / "unused")
    copy2, fix2 = model_bench.fix_package(pkg, tmp_path / "unused")
    assert copy1 == copy2 and copy1.parent.name == "site" and copy1.name == "pkg"
    assert (copy1 / "__init__.py").read_text() == "x = 1\n# fixed\n"
    assert fix1 == fix2 and fix1.returncode == 0 and str(copy1) in fix1.stderr
    assert str(copy1) in fix1.cmd and "making-" not in fix1.stderr
    assert len(calls.read_text().splitlines()) == 1
    assert not (tmp_path / "unused").exists()
    model_bench.fix_package(pkg, tmp_path / "unused", unsafe_fixes=True)
    (pkg / "__init__.py").write_text("x = 2\n")
    copy3, _ = model_bench.fix_package(pkg, tmp_path / "unused")
    assert copy3 != copy1 and (copy3 / "__init__.py").read_text() == "x = 2\n# fixed\n"
    assert len(calls.read_text().splitlines()) == 3
    assert sorted(p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith("making-")) == []
