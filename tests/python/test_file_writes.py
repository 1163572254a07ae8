"""How `graphmend fix` writes files: links are never silently replaced, mode and owner are kept.

No torch needed: these run build/graphmend on temporary files and look at the file system.
"""
import json
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


@pytest.mark.parametrize("mode", ["check", "diff"])
def test_check_and_diff_count_a_snapshot_of_links_as_fix_leaves_it(tmp_path, mode):
    """`check` and `fix --diff` count what `fix` writes: a link `fix` leaves as it is is not
    "would be rewritten" (check: a warning, exit 0; --diff: the error `fix` gives, exit 2, no
    diff), unless --write-through-links is given, as to `fix`."""
    require_graphmend()
    repo, snap = snapshot(tmp_path)
    args = ["check"] if mode == "check" else ["fix", "--diff"]
    proc = subprocess.run([str(BINARY), *args, str(snap)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == (0 if mode == "check" else 2), proc.stderr
    assert "is a symbolic link" in proc.stderr and "--write-through-links" in proc.stderr
    assert "1 site found, 0 fixable, 1 refused" in proc.stderr and proc.stdout == "", proc.stderr
    proc = subprocess.run([str(BINARY), *args, "--write-through-links", str(snap)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    # print(x): deferred only while x does not require grad (fixable-when).
    assert "1 site found, 0 fixable, 1 fixable-when, 0 refused" in proc.stderr, proc.stderr
    assert (proc.stdout != "") == (mode == "diff")
    assert (snap / "modeling_a.py").is_symlink() and "_graphmend_" not in (repo / "blobs" / "h1").read_text()


def test_the_first_path_to_a_file_decides_its_runtime_form_however_spelled(tmp_path):
    """A file found in a folder and also given by itself is taken as the first path found it:
    `fix --diff . ./m.py` and `fix --diff . m.py` give the same diff (the module's import). The
    first used to keep the inline runtime, because its path was spelled as the folder walk's."""
    require_graphmend()
    (tmp_path / "m.py").write_text(MODEL)
    (tmp_path / "n.py").write_text(MODEL)
    diffs = []
    for second in ("./m.py", "m.py"):
        proc = subprocess.run([str(BINARY), "fix", "--diff", ".", second], cwd=tmp_path, capture_output=True,
                              text=True)
        assert proc.returncode == 1 and "checked once" in proc.stderr, proc.stderr
        assert "2 rewritten files import it" in proc.stderr, proc.stderr
        diffs.append(proc.stdout)
    assert diffs[0] == diffs[1] and "from _graphmend_runtime import" in diffs[0]
    proc = subprocess.run([str(BINARY), "fix", "--diff", "m.py", "."], cwd=tmp_path, capture_output=True, text=True)
    assert "1 rewritten file imports it" in proc.stderr, proc.stderr  # m.py given first: inline


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


def test_a_file_with_lf_and_lone_cr_line_ends_is_fixed_and_runs_as_before(tmp_path):
    """LF lines, then a "\r\r\n" (two line ends to CPython), then lone-CR lines: CPython runs it,
    and graphmend called it "1:1: syntax error". Now it is fixed: its sites are on CPython's
    lines, its CRs stay, and the fixed file prints what the original printed."""
    import ast
    import sys
    body = MODEL + "print(M()(3))\n"
    head, rest = body.split("\n", 1)
    text = (head + "\n\r\r\n" + rest.replace("\n", "\r")).encode()
    (tmp_path / "m.py").write_bytes(text)
    proc = subprocess.run([str(BINARY), "check", "--output-format", "json", "m.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    [entry] = json.loads(proc.stdout)["files"]
    assert entry["error"] is None, entry["error"]
    call = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "print"
                and isinstance(n.args[0], ast.Name))  # the forward's print(x)
    assert [s["line"] for s in entry["sites"]] == [call.lineno]
    original = subprocess.run([sys.executable, "m.py"], cwd=tmp_path, capture_output=True, text=True)
    assert fix("m.py", cwd=tmp_path).returncode == 0
    fixed = (tmp_path / "m.py").read_bytes()
    assert b"_graphmend_print" in fixed and fixed.count(b"\r") >= text.count(b"\r")
    rerun = subprocess.run([sys.executable, "m.py"], cwd=tmp_path, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout == original.stdout == "3\n3\n"


FAILING_MKSTEMP = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
/* mkstemp as in a read-only folder (root writes anywhere, so the test cannot chmod one): for
   every temporary, or only for those whose name holds $FAIL_MKSTEMP_FOR. */
int mkstemp(char *template) {
    const char *only = getenv("FAIL_MKSTEMP_FOR");
    if (only && !strstr(template, only)) {
        int (*real)(char *) = (int (*)(char *))dlsym(RTLD_NEXT, "mkstemp");
        return real(template);
    }
    errno = EACCES;
    return -1;
}
"""


def failing_writes(tmp_path):
    """An LD_PRELOAD shim whose mkstemp fails as in a read-only folder."""
    import shutil
    require_graphmend()
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")
    assert compiler, "no C compiler for the LD_PRELOAD shim (the build needs one)"
    (tmp_path / "failing_mkstemp.c").write_text(FAILING_MKSTEMP)
    shim = tmp_path / "failing_mkstemp.so"
    subprocess.run([compiler, "-x", "c", "-shared", "-fPIC", "-o", str(shim), str(tmp_path / "failing_mkstemp.c")],
                   check=True)
    return {**os.environ, "LD_PRELOAD": str(shim)}


@pytest.mark.parametrize("runtime", ["auto", "inline"])
def test_a_folder_that_cannot_be_written_is_counted_as_not_rewritten(tmp_path, runtime):
    """Every write fails (a read-only folder, made with an LD_PRELOAD mkstemp): each file is
    reported with its write error, the summary counts 0 rewritten, the exit status is 2 (a
    failed write, the runtime module's included) and the files keep their text. No site is
    reported fixed: neither in the per-file line nor in the JSON report. The summary used to say
    "2 files checked, 2 rewritten"; later the exit status of a module that could not be written
    was 1, and the per-file line of a file that could not be written said "6 fixed"."""
    env = failing_writes(tmp_path)
    folder = tmp_path / "p"
    folder.mkdir()
    for name in ("a.py", "b.py"):
        (folder / name).write_text(MODEL)
    proc = subprocess.run([str(BINARY), "fix", "--runtime", runtime, "."], cwd=folder, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 2, proc.stderr
    assert "2 files checked, 0 rewritten" in proc.stderr, proc.stderr
    assert proc.stderr.count("Permission denied") >= 2, proc.stderr
    assert " 0 fixed" in proc.stderr and "[fixed" not in proc.stderr, proc.stderr
    # The report is on stdout: a --report-json file is written through mkstemp too.
    report = json.loads(subprocess.run([str(BINARY), "fix", "--runtime", runtime, "--output-format", "json", "."],
                                       cwd=folder, env=env, capture_output=True, text=True).stdout)
    for entry in report["files"]:
        assert entry["written"] is False and entry["sites"]
        assert all(not s["status"].startswith("fixed") for s in entry["sites"]), entry
        assert (entry["error_kind"] == "write") == (runtime == "auto"), entry  # the module's failure
    assert report["totals"]["fixed"] == report["totals"]["fixed-when"] == 0
    for name in ("a.py", "b.py"):
        assert (folder / name).read_text() == MODEL


def test_the_runtime_module_line_counts_the_files_written(tmp_path):
    """The runtime module is written before the files: when a file that imports it cannot be
    written, the module's line counts only the files written, and a module this run created
    that no written file imports is removed again (found by a helper: "written (2 rewritten
    files import it)" beside "1 rewritten")."""
    env = failing_writes(tmp_path)

    def fix_folder(name, files, failing):  # the writes of temporaries named with `failing` fail
        folder = tmp_path / name
        folder.mkdir()
        for f in files:
            (folder / f).write_text(MODEL)
        proc = subprocess.run([str(BINARY), "fix", "."], cwd=folder, env={**env, "FAIL_MKSTEMP_FOR": failing},
                              capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        return folder, proc.stderr

    folder, err = fix_folder("p", ["a.py", "b.py"], ".b.py.")
    assert "runtime module written (1 rewritten file imports it)" in err and "2 files checked, 1 rewritten" in err
    assert (folder / "b.py").read_text() == MODEL and "_graphmend_runtime import" in (folder / "a.py").read_text()
    folder, err = fix_folder("q", ["zz1.py", "zz2.py"], "/.zz")  # every file fails, not the module
    assert "runtime module" not in err and "0 rewritten" in err, err
    assert sorted(os.listdir(folder)) == ["zz1.py", "zz2.py"]


def test_a_runtime_module_that_is_a_link_is_left_as_fix_leaves_it(tmp_path):
    """A `_graphmend_runtime.py` that is a symbolic link: `check`, `fix --diff` and `fix` all
    leave its project unchanged with the link error (exit 2); `--write-through-links` writes the
    module through it. `check` and `--diff` used to say "would be written" and count the fixes."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.py").write_text(MODEL)
    (tmp_path / "real.py").write_text("# Generated by graphmend 0.0.1 (an older one)\n")
    (tmp_path / "proj" / "_graphmend_runtime.py").symlink_to("../real.py")
    for args in (["check"], ["fix", "--diff"], ["fix"]):
        proc = subprocess.run([str(BINARY), *args, "proj"], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "is a symbolic link" in proc.stderr and "would be written" not in proc.stderr, proc.stderr
        word = "fixed" if args == ["fix"] else "fixable"  # check and --diff write nothing
        assert f"0 {word}, 1 refused" in proc.stderr and proc.stdout == "", proc.stderr
    assert (tmp_path / "proj" / "a.py").read_text() == MODEL
    proc = subprocess.run([str(BINARY), "fix", "--write-through-links", "proj"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "proj" / "_graphmend_runtime.py").is_symlink()
    assert "_graphmend_print" in (tmp_path / "real.py").read_text()
    assert "_graphmend_runtime import" in (tmp_path / "proj" / "a.py").read_text()


def test_fix_stdin_to_a_full_stdout_is_a_write_error_with_its_report(tmp_path):
    """`fix -` whose stdout cannot take the fixed text (/dev/full): a write error (exit 2), no
    site fixed, and the report still written (it was "internal error", with no report)."""
    require_graphmend()
    with open("/dev/full", "w") as full:
        proc = subprocess.run([str(BINARY), "fix", "--output-format", "json", "--output-file",
                               str(tmp_path / "r.json"), "-"], input=MODEL, stdout=full, stderr=subprocess.PIPE,
                              text=True)
    assert proc.returncode == 2, proc.stderr
    [entry] = json.loads((tmp_path / "r.json").read_text())["files"]
    assert entry["written"] is False and "stdout" in entry["write_error"]
    assert all(not s["status"].startswith("fixed") for s in entry["sites"])


def test_a_foreign_runtime_module_is_a_finding_not_a_syntax_error(tmp_path):
    """A `_graphmend_runtime.py` graphmend did not write: its project's files are left as they
    were, exit 1 (a finding), and the JSON report says so (it said error_kind "syntax")."""
    (tmp_path / "a.py").write_text(MODEL)
    (tmp_path / "_graphmend_runtime.py").write_text("# mine\n")
    proc = subprocess.run([str(BINARY), "check", "--output-format", "json", "."], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    [entry] = json.loads(proc.stdout)["files"]
    assert entry["error_kind"] == "project" and entry["error_location"] is None
    assert "was not written by graphmend" in entry["error"]
    stats = subprocess.run([str(BINARY), "check", "--statistics", "."], cwd=tmp_path, capture_output=True, text=True)
    assert "syntax-error" not in stats.stderr, stats.stderr


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
