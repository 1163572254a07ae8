"""`graphmend verify` and `graphmend fix --verify` end to end (docs/verify.md): the C++ command
runs real torch in fresh subprocesses of this interpreter, and its JSON (or SARIF) report is
checked. Each verify starts 2-4 Python processes that import torch, so the runs are few and
shared by module-scoped fixtures; every run works on a copy under a temporary folder, never on
the fixtures in tests/."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import BINARY, CASES, REPO, require_graphmend

CHECKOUTS = REPO / "tests" / "checkouts"
PY = sys.executable


def _env(**extra):
    """This process's environment less what would change a run: verify's own variables, the
    test switch, Dynamo logging, and PYTHONDONTWRITEBYTECODE (verify must set it itself)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAPHMEND_", "_GRAPHMEND_", "TORCH_LOGS")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def graphmend(*args, cwd=None, timeout=600, **env):
    require_graphmend()
    return subprocess.run([str(BINARY), *map(str, args)], cwd=cwd, env=_env(**env), capture_output=True, text=True,
                          timeout=timeout)


def report_of(proc):
    assert proc.stdout.strip(), f"no report (exit {proc.returncode}):\n{proc.stderr}"
    return json.loads(proc.stdout)


def line_of(path, needle):
    """The 1-based line of the first line of `path` that holds `needle`."""
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(f"{needle!r} not in {path}")


def break_at(report, file, line):
    found = [b for b in report["breaks"] if b["file"] == file and b["line"] == line]
    seen = [(b["file"], b["line"], b["status"]) for b in report["breaks"]]
    assert len(found) == 1, f"{file}:{line} not once among {seen}"
    return found[0]


