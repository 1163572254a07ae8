"""Locate and run the graphmend binary.

The binary comes from env GRAPHMEND_BIN (a path, or a command line such as
"python3 identity_fix.py"), default <repo>/build/graphmend.

run_fix(args) -> FixResult(cmd, returncode, stdout, stderr, seconds); returncode is
"timeout" when the binary ran past the limit.
refused_count(summary) -> the largest number reported next to the word "refused".
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO / "build" / "graphmend"


class FixerMissing(RuntimeError):
    """The graphmend binary does not exist."""


@dataclasses.dataclass
class FixResult:
    cmd: list
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def to_json(self):
        return dataclasses.asdict(self)


def fixer_command():
    """The command (list of str) that runs graphmend; raises FixerMissing."""
    env = os.environ.get("GRAPHMEND_BIN")
    cmd = shlex.split(env) if env else [str(DEFAULT_BIN)]
    exe = cmd[0]
    found = Path(exe).is_file() if os.sep in exe else shutil.which(exe) is not None
    if not found:
        raise FixerMissing(
            f"graphmend binary not found: {exe} (build it first, or set GRAPHMEND_BIN)"
        )
    return cmd


def run_fix(args, timeout=1800):
    """Run `graphmend fix ARGS...`; returns a FixResult (never raises on exit codes)."""
    cmd = fixer_command() + ["fix"] + [str(a) for a in args]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return FixResult(cmd, "timeout", _text(exc.stdout), _text(exc.stderr) + f"\ntimed out after {timeout}s",
                         round(time.monotonic() - start, 3))
    return FixResult(cmd, proc.returncode, proc.stdout, proc.stderr, round(time.monotonic() - start, 3))


def _text(data):
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


# "N refused" / "N sites refused" (N not itself the value of "key=N") or "refused: N".
_REFUSED = re.compile(r"(?<![=:\w.])(\d+)\s+(?:sites?\s+)?refused|refused\s*[:=]?\s*(\d+)",
                      re.IGNORECASE)


def refused_count(summary):
    """Largest count written next to 'refused' in graphmend's summary (0 if none).

    Accepts '1 refused', 'refused: 1', 'refused=1', '2 sites refused'. The exact
    summary format is not fixed yet, so this is deliberately loose.
    """
    counts = [int(a or b) for a, b in _REFUSED.findall(summary or "")]
    return max(counts, default=0)
