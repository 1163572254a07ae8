#!/usr/bin/env python3
"""Compare what two graphmend binaries say and write over the same files: a refactor's check.

    same_output.py --before OLD_BIN --after NEW_BIN [--python .venv/bin/python]
                   [--targets transformers,corpus,cases] [--work DIR] [--json OUT.json]

For each target, runs each binary twice, with the same flags (`-j 2`, a configuration file
holding `exclude = []`, `--exit-zero`):

  check --output-format json PATHS     the JSON report (stdout)
  fix --diff PATHS                     the unified diffs (stdout) and the text report (stderr)

and compares the outputs byte for byte. Targets:

  transformers  the installed transformers package of --python;
  corpus        that interpreter's site-packages (purelib, platlib) and standard library, the
                files benchmarks/corpus.py runs over (read in place: `check` and `fix --diff`
                write nothing);
  cases         tests/cases, tests/checkouts and tests/fixtures of this repository.

Each output is kept under --work (default a temporary folder) as <target>.<kind>.<before|after>.
Prints, per target and kind, "same" or "DIFFERENT" with the first differing lines; for JSON
reports, the sites (path, line, column, code, status) only one side has. Exit 0 when every
output is identical, 1 otherwise, 2 on a usage error. A check, not a test: it needs two binaries
and minutes over the corpus.
"""
from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PATHS = (
    "import json, sysconfig; p = sysconfig.get_paths(); "
    "print(json.dumps([p['purelib'], p['platlib'], p['stdlib']]))"
)


def target_paths(name: str, python: str) -> list[str]:
    if name == "cases":
        return [str(REPO / "tests" / d) for d in ("cases", "checkouts", "fixtures")]
    roots = json.loads(subprocess.run([python, "-c", _PATHS], check=True, capture_output=True,
                                      text=True).stdout)
    if name == "transformers":
        return [str(Path(roots[0]) / "transformers")]
    if name == "corpus":
        unique = []
        for r in roots:
            if r not in unique and not any(Path(r).is_relative_to(u) for u in unique):
                unique.append(r)
        return unique
    raise SystemExit(f"same_output.py: unknown target {name!r}")


def run(binary: str, args: list[str], out: Path) -> float:
    start = time.monotonic()
    with open(out, "wb") as stdout, open(out.with_suffix(out.suffix + ".stderr"), "wb") as stderr:
        subprocess.run([binary, *args], stdout=stdout, stderr=stderr, check=False)
    return time.monotonic() - start


def site_keys(path: Path) -> set[tuple]:
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return set()
    keys = set()
    for f in report.get("files", []):
        for s in f.get("sites", []):
            keys.add((f.get("path"), s.get("line"), s.get("column"), s.get("code"), s.get("status"),
                      s.get("reason", s.get("message"))))
    return keys


def describe(before: Path, after: Path, is_json: bool) -> str:
    lines = []
    if is_json:
        a, b = site_keys(before), site_keys(after)
        for k in sorted(a - b, key=str)[:10]:
            lines.append(f"    only before: {k}")
        for k in sorted(b - a, key=str)[:10]:
            lines.append(f"    only after:  {k}")
    if not lines:
        old = before.read_text(errors="replace").splitlines()
        new = after.read_text(errors="replace").splitlines()
        diff = list(difflib.unified_diff(old, new, "before", "after", n=1, lineterm=""))
        lines = ["    " + line[:200] for line in diff[:30]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"))
    parser.add_argument("--targets", default="transformers,corpus,cases")
    parser.add_argument("--work")
    parser.add_argument("--json")
    args = parser.parse_args()

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="same-output-"))
    work.mkdir(parents=True, exist_ok=True)
    config = work / "noexclude.toml"
    config.write_text("exclude = []\n")
    common = ["-j", "2", "--config", str(config), "--exit-zero"]
    kinds = {"check-json": ["check", "--output-format", "json"], "fix-diff": ["fix", "--diff"]}

    results = {}
    all_same = True
    for target in args.targets.split(","):
        paths = target_paths(target, args.python)
        for kind, flags in kinds.items():
            outs = {}
            times = {}
            for side, binary in (("before", args.before), ("after", args.after)):
                outs[side] = work / f"{target}.{kind}.{side}"
                times[side] = run(binary, [*flags, *common, *paths], outs[side])
            same = all(outs["before"].with_suffix(outs["before"].suffix + s).read_bytes()
                       == outs["after"].with_suffix(outs["after"].suffix + s).read_bytes()
                       for s in ("", ".stderr"))
            all_same &= same
            size = outs["after"].stat().st_size
            results[f"{target}/{kind}"] = {"same": same, "bytes": size, "seconds": times}
            print(f"{target:13} {kind:10} {'same' if same else 'DIFFERENT'}  ({size} bytes; "
                  f"{times['before']:.1f}s before, {times['after']:.1f}s after)", flush=True)
            if not same:
                print(describe(outs["before"], outs["after"], kind == "check-json"))
                eb = outs["before"].with_suffix(outs["before"].suffix + ".stderr")
                ea = outs["after"].with_suffix(outs["after"].suffix + ".stderr")
                if eb.read_bytes() != ea.read_bytes():
                    print("    stderr differs:")
                    print(describe(eb, ea, False))
    print(f"outputs in {work}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