def snapshot(root):
    """Every file and folder under root: bytes and mtime of files, folders by name."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = ("dir",) if p.is_dir() else (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def write(root, files):
    for rel, text in files.items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return Path(root)


# --- 1. delta with its own script (command mode) ---------------------------------------------

@pytest.fixture(scope="module")
def delta(tmp_path_factory):
    root = tmp_path_factory.mktemp("delta").resolve() / "delta"
    shutil.copytree(CHECKOUTS / "delta", root, ignore=shutil.ignore_patterns("__pycache__"))
    old = time.time() - 3600  # mtimes an hour back: a rewrite, even of the same bytes, shows
    for p in root.rglob("*"):
        os.utime(p, (old, old))
    before = snapshot(root)
    proc = graphmend("verify", ".", "--output-format", "json", "--", PY, "sample.py", cwd=root)
    return SimpleNamespace(root=root, proc=proc, report=report_of(proc), before=before, after=snapshot(root))


def test_delta_verdict_ok_exit_0(delta):
    assert delta.proc.returncode == 0, delta.proc.stderr
    assert delta.report["verdict"] == "ok"
    assert delta.report["target"]["mode"] == "command"
    assert delta.report["fix_error"] == ""
    for side in ("original", "fixed"):
        run = delta.report["runs"][side]
        assert (run["exit_code"], run["timed_out"], run["record"], run["complete"]) == (0, False, True, True), run


def test_delta_graphs_per_callable(delta):
    by_name = {c["name"]: c for c in delta.report["callables"]}
    assert set(by_name) == {"DeltaModel", "DeltaScheduler.step"}
    model = by_name["DeltaModel"]
    assert (model["graphs_before"], model["graphs_after"]) == (2, 1)
    step = by_name["DeltaScheduler.step"]
    # the conditional expression breaks each step's graph (and recompiles per timestep) before
    assert step["graphs_before"] > 1 and step["graphs_after"] == 1
    assert model["calls_before"] == model["calls_after"] == 10  # one per timestep
    t = delta.report["totals"]
    assert (t["graphs_before"], t["graphs_after"]) == (model["graphs_before"] + step["graphs_before"],
                                                        model["graphs_after"] + step["graphs_after"])


def test_delta_breaks_joined_with_the_sites(delta):
    modeling = "delta/modeling_delta.py"
    log = break_at(delta.report, modeling, line_of(delta.root / modeling, "logger.info("))
    assert log["status"] == "removed"
    assert log["site"]["code"] == "GM101" and log["site"]["status"] == "fixed"
    assert log["callables"] == ["DeltaModel"] and log["count_before"] >= 1 and log["count_after"] == 0
    assert log["via"] == []  # Dynamo's own site is the project's line

    scheduling = "delta/scheduling_delta.py"
    cond = break_at(delta.report, scheduling, line_of(delta.root / scheduling, " if prev_t >= 0 else "))
    assert cond["status"] == "removed", cond
    assert cond["site"]["code"] == "GM201" and cond["site"]["status"] == "fixed-when"
    assert cond["callables"] == ["DeltaScheduler.step"] and cond["count_after"] == 0

    t = delta.report["totals"]
    assert (t["removed"], t["unreported"], t["fixed-but-left"], t["refused"], t["new"], t["outside"]) == \
        (2, 0, 0, 0, 0, 0)
    assert len(delta.report["breaks"]) == 2


def test_delta_outputs_and_messages_kept(delta):
    outputs = delta.report["outputs"]
    # 3 saved calls (the default --calls) of each compiled callable
    assert sorted((o["name"], o["call"]) for o in outputs) == sorted(
        (n, k) for n in ("DeltaModel", "DeltaScheduler.step") for k in (1, 2, 3))
    assert all(o["status"] == "bit-equal" and o["max_abs_diff"] == 0.0 for o in outputs), outputs
    m = delta.report["messages"]
    assert (m["stdout"], m["records"], m["stderr"]) == ("same", "same", "same"), m
    assert m["records_count"] == 10  # the logger.info of each of the 10 model calls, before and after the fix


def test_delta_user_folder_not_written(delta):
    assert not [p for p in delta.after if "__pycache__" in p or p.endswith(".pyc")]
    assert not [p for p in delta.after if "_graphmend_runtime" in p]
    assert delta.after.keys() == delta.before.keys()
    changed = [p for p in delta.before if delta.before[p] != delta.after[p]]
    assert changed == []


# --- 2. case files (file mode) ----------------------------------------------------------------

@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    out = {}
    for stem in ("c04_where_if_else", "c16_refuse_tolist_sizes_reported", "c17_item_local_predicate"):
        folder = tmp_path_factory.mktemp(stem).resolve()
        path = shutil.copy(CASES / f"{stem}.py", folder)
        proc = graphmend("verify", path, "--python", PY, "--output-format", "json")
        out[stem] = SimpleNamespace(path=Path(path), proc=proc, report=report_of(proc))
    return out


def test_case_data_dependent_if_removed(cases):
    c = cases["c04_where_if_else"]
    r = c.report
    assert c.proc.returncode == 0 and r["verdict"] == "ok", c.proc.stderr
    assert r["target"]["mode"] == "file" and r["target"]["root"] == str(c.path.parent)
    b = break_at(r, c.path.name, line_of(c.path, "if x.mean() > 0"))
    assert b["status"] == "removed" and b["site"]["code"] == "GM201" and b["gb"] == ["GB0170"]
    assert [(x["name"], x["graphs_before"], x["graphs_after"]) for x in r["callables"]] == [("Model", 2, 1)]
    t = r["totals"]
    assert (t["removed"], t["refused"], t["unreported"], t["new"]) == (1, 0, 0, 0)
    assert (t["breaks_before"], t["breaks_after"]) == (1, 0)
    assert [o["status"] for o in r["outputs"]] == ["bit-equal"]


def test_case_break_on_a_line_the_fix_rewrites_above_its_site(cases):
    # Dynamo breaks at the `.item()` read; GM201's site is the `if` below it, whose fix rewrites
    # the read too: the break is the site's, and removed.
    c = cases["c17_item_local_predicate"]
    r = c.report
    assert c.proc.returncode == 0 and r["verdict"] == "ok", c.proc.stderr
    b = break_at(r, c.path.name, line_of(c.path, "hits = x.sum().item()"))
    assert b["status"] == "removed" and b["site"]["code"] == "GM201", b
    assert b["site"]["line"] == line_of(c.path, "if hits > 5")
    assert r["totals"]["unreported"] == 0


def test_case_refused_site_keeps_its_break_with_the_reason(cases):
    c = cases["c16_refuse_tolist_sizes_reported"]
    r = c.report
    assert c.proc.returncode == 0 and r["verdict"] == "ok", c.proc.stderr
    b = break_at(r, c.path.name, line_of(c.path, "sizes = counts.tolist()"))
    assert b["status"] == "refused"
    assert b["site"]["code"] == "GM401" and b["site"]["status"] == "refused"
    assert ".tolist()" in b["site"]["reason"] and "data-dependent shapes" in b["site"]["reason"]
    assert b["count_after"] == b["count_before"] >= 1  # nothing was rewritten: the break stays
    statuses = [x["status"] for x in r["breaks"]]
    t = r["totals"]
    assert t["removed"] == 0 and t["refused"] == statuses.count("refused") >= 1
    assert sum(t[s] for s in ("removed", "condition-unmet", "fixed-but-left", "refused", "unreported", "outside",
                              "new")) == len(statuses)
    assert t["graphs_before"] == t["graphs_after"]
    assert all(o["status"] == "bit-equal" for o in r["outputs"]) and r["outputs"]


# --- 4 and 5. a small project: GM101 and GM201 breaks, a fix never reached, new breaks --------

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/model.py": '''
        import logging

        import torch
        from torch import nn

        logger = logging.getLogger(__name__)


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                h = self.fc(x)
                logger.info("hidden %s", h.shape)
                if h.mean() > 0:
                    y = h * 2
                else:
                    y = h - 1
                return y


        class Unused(nn.Module):
            def forward(self, x):
                logger.info("unused %s", x.shape)
                return x + 1
        ''',
    # A GM201 site inside a loop: the original's break there makes Dynamo skip the whole frame,
    # so the graph_break() after the loop is only met once the fix lets Dynamo trace on.
    "pkg/hidden.py": '''
        import torch
        from torch import nn


        class Hidden(nn.Module):
            def forward(self, x):
                for _ in range(2):
                    if x.sum() > 0:
                        x = x * 2
                    else:
                        x = x - 1
                torch._dynamo.graph_break()
                return x + 1
        ''',
    # Called with grad: the deferred print falls back to the original call inside
    # _graphmend_runtime.py, and breaks as before.
    "pkg/grad.py": '''
        import torch
        from torch import nn


        class Grad(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                h = self.fc(x)
                print("grad", h.shape, h.sum())
                return h * 2
        ''',
    "run.py": '''
        import logging
        import sys

        import torch

        from pkg.grad import Grad
        from pkg.model import Model

        logging.basicConfig(level=logging.INFO)
        torch.manual_seed(0)
        model = torch.compile(Model())
        x = torch.randn(2, 4) + 1.0
        with torch.no_grad():
            print(model(x).sum().item())
            if sys.argv[1:] == ["hidden"]:
                from pkg.hidden import Hidden

                print(torch.compile(Hidden())(x).sum().item())
        print(torch.compile(Grad())(x).sum().item())
        ''',
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The project's files, written once; tests copy it."""
    root = write(tmp_path_factory.mktemp("project-src").resolve() / "proj", PROJECT)
    lines = SimpleNamespace(
        log=line_of(root / "pkg/model.py", 'logger.info("hidden'),
        branch=line_of(root / "pkg/model.py", "if h.mean() > 0"),
        unused=line_of(root / "pkg/model.py", 'logger.info("unused'),
        loop_if=line_of(root / "pkg/hidden.py", "if x.sum() > 0"),
        graph_break=line_of(root / "pkg/hidden.py", "graph_break()"),
        grad_print=line_of(root / "pkg/grad.py", "print("),
    )
    return SimpleNamespace(root=root, lines=lines)


