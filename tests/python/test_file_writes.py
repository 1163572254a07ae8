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


def snapshot(tmp_path):
    """A Hugging Face cache snapshot: snapshots/REV/modeling_a.py -> ../../blobs/HASH."""
    repo = tmp_path / "models--org--a"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "h1").write_text(MODEL + "\n\nif __name__ == '__main__':\n    print(M()(torch.ones(2)).sum().item())\n")
    snap = repo / "snapshots" / "r1"
    snap.mkdir(parents=True)
    (snap / "modeling_a.py").symlink_to("../../blobs/h1")
    return repo, snap


def test_a_snapshot_of_links_is_refused_whole_and_nothing_is_written(tmp_path):
    repo, snap = snapshot(tmp_path)
    before = (repo / "blobs" / "h1").read_text()
    report = tmp_path / "r.json"
    proc = fix("--report-json", report, snap, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "is a symbolic link" in proc.stderr
    assert (snap / "modeling_a.py").is_symlink() and (repo / "blobs" / "h1").read_text() == before
    assert not (snap / "_graphmend_runtime.py").exists()  # no module for a file that was not rewritten
    import json
    [entry] = json.loads(report.read_text())["files"]
    assert entry["written"] is False and entry["write_error"]
    assert [s["status"] for s in entry["sites"]] == ["refused"]


def test_write_through_a_snapshot_keeps_the_runtime_inline_so_the_blob_runs(tmp_path):
    import sys
    repo, snap = snapshot(tmp_path)
    original = subprocess.run([sys.executable, str(snap / "modeling_a.py")], capture_output=True, text=True)
    proc = fix("--write-through-links", snap, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    blob = (repo / "blobs" / "h1").read_text()
    assert "_graphmend_" in blob and "_graphmend_runtime import" not in blob  # inline, no import
    assert not (snap / "_graphmend_runtime.py").exists()
    fixed = subprocess.run([sys.executable, str(snap / "modeling_a.py")], capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == original.stdout


def test_one_file_reached_twice_is_checked_once(tmp_path):
    require_graphmend()
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "m.py").write_text(MODEL)
    (tmp_path / "alias").symlink_to("real")
    proc = subprocess.run([str(BINARY), "check", "real/m.py", "real/m.py", "alias"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.count("GM101") == 1, proc.stderr
    assert "the same file as real/m.py" in proc.stderr


def test_quiet_check_still_prints_what_fails_it(tmp_path):
    require_graphmend()
    (tmp_path / "m.py").write_text(MODEL)
    proc = subprocess.run([str(BINARY), "check", "-q", "m.py"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("m.py:4:9: GM101") and "site found" not in proc.stderr


def temporaries(folder):
    return sorted(p for p in os.listdir(folder) if ".graphmend-" in p)


def test_a_stale_temporary_of_the_target_is_removed_and_a_fresh_one_kept(tmp_path):
    """A run killed while writing (SIGKILL, a power cut) leaves `.NAME.graphmend-XXXXXX`; the
    next run that writes a file of that folder removes those over a minute old, never a
    concurrent run's, nor a file of another name pattern."""
    (tmp_path / "m.py").write_text(MODEL)
    stale, fresh, other = (tmp_path / ".m.py.graphmend-Ab12Cd", tmp_path / ".m.py.graphmend-Ef34Gh",
                           tmp_path / ".n.py.graphmend-Ij56Kl")
    not_ours = tmp_path / ".n.py.graphmend-Ij56Kl.bak"
    for p in (stale, fresh, other, not_ours):
        p.write_text("partial")
    for p in (stale, other, not_ours):
        os.utime(p, (1, 1))
    proc = fix("m.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.py").read_text() != MODEL
    assert temporaries(tmp_path) == [fresh.name, not_ours.name]


SLOW_FSYNC = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>
/* fsync that first waits 10 s: the temporary is on disk, not yet renamed. */
int fsync(int fd) {
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    sleep(10);
    return real(fd);
}
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupt_during_the_write_phase_leaves_no_temporary(tmp_path, sig):
    """SIGINT or SIGTERM while a temporary is written (held there by an fsync made slow with
    LD_PRELOAD): the temporary is removed before the process ends, and the file keeps its text."""
    import shutil
    import signal
    import time
    require_graphmend()
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")  # the build's own compiler
    assert compiler, "no C compiler for the LD_PRELOAD shim (the build needs one)"
    (tmp_path / "slow_fsync.c").write_text(SLOW_FSYNC)
    shim = tmp_path / "slow_fsync.so"
    subprocess.run([compiler, "-x", "c", "-shared", "-fPIC", "-o", str(shim), str(tmp_path / "slow_fsync.c"), "-ldl"],
                   check=True)
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "m.py").write_text(MODEL)
    # The signal's default action in the child: a shell running the tests in the background
    # starts them with SIGINT ignored, which graphmend (as any program) then keeps ignoring.
    proc = subprocess.Popen([str(BINARY), "fix", "-q", "m.py"], cwd=folder, env={**os.environ, "LD_PRELOAD": str(shim)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(getattr(signal, sig), signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not temporaries(folder) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert temporaries(folder), "the temporary never appeared"
    time.sleep(0.2)  # past mkstemp and into the held fsync
    proc.send_signal(getattr(signal, sig))
    assert proc.wait(timeout=60) == -getattr(signal, sig)
    assert temporaries(folder) == []
    assert (folder / "m.py").read_text() == MODEL


def test_a_file_with_lone_cr_line_endings_is_fixed_like_its_lf_copy_and_keeps_cr(tmp_path):
    """Lone CR line endings (CPython reads them): the grammar alone reads the first comment to
    the end of the file and found no site. Fixed, the file is its LF copy's fix with CRs."""
    text = "# a model\n" + MODEL
    (tmp_path / "lf.py").write_text(text)
    (tmp_path / "cr.py").write_bytes(text.replace("\n", "\r").encode())
    for name in ("lf.py", "cr.py"):
        proc = fix(name, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    lf, cr = (tmp_path / "lf.py").read_bytes(), (tmp_path / "cr.py").read_bytes()
    assert lf != text.encode() and b"\n" not in cr
    assert cr == lf.replace(b"\n", b"\r")
    compile(cr, "cr.py", "exec")


FAILING_MKSTEMP = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
/* mkstemp as in a read-only folder (root writes anywhere, so the test cannot chmod one). */
int mkstemp(char *template) {
    (void)template;
    errno = EACCES;
    return -1;
}
"""


def test_a_folder_that_cannot_be_written_is_counted_as_not_rewritten(tmp_path):
    """Every write fails (a read-only folder, made with an LD_PRELOAD mkstemp): each file is
    reported with its write error, the summary counts 0 rewritten, the exit status is 1 and the
    files keep their text. The summary used to say "2 files checked, 2 rewritten"."""
    import shutil
    require_graphmend()
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")
    assert compiler, "no C compiler for the LD_PRELOAD shim (the build needs one)"
    (tmp_path / "failing_mkstemp.c").write_text(FAILING_MKSTEMP)
    shim = tmp_path / "failing_mkstemp.so"
    subprocess.run([compiler, "-x", "c", "-shared", "-fPIC", "-o", str(shim), str(tmp_path / "failing_mkstemp.c")],
                   check=True)
    folder = tmp_path / "p"
    folder.mkdir()
    for name in ("a.py", "b.py"):
        (folder / name).write_text(MODEL)
    proc = subprocess.run([str(BINARY), "fix", "."], cwd=folder, env={**os.environ, "LD_PRELOAD": str(shim)},
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "2 files checked, 0 rewritten" in proc.stderr, proc.stderr
    assert proc.stderr.count("Permission denied") >= 2, proc.stderr
    for name in ("a.py", "b.py"):
        assert (folder / name).read_text() == MODEL


def test_output_file_with_a_folder_is_an_error_and_writes_nothing(tmp_path):
    """`fix FOLDER -o out.py` used to let the last file win silently: now exit 2, nothing written."""
    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("a.py", "b.py"):
        (folder / name).write_text(MODEL)
    proc = fix("d", "-o", "out.py", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "-o/--output takes one input file, not a folder" in proc.stderr
    assert not (tmp_path / "out.py").exists()
    assert all((folder / n).read_text() == MODEL for n in ("a.py", "b.py"))
