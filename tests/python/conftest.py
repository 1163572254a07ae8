"""Shared helpers for the Python tests: run benchmarks/graph_breaks.py and read its JSON.

The tests run with the project's venv (.venv/bin/python -m pytest tests/python);
every harness run happens in fresh subprocesses of that same interpreter.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "benchmarks" / "graph_breaks.py"
CASES = REPO / "tests" / "cases"
BINARY = REPO / "build" / "graphmend"
IDENTITY_FIX = REPO / "benchmarks" / "_harness" / "identity_fix.py"

sys.path.insert(0, str(REPO / "benchmarks"))  # for unit tests of _harness


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs torch.compile in subprocesses (still runs by default)")
    # The harness fixes a package once per (fixer, package files, flags) and reuses the fixed
    # copy (model_bench.fix_package): the model tests share one fix of transformers instead of
    # fixing it per model. One folder per run, shared by pytest-xdist's workers (they inherit
    # PYTEST_XDIST_TESTRUNUID), removed by the process that started the run.
    if "GRAPHMEND_FIX_CACHE" not in os.environ:
        import tempfile

        run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
        cache = Path(tempfile.gettempdir()) / f"graphmend-fix-cache-{run}"
        os.environ["GRAPHMEND_FIX_CACHE"] = str(cache)
        if not hasattr(config, "workerinput"):
            config._graphmend_fix_cache = cache


def pytest_unconfigure(config):
    cache = getattr(config, "_graphmend_fix_cache", None)
    if cache is not None:
        import shutil

        shutil.rmtree(cache, ignore_errors=True)


def run_harness(args, tmp_path, fixer=None, timeout=900):
    """Run graph_breaks.py ARGS --json tmp_path/result.json; returns (exit code, result, output).

    fixer: the GRAPHMEND_BIN to use (None: the environment's, default build/graphmend).
    Fails the test on a set-up error (exit 2) or when no JSON was written.
    """
    out = tmp_path / "result.json"
    env = dict(os.environ)
    if fixer is not None:
        env["GRAPHMEND_BIN"] = fixer
    proc = subprocess.run([sys.executable, str(HARNESS), *map(str, args), "--json", str(out)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 2, f"harness set-up error:\n{output}"
    assert out.exists(), f"harness wrote no JSON (exit {proc.returncode}):\n{output}"
    return proc.returncode, json.loads(out.read_text()), output


def require_graphmend():
    """Fail (not skip: CI builds first) when the graphmend binary is missing."""
    if os.environ.get("GRAPHMEND_BIN"):
        return
    if not BINARY.is_file():
        pytest.fail(f"{BINARY} does not exist: build graphmend before running the Python tests",
                    pytrace=False)


def identity_fixer():
    """GRAPHMEND_BIN value of the stand-in that changes nothing."""
    return f"{sys.executable} {IDENTITY_FIX}"


def check_sites(*paths):
    """`graphmend check --isolated --output-format json PATHS`: [(file path, site dict)], in order."""
    out = subprocess.run([str(BINARY), "check", "--isolated", "--exit-zero", "--output-format", "json",
                          *map(str, paths)], check=True, capture_output=True, text=True).stdout
    return [(f["path"], s) for f in json.loads(out)["files"] for s in f["sites"]]


def failed_checks(result):
    """The failed checks of a --case result, one per line, for assertion messages."""
    lines = []
    for check in result["checks"]:
        if not check["ok"]:
            lines.append(f"[{check['name']}] {check['expect'] or ''}")
            lines += [f"    {d}" for d in check["details"]]
    return "\n".join(lines)


def load_module(path, name):
    """Import the Python file at `path` as module `name` (registered in sys.modules)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fix_copy(original, tmp_path, *flags):
    """`graphmend fix [FLAGS] ORIGINAL -o TMP/NAME_fixed.py`; returns the fixed file's path."""
    fixed = Path(tmp_path) / f"{Path(original).stem}_fixed.py"
    subprocess.run([str(BINARY), "fix", *flags, str(original), "-o", str(fixed)], check=True, capture_output=True)
    return fixed


def runtime_block_text(stem):
    """The text of src/runtime/<stem>.py as graphmend embeds it: each line
    `# graphmend-shared: NAME VAR=START` replaced by src/runtime/shared/NAME.py after its leading
    comment lines, at the line's indentation, @VAR@ and @START@ replaced (as
    cmake/EmbedRuntime.cmake does)."""
    import re

    def shared(m):
        indent, name, var, start = m.groups()
        lines = (REPO / "src" / "runtime" / "shared" / f"{name}.py").read_text().splitlines()
        while lines and lines[0].startswith("#"):
            lines.pop(0)
        text = "\n".join(lines).replace("@VAR@", var).replace("@START@", start)
        return "\n".join(indent + line if line else line for line in text.split("\n"))

    text = (REPO / "src" / "runtime" / f"{stem}.py").read_text()
    return re.sub(r"^( *)# graphmend-shared: ([a-z_]+) ([A-Za-z_][A-Za-z0-9_]*)=(.+)$", shared, text, flags=re.M)


def load_runtime_block(stem, module, env_var, mode):
    """Execute src/runtime/<stem>.py (runtime_block_text) with env_var=mode (restored afterwards)
    and a fresh cached module `module`; returns the names the block defines (its `_graphmend_*`
    helpers)."""
    import os

    path = REPO / "src" / "runtime" / f"{stem}.py"
    sys.modules.pop(module, None)
    old = os.environ.get(env_var)
    os.environ[env_var] = mode
    try:
        scope = {}
        exec(compile(runtime_block_text(stem), str(path), "exec"), scope)
    finally:
        sys.modules.pop(module, None)
        if old is None:
            os.environ.pop(env_var)
        else:
            os.environ[env_var] = old
    return scope


def git(*args, cwd):
    """`git ARGS` in cwd (with a committer set); its stdout. Fails on an error."""
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          cwd=cwd, capture_output=True, text=True, check=True).stdout


def clean_copy(dst):
    """The tracked and not-ignored files of the working tree, copied to dst and committed there."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO).split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    for absent in (".deps", "build", ".venv"):
        assert not (dst / absent).exists(), absent
    git("init", "-q", cwd=dst)
    git("add", "-A", cwd=dst)
    git("commit", "-q", "-m", "snapshot", cwd=dst)