def copy_project(project, dst):
    shutil.copytree(project.root, dst)
    return dst


@pytest.fixture(scope="module")
def fix_verify(project, tmp_path_factory):
    """`fix --verify pkg -- python run.py` on two copies: with GM101's fixes made no-ops, and as is."""
    out = {}
    for name, extra in (("noop", {"GRAPHMEND_TEST_NOOP_FIX": "GM101"}), ("plain", {})):
        root = copy_project(project, tmp_path_factory.mktemp(f"fix-verify-{name}") / "proj")
        proc = graphmend("fix", "--verify", "pkg", "--", PY, "run.py", cwd=root, **extra)
        out[name] = SimpleNamespace(root=root, proc=proc, model=(root / "pkg/model.py").read_text())
    return out


def decision(proc, file, line):
    """fix --verify's line for a site: `FILE:LINE: CODE WHAT: kept: ...` or `...: reverted: WHY`."""
    found = [x for x in proc.stderr.splitlines() if x.startswith(f"{file}:{line}: ")]
    assert len(found) == 1, proc.stderr
    return found[0]


def unchanged(project, root, rel):
    return (root / rel).read_bytes() == (project.root / rel).read_bytes()


def test_fix_verify_reverts_a_fix_whose_break_stayed(fix_verify, project):
    run, ln = fix_verify["noop"], project.lines
    assert run.proc.returncode == 0, run.proc.stderr
    line = decision(run.proc, "model.py", ln.log)
    assert " GM101 " in line and "reverted" in line and "stayed" in line
    assert "kept" in decision(run.proc, "model.py", ln.branch)
    # Written: the GM201 fix; not written: any GM101 rewrite.
    assert "_graphmend_if(" in run.model and "_graphmend_log" not in run.model
    assert run.model.splitlines()[ln.log - 1].strip() == 'logger.info("hidden %s", h.shape)'
    assert "fix --verify: 1 of 5 fixes kept" in run.proc.stderr
    compile(run.model, "model.py", "exec")


