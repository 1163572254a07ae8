"""scripts/add_rule.py makes a rule from nothing that builds, runs and passes its golden test, and
touches no file but its new ones and one line of src/rules/registry.def.

It runs in a copy of the repository (its tracked and not-ignored files, committed there), which is
then configured and built as a user would (CMake; only graphmend_tests and the graphmend binary it
runs, at -O0 as test_pip_install.py builds: this tests what the scaffold writes, not the
optimiser), with ccache when there is one. Then the new rule's golden test, and every other unit
and golden test, run in the copy: no list of rules elsewhere needs the new one. One build of the
copy: about 2 CPU-minutes without ccache, and the unit tests at -O0 about 40 CPU-seconds.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, clean_copy, git, load_module

SCRIPT = REPO / "scripts" / "add_rule.py"
add_rule = load_module(SCRIPT, "add_rule")

NAME = "scaffold-example"
IDENT = NAME.replace("-", "_")


def free_code():
    """The highest code no rule has (GM999 unless taken): the test holds whatever rules are added."""
    taken = {code for code, _ in add_rule.registered(REPO)}
    return next(f"GM{n}" for n in range(999, 99, -1) if f"GM{n}" not in taken)


CODE = free_code()


def run(args, cwd, timeout=None, env=None):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    """(the copy, add_rule.py's output) after add_rule.py CODE NAME there and a build of the copy."""
    copy = tmp_path_factory.mktemp("add_rule") / "graphmend"
    copy.mkdir()
    clean_copy(copy)
    code, made = run([sys.executable, "scripts/add_rule.py", CODE, NAME], copy)
    assert code == 0, made

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    configure = ["cmake", "-S", str(copy), "-B", str(copy / "build"), "-DCMAKE_BUILD_TYPE=Debug",
                 "-DCMAKE_CXX_FLAGS_DEBUG=-O0", "-DCMAKE_C_FLAGS_DEBUG=-O0", "-DGRAPHMEND_BUILD_TOOLS=OFF"]
    if (REPO / ".deps").is_dir():  # scripts/setup.sh's tree-sitter sources; else CMake fetches them
        configure.append(f"-DGRAPHMEND_DEPS_DIR={(REPO / '.deps').resolve()}")
    if shutil.which("ccache"):
        configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        env["CCACHE_BASEDIR"] = str(copy)  # paths relative to the copy: the next run's copy hits
    code, out = run(configure, copy, timeout=600, env=env)
    assert code == 0, out[-8000:]
    code, out = run(["cmake", "--build", "build", "--target", "graphmend_tests"], copy, timeout=3600, env=env)
    assert code == 0, out[-8000:]
    return copy, made


def test_scaffold_adds_files_and_one_registry_line(scaffolded):
    copy, made = scaffolded
    rule_dir = f"src/rules/{CODE.lower()}_{IDENT}/"
    new = {rule_dir + "rule.cpp", f"docs/rules/{CODE}.md", f"tests/fixtures/{NAME}/placeholder.py",
           f"tests/fixtures/{NAME}/placeholder.expected.py", f"tests/fixtures/{NAME}/placeholder.report.txt"}
    status = git("status", "--porcelain", "--untracked-files=all", cwd=copy).splitlines()
    # build/ is ignored by .gitignore
    assert sorted(status) == sorted([" M src/rules/registry.def"] + [f"?? {p}" for p in new])
    diff = git("diff", "--unified=0", "src/rules/registry.def", cwd=copy).splitlines()
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == [f"+GRAPHMEND_RULE({CODE}, {IDENT})"]
    for path in sorted(new):
        assert path in made, made  # it says what it made
    assert "Next:" in made


def test_new_rule_passes_its_golden_test(scaffolded):
    copy, _ = scaffolded
    golden = f"Fixtures/Golden.FixedTextAndReportMatch/tests_fixtures_{IDENT}_placeholder_py"
    code, out = run(["build/graphmend_tests", f"--gtest_filter={golden}:Registry.*:RulePages.*"], copy, timeout=600)
    assert code == 0, out[-8000:]
    assert f"[       OK ] {golden}" in out, out[-8000:]


def test_new_rule_runs_in_the_binary(scaffolded):
    copy, _ = scaffolded
    fixture = f"tests/fixtures/{NAME}/placeholder.py"
    code, out = run(["build/graphmend", "check", "--isolated", fixture], copy, timeout=600)
    assert code == 0, out  # a refused site only: nothing to fix
    site = rf"^{re.escape(fixture)}:\d+:\d+: {CODE} \[refused\] {IDENT}\(hidden_states\): the placeholder site"
    assert re.search(site, out, re.M), out
    assert out.count(CODE) == 1, "the call in a function no compiled code calls is no site"
    code, page = run(["build/graphmend", "rule", NAME], copy, timeout=600)
    assert code == 0 and page == (copy / "docs" / "rules" / f"{CODE}.md").read_text()


def test_every_unit_and_golden_test_passes_with_the_new_rule(scaffolded):
    copy, _ = scaffolded
    code, out = run(["build/graphmend_tests"], copy, timeout=1800)
    assert code == 0, out[-8000:]


# --- without a build ---------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path):
    """A repository's registry and the folders add_rule.py checks, one rule folder without its line."""
    (tmp_path / "src" / "rules").mkdir(parents=True)
    shutil.copy2(REPO / add_rule.REGISTRY, tmp_path / add_rule.REGISTRY)
    (tmp_path / "src" / "rules" / "gm777_orphan").mkdir()
    (tmp_path / "tests" / "fixtures" / "cases").mkdir(parents=True)
    (tmp_path / "tests" / "fixtures" / "taken-name").mkdir()
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "docs" / "rules" / "GM778.md").write_text("# GM778 page-only\n")
    return tmp_path


