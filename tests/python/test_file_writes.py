"""How `graphmend fix` writes files: links are never silently replaced, mode and owner are kept.

No torch needed: these run build/graphmend on temporary files and look at the file system.
"""
import os
import stat
import subprocess

import pytest

from conftest import BINARY, require_graphmend

MODEL = (
    "import torch\n"
    "class M(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        print(x)\n"
    "        return x\n"
)


def fix(*args, cwd):
    require_graphmend()
    return subprocess.run([str(BINARY), "fix", "-q", *map(str, args)], cwd=cwd, capture_output=True, text=True)


def test_symlink_is_refused_with_how_and_left_as_a_link(tmp_path):
    (tmp_path / "real.py").write_text(MODEL)
    (tmp_path / "link.py").symlink_to("real.py")
    proc = fix("link.py", cwd=tmp_path)
    assert proc.returncode != 0
    assert "is a symbolic link" in proc.stderr and "--write-through-links" in proc.stderr
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_text() == MODEL
    assert not [p for p in os.listdir(tmp_path) if ".graphmend-" in p]


def test_write_through_links_rewrites_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real.py").write_text(MODEL)
    (tmp_path / "link.py").symlink_to("real.py")
    proc = fix("--write-through-links", "link.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link.py").is_symlink()
    assert "_graphmend_" in (tmp_path / "real.py").read_text()


def test_hard_links_are_refused_or_rewritten_for_every_name(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(MODEL)
    os.link(a, b)
    proc = fix("a.py", cwd=tmp_path)
    assert proc.returncode != 0 and "hard links" in proc.stderr
    assert a.read_text() == MODEL
    proc = fix("--write-through-links", "a.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.stat(a).st_ino == os.stat(b).st_ino
    assert "_graphmend_" in b.read_text()


def test_mode_is_kept(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(MODEL)
    f.chmod(0o640)
    assert fix("m.py", cwd=tmp_path).returncode == 0
    assert "_graphmend_" in f.read_text()
    assert stat.S_IMODE(f.stat().st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_owner_is_kept_when_root_rewrites_another_users_file(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(MODEL)
    os.chown(f, 65534, 65534)
    assert fix("m.py", cwd=tmp_path).returncode == 0
    st = f.stat()
    assert "_graphmend_" in f.read_text()
    assert (st.st_uid, st.st_gid) == (65534, 65534)