def test_fix_verify_keeps_both_fixes_without_the_switch(fix_verify, project):
    run, ln = fix_verify["plain"], project.lines
    assert run.proc.returncode == 0, run.proc.stderr
    assert "kept" in decision(run.proc, "model.py", ln.log)
    assert "kept" in decision(run.proc, "model.py", ln.branch)
    lines = run.model.splitlines()
    assert lines[ln.log - 1].strip().startswith("_graphmend_log(")
    assert lines[ln.branch - 1].strip().startswith("y = _graphmend_if(")
    assert (run.root / "pkg/_graphmend_runtime.py").is_file()
    assert "fix --verify: 2 of 5 fixes kept" in run.proc.stderr
    compile(run.model, "model.py", "exec")


def test_fix_verify_reverts_fixes_the_command_never_reaches(fix_verify, project):
    ln = project.lines
    for run in fix_verify.values():
        for file, line in (("model.py", ln.unused), ("hidden.py", ln.loop_if)):
            assert "reverted: the command made no graph break at this site" in decision(run.proc, file, line)
        assert run.model.splitlines()[ln.unused - 1].strip() == 'logger.info("unused %s", x.shape)'
        assert unchanged(project, run.root, "pkg/hidden.py")
        assert unchanged(project, run.root, "run.py")


def test_fix_verify_reverts_a_deferred_call_that_falls_back(fix_verify, project):
    # The print's helper makes the original call for a tensor that requires grad: its break,
    # inside _graphmend_runtime.py, is the print's own, so the fix is reverted (not kept as if
    # its break were gone and another were new in the runtime module).
    for name, run in fix_verify.items():
        line = decision(run.proc, "grad.py", project.lines.grad_print)
        assert "reverted" in line and "stayed" in line, (name, line)
        assert "fixed when: no message tensor requiring grad" in line, line  # the condition that failed
        assert unchanged(project, run.root, "pkg/grad.py")


@pytest.fixture(scope="module")
def findings(project, tmp_path_factory):
    """`verify pkg -- python run.py hidden` with GM101's fixes made no-ops: as JSON and as SARIF."""
    root = copy_project(project, tmp_path_factory.mktemp("findings").resolve() / "proj")
    out = {}
    for fmt in ("json", "sarif"):
        proc = graphmend("verify", "pkg", "--output-format", fmt, "--", PY, "run.py", "hidden", cwd=root,
                         GRAPHMEND_TEST_NOOP_FIX="GM101")
        out[fmt] = SimpleNamespace(proc=proc, report=report_of(proc))
    out["root"] = root
    return out


def test_fixed_but_left_and_new_breaks_in_json(findings, project):
    run, ln = findings["json"], project.lines
    r = run.report
    assert run.proc.returncode == 1 and r["verdict"] == "fix-failed", run.proc.stderr
    left = break_at(r, "model.py", ln.log)
    assert left["status"] == "fixed-but-left" and left["site"]["code"] == "GM101" and left["count_after"] >= 1
    grad = break_at(r, "grad.py", ln.grad_print)
    assert grad["status"] == "fixed-but-left" and grad["via"] == []
    new = break_at(r, "hidden.py", ln.graph_break)
    assert new["status"] == "new" and new["count_before"] == 0 and new["count_after"] >= 1
    assert new["site"] is None and new["callables"] == ["Hidden"]
    assert break_at(r, "model.py", ln.branch)["status"] == "removed"
    assert break_at(r, "hidden.py", ln.loop_if)["status"] == "removed"
    assert not [b for b in r["breaks"] if "_graphmend_runtime" in b["file"]]
    t = r["totals"]
    assert (t["fixed-but-left"], t["new"], t["removed"]) == (2, 1, 2)
    hidden = next(c for c in r["callables"] if c["name"] == "Hidden")
    assert hidden["graphs_before"] == 0 and hidden["graphs_after"] >= 1  # the skipped frame is compiled after the fix


