"""T5's model folder checked alone finds the same sites in T5's files as a check of the whole
installed transformers package.

Alone, T5's bases (`from ...modeling_utils import PreTrainedModel`) leave the inputs; they
resolve through the module names of the __init__ chain (transformers.models.t5.modeling_t5)
to transformers.modeling_utils.PreTrainedModel, an entry of the shipped table of nn.Module
classes (src/knowledge/module_table.txt).

modeling_t5.py copied out of the package, alone in a folder, has no __init__ chain: the import
leaves the folder, and the base is taken from the table by the import's last part and the
class's name, which a note says; the sites are those of the file inside the package.
"""
import json
import shutil
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


def notes_of(report):
    return {Path(e["path"]).name: e["notes"] for e in json.loads(report.read_text())["files"]}


def test_t5_file_copied_out_of_the_package_finds_the_same_sites(tmp_path):
    require_graphmend()
    inside = Path(transformers.__file__).resolve().parent / "models" / "t5" / "modeling_t5.py"
    folder = tmp_path / "t5"
    folder.mkdir()
    shutil.copy(inside, folder / "modeling_t5.py")
    check(inside, tmp_path / "inside.json")
    check(folder, tmp_path / "copied.json")
    copied = sites_in(tmp_path / "copied.json", folder)["modeling_t5.py"]
    assert copied == sites_in(tmp_path / "inside.json", inside.parent)["modeling_t5.py"]
    assert len(copied) >= 5, copied  # 8 at transformers 4.52.4
    assert notes_of(tmp_path / "inside.json")["modeling_t5.py"] == []
    line = next(i for i, text in enumerate(inside.read_text().splitlines(), 1)
                if text.startswith("class T5PreTrainedModel(PreTrainedModel)"))
    assert notes_of(tmp_path / "copied.json")["modeling_t5.py"] == [{
        "line": line,
        "message": "class `T5PreTrainedModel`: base `PreTrainedModel` comes from `from ...modeling_utils import "
                   "PreTrainedModel`, which leaves the folder `t5`: taken as "
                   "`transformers.modeling_utils.PreTrainedModel`, an nn.Module in graphmend's table of "
                   "transformers 4.52.4"}]
    # The text report says it too, and the fixable sites fail `check` as inside the package.
    proc = subprocess.run([str(BINARY), "check", str(folder)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert f"note: {folder / 'modeling_t5.py'}:{line}: class `T5PreTrainedModel`: base `PreTrainedModel`" in proc.stderr