def listing(root):
    return sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() else b"") for p in root.rglob("*"))


@pytest.mark.parametrize("code, name, says", [
    ("GM60", "a-rule", "code 'GM60'"),
    ("GM061", "a-rule", "code 'GM061'"),
    ("gm601", "a-rule", "code 'gm601'"),
    ("GM601", "A-Rule", "name 'A-Rule'"),
    ("GM601", "a_rule", "name 'a_rule'"),
    ("GM601", "a--rule", "name 'a--rule'"),
    ("GM601", "-rule", "name '-rule'"),
    ("GM101", "a-rule", "code GM101 is already the rule GM101 deferred-side-effect"),
    ("GM601", "deferred-side-effect", "name deferred-side-effect is already the rule GM101"),
    ("GM777", "a-rule", "src/rules/gm777_orphan exists"),
    ("GM778", "a-rule", "docs/rules/GM778.md exists"),
    ("GM601", "taken-name", "tests/fixtures/taken-name exists"),
    ("GM601", "cases", "tests/fixtures/cases/ holds the expectations of tests/cases/"),
    ("GM601", "lambda", "name 'lambda': the placeholder fixture calls a function `lambda`"),
    ("GM601", "print", "name 'print': the placeholder fixture calls a function `print`"),
    ("GM601", "hidden-states", "name 'hidden-states': the placeholder fixture calls a function `hidden_states`"),
])
def test_refuses_a_bad_or_taken_code_or_name_and_writes_nothing(tree, code, name, says):
    before = listing(tree)
    rc, out = run([sys.executable, str(SCRIPT), "--root", str(tree), "--", code, name], tree)
    assert rc == 2 and says in out and "nothing written" in out, out
    assert listing(tree) == before


def test_registry_line_goes_in_code_order():
    text = "// comment\nGRAPHMEND_RULE(GM101, a)\nGRAPHMEND_RULE(GM301, b)\n"
    assert add_rule.registry_with(text, "GM201", "c-d") == (
        "// comment\nGRAPHMEND_RULE(GM101, a)\nGRAPHMEND_RULE(GM201, c_d)\nGRAPHMEND_RULE(GM301, b)\n")
    assert add_rule.registry_with(text, "GM401", "e").endswith("GRAPHMEND_RULE(GM301, b)\nGRAPHMEND_RULE(GM401, e)\n")
    assert add_rule.registry_with(text.rstrip("\n"), "GM401", "e").endswith("(GM301, b)\nGRAPHMEND_RULE(GM401, e)\n")
