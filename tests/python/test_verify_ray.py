"""`graphmend verify --executor ray`'s Python side: python -m _graphmend_verify_ray.

The C++ `verify` subcommand is not needed: a stand-in shell script answers
`STANDIN verify CHECKOUT --output-format json ARGS...` by the checkout's name (prints JSON, sleeps
past the timeout, exits 2, dies by SIGKILL, floods stderr). One batch through a local Ray instance
is run once per module and checked against a plain sequential run of the same stand-in; one more
Ray start checks SIGINT. docs/verify.md, "Batches and Ray".
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

REPO = Path(__file__).resolve().parents[2]
PYDIR = REPO / "src" / "verify" / "python"
KEYS = ["index", "checkout", "exit_code", "signal", "timed_out", "wall_s", "peak_rss_kb",
        "stdout", "stderr_tail", "error"]
TIMEOUT = 2.0

STANDIN = r"""#!/bin/sh
# Stand-in for: graphmend verify CHECKOUT --output-format json ARGS...
[ "$1" = verify ] || { echo "stand-in: expected verify, got $1" >&2; exit 64; }
co=$2; shift 2
name=${co##*/}
case $name in
  *slow*) sleep 60 & echo $! > "$co/sleep.pid"; wait; exit 0;;
  *fail*) echo "error: $name has no config.json" >&2; exit 2;;
  *killed*) kill -9 $$;;
  *noisy*) i=0; while [ $i -lt 300 ]; do echo "line $i of noise on stderr" >&2; i=$((i+1)); done;;