def test_fixed_but_left_and_new_breaks_in_sarif(findings, project):
    run, ln = findings["sarif"], project.lines
    assert run.proc.returncode == 1, run.proc.stderr
    s = run.report
    assert s["version"] == "2.1.0" and isinstance(s["runs"], list) and len(s["runs"]) == 1
    driver = s["runs"][0]["tool"]["driver"]
    assert driver["name"] and {"GMV001", "GMV002", "GMV003"} <= {rule["id"] for rule in driver["rules"]}
    results = s["runs"][0]["results"]
    assert results
    by_place = {}
    for res in results:
        assert isinstance(res["ruleId"], str) and res["ruleId"]
        assert res["level"] in ("none", "note", "warning", "error")
        assert res["message"]["text"]
        (loc,) = res["locations"]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"]["uri"].startswith("file://")
        assert isinstance(phys["region"]["startLine"], int) and phys["region"]["startLine"] >= 1
        path = Path(phys["artifactLocation"]["uri"][len("file://"):])
        by_place[(path.relative_to(findings["root"] / "pkg").as_posix(), phys["region"]["startLine"])] = res
    assert by_place[("model.py", ln.log)]["ruleId"] == "GMV002"
    assert by_place[("model.py", ln.log)]["level"] == "error"
    assert by_place[("grad.py", ln.grad_print)]["ruleId"] == "GMV002"
    assert by_place[("hidden.py", ln.graph_break)]["ruleId"] == "GMV003"
    assert by_place[("model.py", ln.branch)]["ruleId"] == "GM201"  # removed: under its site's code
    assert "GM201" in {rule["id"] for rule in driver["rules"]}


def test_sarif_validates_against_the_official_schema(findings):
    jsonschema = pytest.importorskip("jsonschema")
    from test_output_formats import sarif_schema
    jsonschema.validate(findings["sarif"].report, sarif_schema(), cls=jsonschema.Draft4Validator)


# --- 3 and 6. a folder of checkouts ----------------------------------------------------------

BROKEN_CONFIG = {"model_type": "broken",
                 "auto_map": {"AutoConfig": "configuration_missing.MissingConfig",
                              "AutoModel": "modeling_missing.MissingModel"}}


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("batch").resolve() / "checkouts"
    for name in ("alpha", "phi-a"):
        shutil.copytree(CHECKOUTS / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "broken").mkdir()
    (folder / "broken" / "config.json").write_text(json.dumps(BROKEN_CONFIG))
    return folder


def batch_run(folder, *extra):
    proc = graphmend("verify", folder, "-j", "2", "--tiny", "--python", PY, "--output-format", "json", *extra)
    return SimpleNamespace(proc=proc, report=report_of(proc))


@pytest.fixture(scope="module")
def batch(checkouts):
    return batch_run(checkouts)


def entries(report, folder):
    return {Path(e["checkout"]).relative_to(folder).as_posix(): e for e in report["checkouts"]}


TOTAL_KEYS = ("graphs_before", "graphs_after", "breaks_before", "breaks_after", "removed", "condition-unmet",
              "fixed-but-left", "refused", "unreported", "outside", "new")


def test_batch_one_entry_per_checkout_broken_one_fails_alone(batch, checkouts):
    r = batch.report
    assert r["executor"] == "local" and r["jobs"] == 2
    e = entries(r, checkouts)
    assert sorted(e) == ["alpha", "broken", "phi-a"]
    assert e["alpha"]["status"] == e["phi-a"]["status"] == "ok"
    assert e["alpha"]["exit_code"] == e["phi-a"]["exit_code"] == 0
    broken = e["broken"]
    assert broken["status"] not in ("ok", "fix-failed") and broken["exit_code"] == 2
    assert broken["report"]["verdict"] == "original-failed"
    assert "configuration_missing" in broken["report"]["runs"]["original"]["stderr_tail"]
    assert batch.proc.returncode == 2  # an error among the checkouts; the others still ran
    for name in ("alpha", "phi-a"):
        assert e[name]["report"]["totals"]["removed"] >= 1


