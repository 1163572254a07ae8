"""T5's model folder checked alone finds the same sites in T5's files as a check of the whole
installed transformers package.

Alone, T5's bases (`from ...modeling_utils import PreTrainedModel`) leave the inputs; they
resolve through the module names of the __init__ chain (transformers.models.t5.modeling_t5)
to transformers.modeling_utils.PreTrainedModel, an entry of the shipped table of nn.Module
classes (src/analysis/module_table.txt).
"""
import json
import subprocess
from pathlib import Path

import transformers

from conftest import BINARY, require_graphmend


def sites_in(report, folder):
    sites = {}
    for entry in json.loads(report.read_text())["files"]:
        path = Path(entry["path"]).resolve()
        if path.parent == folder:
            sites[path.name] = sorted((s["line"], s["col"], s["code"], s["status"]) for s in entry["sites"])
    return sites


def check(path, report):
    proc = subprocess.run([str(BINARY), "check", "-q", "--exit-zero", "--report-json", str(report), str(path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_t5_alone_matches_whole_package(tmp_path):
    require_graphmend()
    package = Path(transformers.__file__).resolve().parent
    t5 = package / "models" / "t5"
    check(t5, tmp_path / "alone.json")
    check(package, tmp_path / "whole.json")
    alone = sites_in(tmp_path / "alone.json", t5)
    whole = sites_in(tmp_path / "whole.json", t5)
    assert set(alone) == set(whole) and "modeling_t5.py" in alone
    assert alone == whole
    # T5Stack.forward, a PreTrainedModel subclass, holds sites: the comparison is not of two empty sets.
    assert len(alone["modeling_t5.py"]) >= 5, alone
