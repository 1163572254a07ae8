"""Parse the `# expect: KEY: VALUE` header lines of a case file.

parse(text) -> list[Expectation]. Only the file's leading comment block counts
(lines before the first line that is neither blank nor a comment), as in
tests/cases. KEY is lower-cased; VALUE is stripped (CRLF files are fine).
KNOWN_KEYS lists the keys tests/cases/README.md defines.
"""
from __future__ import annotations

import dataclasses
import re

KNOWN_KEYS = ("graphs-after", "outputs", "stdout", "stderr", "warnings", "logs",
              "raises", "untouched", "refused", "state", "gradients", "training")

_LINE = re.compile(r"^#\s*expect:\s*([A-Za-z][\w-]*)\s*:\s*(.*?)\s*$")


@dataclasses.dataclass(frozen=True)
class Expectation:
    key: str
    value: str
    lineno: int

    @property
    def text(self):
        return f"{self.key}: {self.value}"


def parse(text):
    """Expectations from the leading comment block of `text` (a str)."""
    found = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        match = _LINE.match(stripped)
        if match:
            found.append(Expectation(match.group(1).lower(), match.group(2), lineno))
    return found


def parse_raises(value):
    """'ValueError: message' -> ('ValueError', 'message')."""
    name, _, message = value.partition(":")
    return name.strip(), message.strip()