def test_batch_totals_add_up(batch):
    r = batch.report
    t = r["totals"]
    assert t["checkouts"] == 3
    for k in TOTAL_KEYS:
        assert t[k] == sum(e["report"]["totals"][k] for e in r["checkouts"] if e["report"]), k
    statuses = [e["status"] for e in r["checkouts"]]
    assert t["statuses"] == {s: statuses.count(s) for s in set(statuses)}


def test_alpha_logging_break_placed_at_the_checkout(batch, checkouts):
    r = entries(batch.report, checkouts)["alpha"]["report"]
    assert r["verdict"] == "ok" and r["target"]["mode"] == "checkout"
    assert "--tiny" in r["target"]["command"]
    path = checkouts / "alpha" / "modeling_alpha.py"
    b = break_at(r, "modeling_alpha.py", line_of(path, "logger.info("))
    assert b["status"] == "removed" and b["site"]["code"] == "GM101"
    # Dynamo names the line inside the logging module; the join places it at the checkout's call.
    assert len(b["via"]) == 1 and "logging/__init__.py:" in b["via"][0]
    assert not [x for x in r["breaks"] if x["status"] == "outside"]
    assert all(o["status"] == "bit-equal" for o in r["outputs"]) and r["outputs"]


def test_batch_through_ray_gives_the_same_results(batch, checkouts):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    ray = batch_run(checkouts, "--executor", "ray")
    assert ray.proc.returncode == batch.proc.returncode, ray.proc.stderr
    assert ray.report["executor"] == "ray"
    local, remote = entries(batch.report, checkouts), entries(ray.report, checkouts)
    assert sorted(remote) == sorted(local)
    for name in local:
        assert (remote[name]["status"], remote[name]["exit_code"]) == (local[name]["status"], local[name]["exit_code"])
        assert remote[name]["report"]["totals"] == local[name]["report"]["totals"], name
    drop = ("wall_s", "peak_rss_kb")
    assert {k: v for k, v in ray.report["totals"].items() if k not in drop} == \
        {k: v for k, v in batch.report["totals"].items() if k not in drop}


# --- 7. errors ---------------------------------------------------------------------------------

@pytest.fixture
def plain_folder(tmp_path):
    return write(tmp_path / "plain", {"m.py": "x = 1\n"})


def test_missing_path_exits_2(tmp_path):
    proc = graphmend("verify", tmp_path / "nothing-here", "--output-format", "json")
    assert proc.returncode == 2
    assert "no such file or folder" in proc.stderr


def test_folder_without_command_exits_2_naming_dashes(plain_folder):
    proc = graphmend("verify", plain_folder, "--output-format", "json")
    assert proc.returncode == 2
    assert "`--`" in proc.stderr and proc.stdout == ""


def test_original_run_failing_exits_2(plain_folder):
    proc = graphmend("verify", ".", "--output-format", "json", "--", PY, "-c", "raise SystemExit(3)", cwd=plain_folder)
    assert proc.returncode == 2, proc.stderr
    r = report_of(proc)
    assert r["verdict"] == "original-failed"
    assert r["runs"]["original"]["exit_code"] == 3 and not r["runs"]["original"]["timed_out"]
    # Nothing to compare with: the fixed run is left out.
    assert r["runs"]["fixed"]["error"] == "not run: the original run failed"
    assert r["outputs"] == [] and r["breaks"] == []


def test_original_run_failing_text_report(plain_folder):
    proc = graphmend("verify", ".", "--", PY, "-c", "raise SystemExit(3)", cwd=plain_folder)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "original: exit 3" in proc.stderr
    assert "fixed   : not run: the original run failed" in proc.stderr
    assert "verdict: original-failed" in proc.stderr


