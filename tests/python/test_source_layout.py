"""The source tree keeps the shape CONTRIBUTING.md's Layout describes (issue 29):

- no C++ file under src/ or include/ over 500 lines, and no function over 120 (measured with
  lizard), unless a comment says why: `Over 500 lines:` in the file's first 40 lines, or
  `Over 120 lines:` in the 3 lines above the function;
- no code outside src/rules/ names a rule code (GM101, ...): outside the rules, a code may
  appear only in a comment (C++ `//`, Python and CMake `#`).
"""
import re
from pathlib import Path

import lizard
import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 120
CODE = re.compile(r"\bGM[0-9]{3}\b")


def cpp_sources():
    return sorted(p for d in ("src", "include") for p in (REPO / d).rglob("*") if p.suffix in (".cpp", ".hpp"))


def test_no_file_over_500_lines_without_a_reason():
    long = []
    for path in cpp_sources():
        lines = path.read_text().splitlines()
        if len(lines) > MAX_FILE_LINES and not any("Over 500 lines:" in line for line in lines[:40]):
            long.append(f"{path.relative_to(REPO)}: {len(lines)} lines")
    assert not long, "files over 500 lines, with no reason at their top:\n" + "\n".join(long)


def test_no_function_over_120_lines_without_a_reason():
    long = []
    for path in cpp_sources():
        lines = path.read_text().splitlines()
        for fn in lizard.analyze_file(str(path)).function_list:
            length = fn.end_line - fn.start_line + 1
            above = lines[max(0, fn.start_line - 4) : fn.start_line - 1]
            if length > MAX_FUNCTION_LINES and not any("Over 120 lines:" in line for line in above):
                long.append(f"{path.relative_to(REPO)}:{fn.start_line}: {fn.name}, {length} lines")
    assert not long, "functions over 120 lines, with no reason above them:\n" + "\n".join(long)


def code_part(line: str, comment: str) -> str:
    """The line without its comment (a rough cut: a comment marker inside a string counts)."""
    at = line.find(comment)
    return line if at < 0 else line[:at]


def test_rule_codes_only_under_src_rules():
    named = []
    for path in sorted(p for d in ("src", "include") for p in (REPO / d).rglob("*") if p.is_file()):
        rel = path.relative_to(REPO)
        if rel.parts[:2] == ("src", "rules"):
            continue
        comment = {".cpp": "//", ".hpp": "//", ".py": "#", ".cmake": "#"}.get(path.suffix)
        if comment is None:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if CODE.search(code_part(line, comment)):
                named.append(f"{rel}:{number}: {line.strip()}")
    assert not named, "rule codes named outside src/rules/ (not in a comment):\n" + "\n".join(named)


@pytest.mark.parametrize("text, comment, named", [('x = "GM101"', "#", True), ("# GM101", "#", False),
                                                  ('f("GM201"); // GM201', "//", True), ("// GM4", "//", False)])
def test_rule_code_check_reads_comments(text, comment, named):
    assert bool(CODE.search(code_part(text, comment))) is named
