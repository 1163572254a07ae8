#!/usr/bin/env python3
"""Stand-in for the graphmend binary that changes nothing (for testing the harness).

    identity_fix.py fix IN.py -o OUT.py   copies IN to OUT byte for byte
    identity_fix.py fix PATH...           leaves files and folders as they are

Prints a per-file summary on stderr in the spirit of graphmend's; exit 0 when
every path exists, 1 when one does not, 2 on a usage error.
Use: GRAPHMEND_BIN="python3 benchmarks/_harness/identity_fix.py".
"""
import shutil
import sys
from pathlib import Path


def main(argv):
    if len(argv) < 2 or argv[0] != "fix":
        print("usage: identity_fix.py fix IN.py -o OUT.py | fix PATH...", file=sys.stderr)
        return 2
    args = argv[1:]
    if "-o" in args:
        i = args.index("-o")
        if len(args) != 3 or i != 1:
            print("usage: identity_fix.py fix IN.py -o OUT.py", file=sys.stderr)
            return 2
        src, dst = Path(args[0]), Path(args[2])
        if not src.is_file():
            print(f"{src}: no such file", file=sys.stderr)
            return 1
        shutil.copyfile(src, dst)
        print(f"{src}: 0 sites, 0 fixed, 0 refused (identity stand-in)", file=sys.stderr)
        return 0
    rc = 0
    for arg in args:
        path = Path(arg)
        if not path.exists():
            print(f"{path}: no such file or folder", file=sys.stderr)
            rc = 1
            continue
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        print(f"{path}: {len(files)} files, 0 sites, 0 fixed, 0 refused (identity stand-in)",
              file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