def test_timeout_kills_a_sleeping_command(plain_folder):
    start = time.monotonic()
    proc = graphmend("verify", ".", "--timeout", "2", "--output-format", "json", "--", PY, "-c",
                     "import time; time.sleep(120)", cwd=plain_folder, timeout=100)
    assert time.monotonic() - start < 60
    assert proc.returncode == 2, proc.stderr
    r = report_of(proc)
    run = r["runs"]["original"]
    assert run["timed_out"] is True and run["signal"] != 0 and run["wall_s"] < 30
    assert r["verdict"] == "original-failed"
    assert r["runs"]["fixed"]["error"] == "not run: the original run failed"  # not a second time-out


# --- the JSON report's schema (docs/verify-report.schema.json) -------------------------------

def _schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "verify-report.schema.json").read_text())
    return jsonschema, schema


def test_reports_follow_the_schema(delta, cases, batch, findings):
    jsonschema, schema = _schema()
    reports = [delta.report, batch.report, findings["json"].report, *(c.report for c in cases.values())]
    for report in reports:
        jsonschema.validate(report, schema)


def test_schema_catches_a_wrong_status(delta):
    jsonschema, schema = _schema()
    bad = json.loads(json.dumps(delta.report))
    bad["breaks"][0]["status"] = "gone"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


# --- scope from the frames Dynamo traced; a fix whose condition does not hold ------------------

LIBRARY = {
    # A library with no forward and no compile call: only the user's script compiles `solve`.
    "lib/solver.py": '''
        import torch


        def scale(x, w):
            h = x @ w
            if h.sum() > 0:
                h = 1.0 / h
            return h


        def clip(x):
            if x.abs().max() > 1:
                x = x * 0.5
            return x


        def shift(t, low):
            if t[0, 0] > low:
                return t
            return t - low


        def solve(x, w):
            return shift(clip(scale(x, w)), 0.0)
        ''',
    "run.py": '''
        import sys

        import torch

        from lib.solver import solve

        torch.manual_seed(0)
        w = torch.randn(4, 4, requires_grad=sys.argv[1] == "grad")
        step = torch.compile(solve)
        for _ in range(2):
            print(step(torch.randn(3, 4), w).detach().sum().item())
        ''',
}


# A library function whose parameters no analysed caller shows: a message made of them, and
# scalar reads of them (torchdiffeq's interp and rk_common at 0.2.5).
ODE_LIBRARY = {
    "lib/__init__.py": "",
    "lib/ode.py": '''
        import bisect


        def check_range(t0, t, t1):
            assert (t0 <= t) & (t <= t1), "t={} not in [{}, {}]".format(t, t0, t1)


        def locate(grid, t):
            check_range(grid[0], t, grid[-1])
            return min(bisect.bisect(grid.tolist(), t.item()), len(grid) - 1)


        def interp(grid, values, t):
            return values[locate(grid, t)] * t
        ''',
    "run.py": '''
        import sys

        import torch

        from lib.ode import interp

        grid = torch.linspace(0, 1, 5)
        values = torch.arange(15.0).reshape(5, 3)
        step = torch.compile(interp)
        for t in (0.3, 0.7):
            t = torch.tensor(t, requires_grad=sys.argv[1] == "grad")
            print(step(grid, values, t).detach().sum().item())
        ''',
}


@pytest.mark.slow
@pytest.mark.parametrize("grad", ["nograd", "grad"])
def test_unknown_message_values_and_scalar_reads_are_reported(tmp_path, grad):
    """The assert's message is made of parameters the analysis cannot tell: the fix states
    "no message tensor requiring grad", and where `t` requires grad the runtime keeps the assert:
    `condition-unmet`, not `fixed-but-left`. `grid.tolist()` and `t.item()` read parameters the
    analysis cannot tell either: Dynamo's scalar reads there (GB0109, GB0124: --data-read) are
    the evidence, and they are reported (refused), not left out."""
    root = write(tmp_path, ODE_LIBRARY)
    proc = graphmend("verify", "lib", "--output-format", "json", "--", PY, "run.py", grad, cwd=root)
    r = report_of(proc)
    check = break_at(r, "ode.py", line_of(root / "lib/ode.py", "assert (t0"))
    assert check["site"]["code"] == "GM301", check
    assert check["site"]["condition"] == "no message tensor requiring grad", check
    assert check["status"] == ("condition-unmet" if grad == "grad" else "removed"), check
    reads = break_at(r, "ode.py", line_of(root / "lib/ode.py", "bisect.bisect"))
    assert reads["status"] == "refused" and reads["site"]["reason"], reads
    assert r["totals"]["fixed-but-left"] == 0 and r["totals"]["unreported"] == 0, r["totals"]
    assert r["verdict"] == "ok" and proc.returncode == 0, proc.stderr


