"""`python -m graphmend ARGS`: runs the graphmend binary with ARGS; its exit code is ours."""

from __future__ import annotations

import os
import sys

from graphmend import find_graphmend_bin


def main() -> None:
    graphmend = os.fsdecode(find_graphmend_bin())
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.run([graphmend, *sys.argv[1:]]).returncode)
    os.execvp(graphmend, [graphmend, *sys.argv[1:]])


if __name__ == "__main__":
    main()
