"""The CI job docs/ci.md shows, run as written on a small model repo.

The `graphmend ...` commands of docs/ci.md's GitHub Actions snippet (the ```yaml block with
`graphmend check`) run in a temporary git repo with build/graphmend first on PATH:
- they fail on a repo with a fixable site;
- a site under `# noqa: GM101` and a file under `per-file-ignores` in pyproject.toml do not
  make them fail, and `graphmend fix` leaves both as written;
- after `graphmend fix .` they pass, and the fixed model behaves as the original did.
"""
import os
import re
import subprocess
import sys

import pytest

from conftest import BINARY, REPO, require_graphmend

MODEL = '''import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        print("hidden", h.shape)
        print("kept as written")  # noqa: GM101
        return h * 2
'''

IGNORED = '''import torch


class Debug(torch.nn.Module):
    def forward(self, x):
        print("debugging", x.shape)
        return x
'''

PYPROJECT = '''[project]
name = "demo"
version = "0"

[tool.graphmend]
per-file-ignores = { "tools/*.py" = ["GM101"] }
'''


def ci_doc_commands():
    """The `graphmend` commands of docs/ci.md's GitHub Actions job, in order."""
    text = (REPO / "docs" / "ci.md").read_text()
    blocks = [b for b in re.findall(r"```ya?ml\n(.*?)```", text, re.S) if "graphmend check" in b]
    assert blocks, "docs/ci.md shows no GitHub Actions job running `graphmend check`"
    commands = []
    for line in blocks[0].splitlines():
        m = re.match(r"\s*(?:-\s*)?run:\s*(.+)$", line)
        if m and m.group(1).strip().startswith("graphmend "):
            commands.append(m.group(1).strip())
    assert commands, "docs/ci.md's CI job has no `run: graphmend ...` step"
    return commands


def run_ci(commands, repo, env):
    results = [subprocess.run(c, shell=True, cwd=repo, env=env, capture_output=True, text=True) for c in commands]
    return results


@pytest.fixture
def repo(tmp_path):
    require_graphmend()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "debug.py").write_text(IGNORED)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


def path_env():
    env = dict(os.environ)
    env["PATH"] = f"{BINARY.parent}{os.pathsep}{env['PATH']}"
    env.pop("GRAPHMEND_OUTPUT_FORMAT", None)
    return env


def test_ci_doc_job_fails_on_a_fixable_site_and_passes_after_fix(repo):
    env = path_env()
    commands = ci_doc_commands()
    before = run_ci(commands, repo, env)
    assert any(r.returncode == 1 for r in before), [(r.returncode, r.stdout, r.stderr) for r in before]
    assert all(r.returncode in (0, 1) for r in before), [(r.returncode, r.stderr) for r in before]
    assert "model.py" in "".join(r.stdout + r.stderr for r in before)

    fixed = subprocess.run(["graphmend", "fix", "."], cwd=repo, env=env, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    model = (repo / "model.py").read_text()
    assert model != MODEL
    assert 'print("kept as written")  # noqa: GM101' in model
    assert "_graphmend" in model
    assert (repo / "tools" / "debug.py").read_text() == IGNORED

    after = run_ci(commands, repo, env)
    assert all(r.returncode == 0 for r in after), [(r.returncode, r.stdout, r.stderr) for r in after]


def test_fixed_model_prints_the_same(repo):
    """The fixed repo's model, run eagerly, prints what the original printed, in order."""
    env = path_env()
    script = ("import torch, sys; sys.path.insert(0, '.'); from model import Net; torch.manual_seed(0); "
              "n = Net(); print(n(torch.ones(2, 4)).sum().item())")
    before = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True)
    assert before.returncode == 0, before.stderr
    assert subprocess.run(["graphmend", "fix", "."], cwd=repo, env=env, capture_output=True).returncode == 0
    after = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True)
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout
