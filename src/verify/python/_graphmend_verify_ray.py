"""Run `graphmend verify` over many checkouts as Ray tasks: `graphmend verify --executor ray`.

    python -m _graphmend_verify_ray --graphmend BIN --jobs N --timeout SECONDS
                                    [--address ADDR] [--kill-grace SECONDS]
                                    CHECKOUT... -- VERIFY_ARGS...

For each CHECKOUT one Ray task (num_cpus=1) runs

    BIN verify CHECKOUT --output-format json VERIFY_ARGS...

as a subprocess in its own process group, and this process prints one JSON line for it on
stdout, as soon as it finishes (completion order, not input order: key on "index"):

    {"index": 0, "checkout": "/abs/path", "exit_code": 0, "signal": 0, "timed_out": false,
     "wall_s": 1.25, "peak_rss_kb": 81234, "stdout": "...", "stderr_tail": "...", "error": ""}

- index: the checkout's position among the CHECKOUT arguments (0-based); checkout: its absolute
  path.
- exit_code: the child's exit status when it exited; -1 when a signal ended it or it never ran.
  signal: the signal that ended it, else 0.
- timed_out: the child ran past --timeout: its process group got SIGTERM, and SIGKILL
  --kill-grace seconds later (default 5) if anything of it was still alive.
- wall_s: seconds from spawn to reap. peak_rss_kb: ru_maxrss of os.wait4 on the child's pid:
  the largest resident set of the child or of any descendant it waited for (not a sum).
- stdout: the child's whole stdout (UTF-8, invalid bytes replaced); stderr_tail: the last 2000
  characters of its stderr.
- error: "" when the child ran; else why not ("spawn: ..." when it could not be started,
  "ray: ..." when Ray lost the task). exit_code is then -1.
Lines are ASCII (json.dumps' default escaping). Nothing else is written on stdout: whatever Ray
or anything else writes to file descriptor 1 goes to stderr.

Every checkout gets its line, whatever the others do: a failing or timed-out run never stops
the rest. At most --jobs tasks are in flight at once.

Without --address a local Ray instance is started (num_cpus=--jobs, no dashboard, Ray's own
logs at WARNING on stderr and in Ray's temp folder, usage stats off unless
RAY_USAGE_STATS_ENABLED says otherwise) and shut down at the end; each child gets this process's
environment, as `graphmend verify -j` would give it. With --address the tasks run on that
cluster (anything ray.init accepts: "auto", "HOST:PORT", "ray://HOST:10001"): then BIN and every
CHECKOUT must exist at the same absolute paths on every node, along with the Python environment
graphmend verify runs (torch, transformers), and each child gets its Ray worker's environment.

Exit status: 0 when every checkout has its line (whatever the children's exit codes);
1 when Ray could not start or be reached; 2 on a usage error; 3 when Ray is not installed (one
line on stderr); 130 when interrupted. SIGINT or SIGTERM cancels the tasks not yet started,
interrupts the running ones (each kills its child's process group) and exits 130; lines already
printed stay.

Standard library and Ray only.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

NO_RAY = "graphmend verify --executor ray needs Ray: pip install 'graphmend[ray]'"
STDERR_TAIL = 2000
POLL_S = 0.05


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def _read_text(f) -> str:
    f.seek(0)
    return f.read().decode("utf-8", errors="replace")


def run_checkout(index: int, checkout: str, argv: list[str], timeout: float,
                 kill_grace: float = 5.0, env: dict | None = None) -> dict:
    """Run argv (one `graphmend verify CHECKOUT ...`) and describe the run as one result line.

    Plain function (the Ray task wraps it): the child runs in a new session, so its process group
    can be killed whole; the wait polls, so that an interrupt (Ray's cancel raises
    KeyboardInterrupt in this thread) is seen within POLL_S and kills the group.
    """
    result = {"index": index, "checkout": checkout, "exit_code": -1, "signal": 0,
              "timed_out": False, "wall_s": 0.0, "peak_rss_kb": 0, "stdout": "",
              "stderr_tail": "", "error": ""}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, start_new_session=True)
        except OSError as e:
            result["error"] = f"spawn: {e}"
            return result
        pid = proc.pid  # also the process group's id (start_new_session)
        status = rusage = None
        term_at = start + timeout if timeout > 0 else float("inf")  # 0: no limit (as -j)
        kill_at = None
        try:
            while True:
                reaped, status, rusage = os.wait4(pid, os.WNOHANG)
                if reaped == pid:
                    break
                now = time.monotonic()
                if kill_at is None and now >= term_at:
                    result["timed_out"] = True
                    _killpg(pid, signal.SIGTERM)
                    kill_at = now + kill_grace
                elif kill_at is not None and now >= kill_at:
                    _killpg(pid, signal.SIGKILL)
                    kill_at = float("inf")
                time.sleep(POLL_S)
        except BaseException:
            # Interrupted (Ray's cancel, SIGINT): take the whole group down, reap, re-raise.
            _killpg(pid, signal.SIGKILL)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            proc.returncode = -9
            raise
        result["wall_s"] = round(time.monotonic() - start, 3)
        # Whatever the child left running in its group (it should have waited for it) goes too.
        _killpg(pid, signal.SIGKILL)
        if os.WIFSIGNALED(status):
            result["signal"] = os.WTERMSIG(status)
            proc.returncode = -result["signal"]
        else:
            result["exit_code"] = os.WEXITSTATUS(status)
            proc.returncode = result["exit_code"]
        maxrss = rusage.ru_maxrss
        result["peak_rss_kb"] = int(maxrss // 1024 if sys.platform == "darwin" else maxrss)
        result["stdout"] = _read_text(out)
        result["stderr_tail"] = _read_text(err)[-STDERR_TAIL:]
    return result


def child_argv(graphmend: str, checkout: str, verify_args: list[str]) -> list[str]:
    return [graphmend, "verify", checkout, "--output-format", "json", *verify_args]


def parse_args(argv: list[str]) -> argparse.Namespace:
    verify_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, verify_args = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(
        prog="python -m _graphmend_verify_ray",
        description="graphmend verify over many checkouts, as Ray tasks (one JSON line each)")
    p.add_argument("--graphmend", required=True, help="the graphmend binary (absolute path)")
    p.add_argument("--jobs", type=int, required=True, help="tasks in flight at most")
    p.add_argument("--timeout", type=float, required=True, help="seconds per checkout; 0: no limit")
    p.add_argument("--address", default=None, help="a Ray cluster to connect to (default: a local instance)")
    p.add_argument("--kill-grace", type=float, default=5.0,
                   help="seconds between SIGTERM and SIGKILL of a timed-out run (default 5)")
    p.add_argument("checkouts", nargs="+", metavar="CHECKOUT")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if args.timeout < 0:
        p.error("--timeout must not be negative")
    args.verify_args = verify_args
    args.checkouts = [os.path.abspath(c) for c in args.checkouts]
    return args


_interrupted: list[int] = []


def _on_signal(signum, frame):
    # Only note it: raising here could land inside Ray's C++ calls (ray.wait).
    _interrupted.append(signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import ray
    except ImportError:
        print(NO_RAY, file=sys.stderr)
        return 3

    # Only the JSON lines go to stdout: keep a private copy of fd 1 (not inherited by Ray's
    # processes, so the reader sees EOF when this process ends) and point fd 1 at stderr.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding="ascii", buffering=1)
    os.dup2(2, 1)

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)

    local = args.address is None
    env = dict(os.environ) if local else None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import logging
    try:
        if local:
            ray.init(address="local", num_cpus=args.jobs, num_gpus=0, include_dashboard=False,
                     log_to_driver=False, logging_level=logging.WARNING,
                     object_store_memory=128 * 1024 * 1024)
        else:
            ray.init(address=args.address, log_to_driver=False, logging_level=logging.WARNING)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - any failure to start or reach Ray
        print(f"graphmend verify --executor ray: Ray did not start: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1

    task = ray.remote(num_cpus=1, max_retries=0)(run_checkout)
    pending = list(enumerate(args.checkouts))
    pending.reverse()  # pop() takes them in input order
    running: dict = {}  # ObjectRef -> (index, checkout)

    def emit(line: dict) -> None:
        out.write(json.dumps(line) + "\n")

    try:
        while (pending or running) and not _interrupted:
            while pending and len(running) < args.jobs:
                i, c = pending.pop()
                ref = task.remote(i, c, child_argv(args.graphmend, c, args.verify_args),
                                  args.timeout, args.kill_grace, env)
                running[ref] = (i, c)
            done, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
            for ref in done:
                i, c = running.pop(ref)
                try:
                    emit(ray.get(ref))
                except ray.exceptions.RayError as e:
                    emit({"index": i, "checkout": c, "exit_code": -1, "signal": 0,
                          "timed_out": False, "wall_s": 0.0, "peak_rss_kb": 0, "stdout": "",
                          "stderr_tail": "", "error": f"ray: {type(e).__name__}: {e}"[:STDERR_TAIL]})
        if not _interrupted:
            return 0
        # Interrupted: tasks not yet submitted never will be; each running task sees
        # KeyboardInterrupt (ray.cancel) and kills its child's group. Give them a moment to do it
        # before Ray's processes go.
        for ref in running:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001
                pass
        if running:
            try:
                ray.wait(list(running), num_returns=len(running), timeout=10.0)
            except Exception:  # noqa: BLE001
                pass
        return 130
    finally:
        try:
            ray.shutdown()
        except BaseException:  # noqa: BLE001
            pass
        out.close()


if __name__ == "__main__":
    sys.exit(main())