INDEX_LIBRARY = {
    "lib/__init__.py": "",
    "lib/sched.py": '''
        import numpy as np
        import torch


        class Scheduler:
            def __init__(self):
                self.alphas = torch.linspace(0.1, 0.9, 10)
                self.timesteps = np.arange(10)[::-1].copy()

            def step(self, sample, i, box, size):
                timestep = self.timesteps[i]
                alpha = self.alphas[timestep]
                lo = max(box[0], size)
                return sample * alpha + lo
        ''',
    "run.py": '''
        import torch

        from lib.sched import Scheduler

        scheduler = Scheduler()
        step = torch.compile(scheduler.step, backend="eager")
        sample = torch.ones(3)
        for i, n in enumerate((4, 5, 6)):
            print(step(sample, 2, torch.tensor([2.0 + i, 1.0]), sample.new_zeros(n).shape[0]).sum().item())
        ''',
}


@pytest.mark.slow
def test_dynamo_index_reads_are_reported_with_help(tmp_path):
    """PNDM's `self.alphas_cumprod[timestep]` with a NumPy timestep and torchvision's
    `max(box[0], 0)` with a symbolic size: the analysis cannot tell that they read tensor data
    (`timestep` comes out of a NumPy array), Dynamo's GB0033 records on those lines are the
    evidence (--data-read): both are reported (refused), with a help line, not left out."""
    root = write(tmp_path, INDEX_LIBRARY)
    proc = graphmend("verify", "lib", "--output-format", "json", "--", PY, "run.py", cwd=root)
    r = report_of(proc)
    index = break_at(r, "sched.py", line_of(root / "lib/sched.py", "self.alphas[timestep]"))
    assert index["status"] == "refused" and index["site"]["code"] == "GM401", index
    assert "index_select" in index["site"]["help"], index
    compare = break_at(r, "sched.py", line_of(root / "lib/sched.py", "max(box[0]"))
    assert compare["status"] == "refused" and "torch.clamp" in compare["site"]["help"], compare
    assert r["totals"]["unreported"] == 0, r["breaks"]
    assert r["verdict"] == "ok" and proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = write(tmp_path_factory.mktemp("library"), LIBRARY)
    return SimpleNamespace(root=root, scale_if=line_of(root / "lib/solver.py", "if h.sum()"),
                           clip_if=line_of(root / "lib/solver.py", "if x.abs()"),
                           shift_if=line_of(root / "lib/solver.py", "if t[0, 0]"))


def test_check_alone_sees_no_compiled_scope_in_the_library(library):
    proc = graphmend("check", "lib", cwd=library.root)
    assert "0 sites found" in proc.stderr + proc.stdout, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("grad", ["nograd", "grad"])
def test_traced_frames_scope_the_fix_and_an_unmet_condition_is_reported(library, grad):
    """verify passes the frames Dynamo traced as --scope-root: the `if`s of the library are fixed.
    `shift`'s test reads only its parameters, which no analysed caller shows to be tensors: Dynamo's
    data-dependent branch there (GB0170, --data-test) is the evidence. With `w` requiring grad,
    the branch `1.0 / h` can make inf, so the runtime keeps the `if`: that break is
    `condition-unmet` (its condition stated), not a failed fix."""
    proc = graphmend("verify", "lib", "--output-format", "json", "--", PY, "run.py", grad, cwd=library.root)
    r = report_of(proc)
    assert break_at(r, "solver.py", library.clip_if)["status"] == "removed", proc.stderr
    assert break_at(r, "solver.py", library.shift_if)["status"] == "removed", proc.stderr
    scale = break_at(r, "solver.py", library.scale_if)
    assert scale["site"]["code"] == "GM201" and scale["site"]["condition"], scale
    if grad == "grad":
        assert scale["status"] == "condition-unmet" and scale["count_after"] >= 1, scale
        assert r["totals"]["condition-unmet"] == 1
    else:
        assert scale["status"] == "removed", scale
    assert r["totals"]["fixed-but-left"] == 0 and r["totals"]["unreported"] == 0
    assert r["verdict"] == "ok" and proc.returncode == 0, proc.stderr
