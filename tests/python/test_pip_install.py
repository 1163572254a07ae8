"""`pip install` of the repository as a user gets it (its tracked files: no .deps/, build/ or
.venv), into a fresh venv: the build fetches tree-sitter itself, `graphmend` is on PATH,
`python -m graphmend` runs it, and the checkout is left clean. One install (built at -O0), a few
minutes."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, clean_copy, git

VERSION = re.search(r"project\(graphmend\s+VERSION\s+([0-9.]+)", (REPO / "CMakeLists.txt").read_text()).group(1)

MODEL = '''import torch


class Model(torch.nn.Module):
    def forward(self, x):
        print("shape", x.shape)
        return x + 1
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv bin folder, checkout, pip's output) after `pip install CHECKOUT` in a fresh venv."""
    tmp = tmp_path_factory.mktemp("pip_install")
    checkout, venv = tmp / "graphmend", tmp / "venv"
    checkout.mkdir()
    clean_copy(checkout)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    # Compiled without optimisation (-O0, about a quarter of the -O2 build's time): this tests
    # what the install does (the fetch, the scripts, the package), not the optimiser; a user's
    # `pip install` builds pyproject.toml's Release.
    fast = ["-C", "cmake.build-type=Debug", "-C", "cmake.define.CMAKE_CXX_FLAGS_DEBUG=-O0",
            "-C", "cmake.define.CMAKE_C_FLAGS_DEBUG=-O0"]
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-v", *fast, str(checkout)],
                          capture_output=True, text=True, env=env, timeout=3600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    return venv / "bin", checkout, output


def run(args, bin_dir, **kwargs):
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(args, capture_output=True, text=True, env=env, **kwargs)


def test_build_fetched_tree_sitter_itself(installed):
    _, checkout, output = installed
    assert not (checkout / ".deps").exists()
    assert "tree-sitter: no sources in" in output and "fetching the pinned sdists" in output


def test_graphmend_on_path_reports_the_version(installed):
    bin_dir, _, _ = installed
    assert shutil.which("graphmend", path=str(bin_dir)) == str(bin_dir / "graphmend")
    proc = run(["graphmend", "--version"], bin_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"graphmend {VERSION}"
    meta = run([str(bin_dir / "python"), "-c", "import importlib.metadata as m; print(m.version('graphmend'))"],
               bin_dir)
    assert meta.stdout.strip() == VERSION, meta.stderr


def test_graphmend_check_finds_a_site(installed, tmp_path):
    bin_dir, _, _ = installed
    (tmp_path / "model.py").write_text(MODEL)
    proc = run(["graphmend", "check", "model.py"], bin_dir, cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), output  # 1: sites it can fix (ruff's `check`)
    assert re.search(r"model\.py:6:\d+: GM101", output), output
    assert (tmp_path / "model.py").read_text() == MODEL


def test_python_m_graphmend_runs_the_binary(installed):
    bin_dir, _, _ = installed
    python = str(bin_dir / "python")
    version = run([python, "-m", "graphmend", "--version"], bin_dir)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"graphmend {VERSION}"
    page = run([python, "-m", "graphmend", "rule", "GM101"], bin_dir)
    assert page.returncode == 0, page.stderr
    assert page.stdout == (REPO / "docs" / "rules" / "GM101.md").read_text()
    unknown = run([python, "-m", "graphmend", "rule", "GM000"], bin_dir)
    assert unknown.returncode == 2, "the exit code passes through"
    assert "GM101" in unknown.stderr


def test_install_leaves_the_checkout_clean(installed):
    _, checkout, _ = installed
    assert git("status", "--porcelain", cwd=checkout) == ""
