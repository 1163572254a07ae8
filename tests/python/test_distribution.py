"""Distribution files: .pre-commit-hooks.yaml against pre-commit's own schema, the pre-commit and
GitHub Actions snippets of docs/ci.md, and the apt-get lines of README.md's Install and of that
job; the hooks' entries run by pre-commit itself on the staged files of a temporary repo, with
build/graphmend as `graphmend`."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pre_commit.clientlib import load_config, load_manifest

from conftest import BINARY, CASES, REPO, require_graphmend

MANIFEST = REPO / ".pre-commit-hooks.yaml"
CI_DOC = REPO / "docs" / "ci.md"  # the GitHub Actions job and the pre-commit config
HOOKS = {"graphmend-check": "check", "graphmend-fix": "fix"}


def ci_doc_yaml_blocks():
    """Every ```yaml block of docs/ci.md, parsed."""
    text = CI_DOC.read_text()
    return [(block, yaml.safe_load(block)) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def ci_doc_block(key):
    blocks = [(text, data) for text, data in ci_doc_yaml_blocks() if isinstance(data, dict) and key in data]
    assert len(blocks) == 1, f"docs/ci.md: one yaml block with '{key}:' expected, found {len(blocks)}"
    return blocks[0]


def test_manifest_is_valid_for_pre_commit():
    hooks = {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}  # raises when invalid
    assert set(hooks) == set(HOOKS)
    for hook_id, subcommand in HOOKS.items():
        hook = hooks[hook_id]
        # one runtime module per project for the staged files pre-commit names (docs/ci.md)
        assert hook["entry"] == f"graphmend {subcommand} --runtime module"
        assert hook["language"] == "python", "pre-commit pip-installs the repository: graphmend on PATH"
        assert hook["types"] == ["python"]
        assert hook["require_serial"] is True, "graphmend analyses the files it is given together"


@pytest.mark.parametrize("subcommand", sorted(set(HOOKS.values())))
def test_manifest_entries_are_graphmend_subcommands(subcommand):
    require_graphmend()
    proc = subprocess.run([str(BINARY), subcommand, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert subcommand in proc.stdout


def test_ci_doc_pre_commit_config_is_valid(tmp_path):
    text, data = ci_doc_block("repos")
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(text)
    load_config(str(config))  # raises when invalid
    (repo,) = data["repos"]
    used = {hook["id"] for hook in repo["hooks"]}
    assert used and used <= set(HOOKS)
    commented = set(re.findall(r"#\s*- id: (\S+)", text))
    assert commented <= set(HOOKS), "docs/ci.md's commented-out hook ids exist too"


def test_ci_doc_job_installs_and_checks():
    _, data = ci_doc_block("jobs")
    (job,) = data["jobs"].values()
    steps = job["steps"]
    uses = [step.get("uses", "") for step in steps]
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)
    runs = [step["run"] for step in steps if "run" in step]
    assert any(re.match(r"pip install \"graphmend @ git\+https://", run) for run in runs)
    assert runs[-1] == "graphmend check --output-format github ."


# What scripts/setup.sh installs for the unit tests only: `pip install` builds no test
# (GRAPHMEND_BUILD_TESTS is off under scikit-build-core).
TEST_ONLY_PACKAGES = {"libgtest-dev", "libgmock-dev", "libbenchmark-dev"}


def test_apt_lines_install_what_the_pip_build_needs():
    """The two apt-get lines (README.md's Install, and docs/ci.md's CI job) name the packages of
    scripts/setup.sh that CMake needs for `graphmend` (pkg-config and libgit2-dev were missing)."""
    setup = (REPO / "scripts" / "setup.sh").read_text()
    listed = re.search(r"APT_PACKAGES=\((.*?)\)", setup, re.S)[1].split()
    needed = set(listed) - TEST_ONLY_PACKAGES
    assert {"pkg-config", "libgit2-dev", "libdtl-dev"} <= needed
    apt = r"apt-get install (?:-y )?(?:--no-install-recommends )?([^\n`]+)"
    for path in (REPO / "README.md", CI_DOC):
        lines = re.findall(apt, path.read_text())
        assert len(lines) == 1, (path.name, lines)
        assert set(lines[0].split()) == needed, (path.name, lines[0])