esac
echo "{\"checkout\": \"$name\", \"args\": \"$*\"}"
echo "stand-in ran $name" >&2
"""

NAMES = ["a-ok", "b-fail", "c-slow", "d-killed", "e-ok", "f-noisy", "g-fail", "h-ok"]


def module_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYDIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def ray_argv(standin, checkouts, jobs=2, timeout=TIMEOUT, extra=()):
    return [sys.executable, "-m", "_graphmend_verify_ray", "--graphmend", str(standin),
            "--jobs", str(jobs), "--timeout", str(timeout), "--kill-grace", "1",
            *map(str, checkouts), "--", *extra]


def sequential(standin, checkout, extra=()):
    """The reference: one plain subprocess run of the stand-in, as -j 1 would make it."""
    proc = subprocess.Popen([str(standin), "verify", str(checkout), "--output-format", "json",
                             *extra], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate()
    rc = proc.returncode
    return {"exit_code": rc if rc >= 0 else -1, "signal": -rc if rc < 0 else 0,
            "timed_out": timed_out, "stdout": out.decode(), "stderr_tail": err.decode()[-2000:],
            "error": ""}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray")
    standin = root / "graphmend-standin"
    standin.write_text(STANDIN)
    standin.chmod(0o755)
    checkouts = []
    for name in NAMES:
        (root / name).mkdir()
        checkouts.append(root / name)
    start = time.monotonic()
    proc = subprocess.run(ray_argv(standin, checkouts, extra=["--tiny"]), cwd=root,
                          env=module_env(), capture_output=True, text=True, timeout=240)
    return {"root": root, "standin": standin, "checkouts": checkouts, "proc": proc,
            "wall": time.monotonic() - start}


def gone(pid, wait_s=5.0):
    """The process has exited (reaped, or a zombie awaiting its new parent), within wait_s."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def lines_of(proc):
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_one_line_per_checkout_nothing_else(batch):
    proc = batch["proc"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("\n")
    lines = lines_of(proc)  # every stdout line is JSON: nothing of Ray's gets there
    assert len(lines) == len(NAMES)
    for line in lines:
        assert list(line) == KEYS
        assert line["checkout"] == str(batch["checkouts"][line["index"]])
        assert isinstance(line["wall_s"], float) and line["wall_s"] >= 0
        assert isinstance(line["peak_rss_kb"], int) and line["peak_rss_kb"] > 0
    assert sorted(line["index"] for line in lines) == list(range(len(NAMES)))


def test_each_outcome(batch):
    by_name = {Path(line["checkout"]).name: line for line in lines_of(batch["proc"])}
    ok = by_name["a-ok"]
    assert (ok["exit_code"], ok["signal"], ok["timed_out"], ok["error"]) == (0, 0, False, "")
    assert json.loads(ok["stdout"]) == {"checkout": "a-ok", "args": "--output-format json --tiny"}
    assert ok["stderr_tail"] == "stand-in ran a-ok\n"
    fail = by_name["b-fail"]
    assert (fail["exit_code"], fail["stdout"]) == (2, "")
    assert "no config.json" in fail["stderr_tail"]
    slow = by_name["c-slow"]
    assert slow["timed_out"] and slow["exit_code"] == -1 and slow["signal"] == signal.SIGTERM
    assert TIMEOUT <= slow["wall_s"] < TIMEOUT + 5
    # The whole process group went, the stand-in's own child too.
    sleeper = int((batch["root"] / "c-slow" / "sleep.pid").read_text())
    assert gone(sleeper)
    killed = by_name["d-killed"]
    assert (killed["exit_code"], killed["signal"], killed["timed_out"]) == (-1, signal.SIGKILL, False)
    noisy = by_name["f-noisy"]
    assert len(noisy["stderr_tail"]) == 2000 and noisy["stderr_tail"].endswith("stand-in ran f-noisy\n")
    # Failures and the timeout stopped nothing: the checkouts after them ran.
    assert by_name["h-ok"]["exit_code"] == 0


def test_same_as_sequential_run(batch):
    compared = ["exit_code", "signal", "timed_out", "stdout", "stderr_tail", "error"]
    for line in lines_of(batch["proc"]):
        reference = sequential(batch["standin"], line["checkout"], ["--tiny"])
        assert {k: line[k] for k in compared} == reference, line["checkout"]


def test_no_ray(tmp_path):
    fake = tmp_path / "ray"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no ray here')\n")
    env = module_env()
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env['PYTHONPATH']}"
    proc = subprocess.run(ray_argv("/bin/true", [tmp_path]), env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert proc.stderr == "graphmend verify --executor ray needs Ray: pip install 'graphmend[ray]'\n"


def test_usage_error():
    proc = subprocess.run([sys.executable, "-m", "_graphmend_verify_ray", "--jobs", "2"],
                          env=module_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""


def test_no_timeout_means_no_limit(tmp_path):
    # `graphmend verify FOLDER --executor ray` without --timeout passes none: the module must
    # take that (and 0) as "no limit", as -j does, not refuse it.
    sys.path.insert(0, str(PYDIR))
    try:
        import _graphmend_verify_ray as mod
    finally:
        sys.path.remove(str(PYDIR))
    args = mod.parse_args(["--graphmend", "/bin/true", "--jobs", "1", str(tmp_path), "--", "--tiny"])
    assert args.timeout == 0 and args.verify_args == ["--tiny"]
    line = mod.run_checkout(0, str(tmp_path), ["/bin/sh", "-c", "sleep 0.3; echo '{}'"], 0)
    assert (line["exit_code"], line["timed_out"], line["stdout"]) == (0, False, "{}\n")


def test_child_env_gives_back_the_callers_pythonpath():
    # The C++ side runs the module with PYTHONPATH=PY:CALLER'S; a child must see the caller's
    # PYTHONPATH alone, as under -j (not PY, nor an empty one).
    sys.path.insert(0, str(PYDIR))
    try:
        import _graphmend_verify_ray as mod
    finally:
        sys.path.remove(str(PYDIR))
    here = os.path.dirname(os.path.abspath(mod.__file__))
    env = mod.child_env({"PYTHONPATH": f"{here}{os.pathsep}/user/lib", "HOME": "/h"})
    assert env == {"PYTHONPATH": "/user/lib", "HOME": "/h"}
    assert "PYTHONPATH" not in mod.child_env({"PYTHONPATH": here})


def test_interrupt_kills_running_children(batch, tmp_path):
    names = ["a-ok", "b-slow", "c-slow", "d-slow"]
    for name in names:
        (tmp_path / name).mkdir()
    # A long timeout: only the interrupt ends the slow ones.
    proc = subprocess.Popen(ray_argv(batch["standin"], [tmp_path / n for n in names], timeout=120),
                            env=module_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    pids = [tmp_path / "b-slow" / "sleep.pid", tmp_path / "c-slow" / "sleep.pid"]
    deadline = time.monotonic() + 120
    while not all(p.exists() and p.read_text().strip() for p in pids):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [Path(line["checkout"]).name for line in lines] == ["a-ok"]
    for p in pids:
        assert gone(int(p.read_text()))
    assert not (tmp_path / "d-slow" / "sleep.pid").exists()  # never started


def test_a_binary_that_cannot_start_gives_an_error_line(tmp_path):
    sys.path.insert(0, str(PYDIR))
    try:
        from _graphmend_verify_ray import child_argv, run_checkout
    finally:
        sys.path.remove(str(PYDIR))
    missing = tmp_path / "no-graphmend"
    line = run_checkout(3, str(tmp_path), child_argv(str(missing), str(tmp_path), []), TIMEOUT)
    assert list(line) == KEYS
    assert (line["index"], line["exit_code"], line["signal"], line["timed_out"]) == (3, -1, 0, False)
    assert line["error"].startswith("spawn: ") and str(missing) in line["error"]
