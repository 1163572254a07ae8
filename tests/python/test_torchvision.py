"""torchvision 0.27.1, the release for torch 2.12, fixed by graphmend as a whole package: it still
imports, and `equalize` (RandomEqualize, AutoAugment, RandAugment) gives the original's outputs
eagerly and compiled on a solid-colour and a random 224x224 image. Before the value-raising check
GM201 made `if step == 0: return img_chan` a select, whose other branch divides by `step`: the
fixed copy raised ZeroDivisionError on any constant channel (handed case c26)."""
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BINARY, require_graphmend

torchvision = pytest.importorskip("torchvision")

RUN = textwrap.dedent("""
    import sys, torch
    import torchvision.transforms.functional as F
    torch.manual_seed(0)
    solid = torch.full((3, 224, 224), 7, dtype=torch.uint8)
    noise = torch.randint(0, 256, (3, 224, 224), dtype=torch.uint8)
    half = noise.clone()
    half[1] = 200  # one constant channel in a photo
    compiled = torch.compile(F.equalize, backend="aot_eager", dynamic=False)
    out = {}
    for name, img in [("solid", solid), ("noise", noise), ("half", half)]:
        out[name + "/eager"] = F.equalize(img)
        out[name + "/compiled"] = compiled(img)
    torch.save(out, sys.argv[1])
""")


@pytest.fixture(scope="module")
def fixed_package(tmp_path_factory):
    require_graphmend()
    root = tmp_path_factory.mktemp("tv")
    shutil.copytree(torchvision.__path__[0], root / "torchvision", ignore=shutil.ignore_patterns("__pycache__"))
    report = subprocess.run([str(BINARY), "fix", "--isolated", "--exit-zero", "--output-format", "json",
                             str(root / "torchvision")], capture_output=True, text=True, check=True)
    return root, json.loads(report.stdout)


def outputs(tmp_path, pythonpath, tag):
    import torch

    out = tmp_path / f"{tag}.pt"
    env_path = [str(pythonpath)] if pythonpath else []
    code = f"import sys; sys.path[:0] = {env_path!r}\n" + RUN
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, f"{tag} copy failed:\n{proc.stderr[-3000:]}"
    return torch.load(out)


def test_equalize_site_is_refused_for_its_division(fixed_package):
    _, report = fixed_package
    sites = [s for f in report["files"] if f["path"].endswith("transforms/_functional_tensor.py")
             for s in f["sites"] if s["what"].startswith("if step == 0")]
    assert len(sites) == 1 and sites[0]["status"] == "refused"
    assert "ZeroDivisionError" in sites[0]["reason"]


def test_fixed_torchvision_gives_equalizes_outputs(fixed_package, tmp_path):
    import torch

    root, _ = fixed_package
    got = outputs(tmp_path, root, "fixed")
    want = outputs(tmp_path, None, "original")
    assert got.keys() == want.keys()
    for key in want:
        assert torch.equal(got[key], want[key]), key
    assert torch.equal(want["solid/compiled"], torch.full((3, 224, 224), 7, dtype=torch.uint8))