def local_hooks():
    """A .pre-commit-config.yaml text whose local hooks are the manifest's, each running its entry
    with build/graphmend for `graphmend` (`language: system`: pre-commit installs nothing)."""
    hooks = []
    for hook in load_manifest(str(MANIFEST)):
        program, *args = hook["entry"].split()
        assert program == "graphmend"
        hooks.append({"id": hook["id"], "name": hook["name"], "entry": " ".join([str(BINARY), *args]),
                      "language": "system", "types": hook["types"], "require_serial": hook["require_serial"]})
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]})


def pre_commit(repo, hook_id, env):
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--verbose", hook_id], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                   capture_output=True)


def test_hooks_give_the_staged_files_of_a_project_one_runtime_module(tmp_path):
    """pre-commit names the staged files: the fix hook writes one `_graphmend_runtime.py` for their
    package, which each rewritten file imports (`--runtime auto` appended a copy of the runtime to
    each named file: +390 and +770 lines on a two-file commit), and a later commit of one more
    file imports the same module."""
    require_graphmend()
    repo = tmp_path / "repo"
    pkg = repo / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    models = {"a.py": CASES / "c01_defer_print_fstring.py", "b.py": CASES / "c04_where_if_else.py"}
    for name, case in models.items():
        (pkg / name).write_text(case.read_text())
    (repo / ".pre-commit-config.yaml").write_text(local_hooks())
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    git(repo, "init", "-q")
    git(repo, "add", ".")

    rc, out = pre_commit(repo, "graphmend-check", env)
    assert rc == 1, out  # fixable sites
    assert "mypkg/_graphmend_runtime.py: runtime module would be written (2 rewritten files import it)" in out
    assert not (pkg / "_graphmend_runtime.py").exists()

    rc, out = pre_commit(repo, "graphmend-fix", env)
    assert rc == 1, out  # the hook rewrote files: pre-commit fails the commit for review
    assert out.count("runtime module written") == 1, out
    assert "mypkg/_graphmend_runtime.py: runtime module written (2 rewritten files import it)" in out
    assert [p.relative_to(repo) for p in repo.rglob("_graphmend_runtime.py")] == [Path("mypkg/_graphmend_runtime.py")]
    module = (pkg / "_graphmend_runtime.py").read_bytes()
    assert module.startswith(b"# Generated by graphmend ")
    for name, case in models.items():
        text = (pkg / name).read_text()
        assert "--- graphmend runtime:" not in text, name  # no inline copy
        assert "from ._graphmend_runtime import _graphmend_" in text, name
        assert len(text.splitlines()) - len(case.read_text().splitlines()) <= 3, name  # 2 blank lines, the import

    git(repo, "add", ".")
    rc, out = pre_commit(repo, "graphmend-fix", env)
    assert rc == 0, out  # nothing left to fix; the module named among the staged files is left alone
    git(repo, "commit", "-qm", "models", "--no-verify")

    (pkg / "c.py").write_text((CASES / "c01_defer_print_fstring.py").read_text())
    git(repo, "add", "mypkg/c.py")
    rc, out = pre_commit(repo, "graphmend-fix", env)
    assert rc == 1, out
    assert "runtime module" not in out  # the project's module is there already
    assert (pkg / "_graphmend_runtime.py").read_bytes() == module
    text = (pkg / "c.py").read_text()
    assert "from ._graphmend_runtime import _graphmend_" in text and "--- graphmend runtime:" not in text

    imported = subprocess.run([sys.executable, "-c", "import mypkg.a, mypkg.b, mypkg.c"], cwd=repo,
                              capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stderr
