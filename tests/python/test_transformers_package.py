"""graphmend fix over a copy of the whole installed transformers package.

Ends without a crash (exit 0); every file it rewrote compiles with py_compile; every file
with no fixed site is byte-identical; a second run changes nothing.
"""
import json
import py_compile
import shutil
import subprocess
from pathlib import Path

import transformers

from conftest import BINARY, require_graphmend


def test_fix_whole_transformers_package(tmp_path):
    require_graphmend()
    source = Path(transformers.__file__).parent
    copy = tmp_path / "transformers"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    report = tmp_path / "report.json"

    first = subprocess.run([str(BINARY), "fix", "-q", "--report-json", str(report), str(copy)],
                           capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-4000:]
    files = json.loads(report.read_text())["files"]
    assert len(files) > 1000

    rewritten = 0
    for entry in files:
        fixed = Path(entry["path"])
        original = source / fixed.relative_to(copy)
        if entry["changed"]:
            rewritten += 1
            assert any(s["status"] in ("fixed", "fixed-when") for s in entry["sites"]), entry["path"]
            py_compile.compile(str(fixed), cfile=str(tmp_path / "check.pyc"), doraise=True)
        else:
            assert fixed.read_bytes() == original.read_bytes(), entry["path"]
    assert rewritten > 0

    second = subprocess.run([str(BINARY), "fix", "--report-json", str(report), str(copy)],
                            capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-4000:]
    assert not any(entry["changed"] for entry in json.loads(report.read_text())["files"])
