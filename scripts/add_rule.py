#!/usr/bin/env python3
"""Make a new rule: scripts/add_rule.py CODE NAME (e.g. scripts/add_rule.py GM601 example-rule).

As clang-tidy's add_new_check.py does, it writes a rule that builds, runs and passes its golden
test, and touches no file but the new ones and one line of the registry:
- src/rules/<code>_<name>/rule.cpp: a working skeleton. It reports each call to a function named
  after the rule (`example_rule(...)`) in code that runs under torch.compile, refused, with a
  reason; its comments say what to replace;
- tests/fixtures/<name>/placeholder.py, with placeholder.expected.py and placeholder.report.txt:
  the golden test of that placeholder site (tests/unit/golden_test.cpp runs every fixture);
- docs/rules/<CODE>.md: the rule's page, to fill in (embedded in the binary: `graphmend rule`);
- one line `GRAPHMEND_RULE(CODE, name)` in src/rules/registry.def, in code order.

Nothing else names the rules one by one: CMake globs src/**/*.cpp and docs/rules/GM*.md, the
golden runner lists tests/fixtures/, and the tests take the codes from the registry
(tests/unit/registry_test.cpp checks the layout above). The tables of rules, README.md's short one
and docs/rules.md's, are written by hand once the rule does something (see the steps this script
prints).
tests/python/test_add_rule.py runs this script in a copy of the repository, builds the copy and
runs the new rule's golden test there, then every other unit and golden test.
"""
from __future__ import annotations

import argparse
import builtins
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = Path("src/rules/registry.def")
CODE_RE = re.compile(r"GM[1-9][0-9][0-9]")
NAME_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
LINE_RE = re.compile(r"GRAPHMEND_RULE\((GM[0-9]+), ([a-z0-9_]+)\)")
FIXTURE = "placeholder"
# The reason the skeleton gives for refusing its placeholder site, less the path of its rule.cpp.
REASON = "the placeholder site of the skeleton scripts/add_rule.py made: replace its matching in "
# Names the placeholder fixture binds or reads besides the rule's function.
FIXTURE_NAMES = {"torch", "Model", "forward", "self", "hidden_states", "out", "_not_compiled"}


class Refused(Exception):
    pass


def paths(code: str, name: str) -> dict[str, Path]:
    ident = name.replace("-", "_")
    fixtures = Path("tests/fixtures") / name
    return {
        "rule": Path("src/rules") / f"{code.lower()}_{ident}" / "rule.cpp",
        "input": fixtures / f"{FIXTURE}.py",
        "expected": fixtures / f"{FIXTURE}.expected.py",
        "report": fixtures / f"{FIXTURE}.report.txt",
        "page": Path("docs/rules") / f"{code}.md",
    }


def registered(root: Path) -> list[tuple[str, str]]:
    """(code, name) of each line of the registry, in its order."""
    out = []
    for line in (root / REGISTRY).read_text().splitlines():
        if m := LINE_RE.fullmatch(line.strip()):
            out.append((m[1], m[2].replace("_", "-")))
    return out


def validate(root: Path, code: str, name: str) -> None:
    if not CODE_RE.fullmatch(code):
        raise Refused(f"code {code!r}: a rule's code is GM, a digit 1-9 (the group) and two digits, e.g. GM601")
    if not NAME_RE.fullmatch(name):
        raise Refused(f"name {name!r}: a rule's name is kebab-case (lower-case words joined by '-'), "
                      "e.g. static-span-loop")
    ident = name.replace("-", "_")
    if keyword.iskeyword(ident) or ident in FIXTURE_NAMES or hasattr(builtins, ident):
        raise Refused(f"name {name!r}: the placeholder fixture calls a function `{ident}`, which would be a Python "
                      "keyword, a builtin or another name of the fixture; add a word")
    if name == "cases":
        raise Refused("name 'cases': tests/fixtures/cases/ holds the expectations of tests/cases/")
    for c, n in registered(root):
        if c == code:
            raise Refused(f"code {code} is already the rule {c} {n} (src/rules/registry.def)")
        if n == name:
            raise Refused(f"name {name} is already the rule {c} {n} (src/rules/registry.def)")
    rule_dirs = sorted((root / "src/rules").glob(f"{code.lower()}_*"))
    if rule_dirs:
        raise Refused(f"{rule_dirs[0].relative_to(root)} exists: code {code} is taken")
    for p in paths(code, name).values():
        taken = p.parent if p.parent.parts[:2] == ("tests", "fixtures") else p
        if (root / taken).exists():
            raise Refused(f"{taken} exists")


def pascal(name: str) -> str:
    return "".join(w.capitalize() for w in name.split("-"))


def rule_source(code: str, name: str) -> str:
    ident = name.replace("-", "_")
    folder = f"src/rules/{code.lower()}_{ident}"
    return f'''// Rule {code} {name}.
//
// What it does: TODO({code}): what the rule finds in code that runs under torch.compile, with an
// example of the code it matches, and what it emits for it. For now it is the skeleton that
// scripts/add_rule.py made: it reports each call `{ident}(...)`, refused.
//
// Why: TODO({code}): the graph break Dynamo makes there (its id, GBnnnn, and the torch version).
//
// Fix safety: TODO({code}): safe or unsafe, and why the emitted code behaves as the original,
// eagerly and under torch.compile. Refused, with the reason: TODO({code}).
//
// The rule's page is docs/rules/{code}.md, its golden fixtures tests/fixtures/{name}/. Helpers
// shared by the rules are in src/rules/support/ (site.hpp: new_site, for_each_in_scope,
// one_line, call_argument, keeping_lines; tensor_test.hpp, scalar_reads.hpp, ...). A helper
// only this rule needs goes in a file of this folder ({folder}/).
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "graphmend/rule.hpp"
#include "rules/support/site.hpp"

namespace graphmend::rules {{

using syntax::Node;

namespace {{

const RuleInfo kInfo{{.code = "{code}",
                     .name = "{name}",
                     .summary = "TODO({code}): what the rule removes, in one line"}};

// TODO({code}): the placeholder site. Replace it, and the matching in check() below, with what
// the rule finds.
constexpr std::string_view kPlaceholderFunction = "{ident}";

class {pascal(name)}Rule final : public Rule {{
public:
    [[nodiscard]] const RuleInfo& info() const override {{ return kInfo; }}

    void check(const Context& ctx, std::vector<Site>& out) const override {{
        // Every node of the functions that run under torch.compile (the compiled scope), each
        // with `def`, the function around it; return false to skip a node's children.
        for_each_in_scope(ctx, [&](const Node& n, const Node& /*def*/) {{
            if (!n.is("call") || n.field("function").text() != kPlaceholderFunction) return true;
            // TODO({code}): the Dynamo graph-break id the site causes ("GB0059"; empty: none).
            Site site = new_site(kInfo, n, one_line(n.text()), "");
            // A refused site says why, in words the user can act on. A fixed one has no reason
            // and a Fix instead: byte-range edits of the original text, and its applicability:
            //     site.fix = Fix{{{{{{n.begin(), n.end(), "replacement"}}}}, Applicability::Safe, {{}}}};
            // (Fix::runtime names the src/runtime/*.py blocks the emitted code calls.)
            site.reason = "{REASON}"
                          "{folder}/rule.cpp";
            out.push_back(std::move(site));
            return true;
        }});
    }}
}};

}}  // namespace

std::unique_ptr<Rule> make_{ident}_rule() {{ return std::make_unique<{pascal(name)}Rule>(); }}

}}  // namespace graphmend::rules
'''


def fixture_source(code: str, name: str) -> str:
    ident = name.replace("-", "_")
    return f'''# The placeholder fixture of {code} {name}, made by scripts/add_rule.py: the rule's skeleton
# reports each call `{ident}(...)` in code that runs under torch.compile, refused. Replace
# this file with fixtures of the rule's own sites, fixed and refused, and write their
# expectations with GRAPHMEND_UPDATE_GOLDEN=1 (then review them).
import torch


def {ident}(hidden_states):
    return hidden_states


class Model(torch.nn.Module):
    def forward(self, hidden_states):
        out = {ident}(hidden_states)
        return out + 1


def _not_compiled(hidden_states):
    return {ident}(hidden_states)  # no site: no compiled code calls this function
'''


def report_text(code: str, name: str, fixture: Path, source: str) -> str:
    """The report `graphmend fix` gives for the placeholder fixture (src/output/)."""
    ident = name.replace("-", "_")
    call = f"{ident}(hidden_states)"
    line_no = next(i for i, line in enumerate(source.splitlines(), 1) if f"out = {call}" in line)
    col = source.splitlines()[line_no - 1].index(call) + 1
    rule_dir = f"src/rules/{code.lower()}_{ident}"
    reason = f"{REASON}{rule_dir}/rule.cpp"
    return (f"{fixture}:{line_no}:{col}: {code} [refused] {call}: {reason}\n"
            f"{fixture}: 1 site found, 0 fixed, 1 refused\n")


def page_text(code: str, name: str) -> str:
    ident = name.replace("-", "_")
    return f'''# {code} {name}

## What it does
TODO: what the rule finds in code that runs under `torch.compile`, with an example of the code it
matches, and what it emits for it. For now it is the skeleton that `scripts/add_rule.py` made: it
reports each call `{ident}(...)`, refused.

## Why
TODO: the graph break Dynamo makes there: its id (GBnnnn), its message, the torch version
measured.

## Fix safety: TODO
TODO: safe or unsafe, and why the emitted code behaves as the original, eagerly and under
`torch.compile`.

## Refused, with the reason
- TODO: each form the rule finds but does not fix, and why.

## Measured
- **Fixture** (`tests/fixtures/{name}/`): TODO.
'''


def registry_with(text: str, code: str, name: str) -> str:
    """The registry with the rule's line added before the first rule of a higher code."""
    new = f"GRAPHMEND_RULE({code}, {name.replace('-', '_')})\n"
    lines = text.splitlines(keepends=True)
    rule_lines = [i for i, line in enumerate(lines) if LINE_RE.fullmatch(line.strip())]
    at = next((i for i in rule_lines if LINE_RE.fullmatch(lines[i].strip())[1] > code), None)
    if at is None:
        at = rule_lines[-1] + 1 if rule_lines else len(lines)
        if at == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
    lines.insert(at, new)
    return "".join(lines)


def add_rule(root: Path, code: str, name: str) -> list[Path]:
    validate(root, code, name)
    p = paths(code, name)
    source = fixture_source(code, name)
    files = {
        p["rule"]: rule_source(code, name),
        p["input"]: source,
        p["expected"]: source,  # a refused site leaves the text as it was
        p["report"]: report_text(code, name, p["input"], source),
        p["page"]: page_text(code, name),
    }
    registry = root / REGISTRY
    updated = registry_with(registry.read_text(), code, name)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        with open(root / rel, "x", newline="\n") as f:  # "x": never overwrite
            f.write(text)
    with open(registry, "w", newline="\n") as f:
        f.write(updated)
    return list(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/add_rule.py", description=__doc__.split("\n\n")[0],
        epilog="Example: scripts/add_rule.py GM601 example-rule")
    parser.add_argument("code", help="the rule's code, GM[1-9]NN, not yet used (e.g. GM601)")
    parser.add_argument("name", help="the rule's name, kebab-case, not yet used (e.g. example-rule)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        created = add_rule(root, args.code, args.name)
    except Refused as e:
        print(f"add_rule.py: {e}; nothing written", file=sys.stderr)
        return 2
    ident = args.name.replace("-", "_")
    print(f"Created {args.code} {args.name}:")
    for rel in created:
        print(f"  {rel}")
    print(f"and added GRAPHMEND_RULE({args.code}, {ident}) to {REGISTRY}.")
    print(f"""
Next:
  1. Build (CMake's globs find the new files; an existing build/ re-runs its configure step):
       cmake --build build -j2        (or scripts/setup.sh from scratch)
  2. Run its golden test, and the registry's and rule pages' checks:
       build/graphmend_tests --gtest_filter='Fixtures/Golden.*/tests_fixtures_{ident}_*:Registry.*:RulePages.*'
     or ctest --test-dir build -R 'tests_fixtures_{ident}_|Registry|RulePages'
  3. Make it a rule: replace the placeholder matching in {created[0]} (the TODOs), replace
     {created[1]} with fixtures of its sites, fixed and refused, and write their expectations:
       GRAPHMEND_UPDATE_GOLDEN=1 build/graphmend_tests --gtest_filter='Fixtures/Golden.*/tests_fixtures_{ident}_*'
     then review them (git diff) and run the whole suite: ctest --test-dir build.
  4. Fill in {created[-1]} (`build/graphmend rule {args.code}` prints it), and add the rule's rows
     to the tables of rules in README.md and docs/rules.md when it ships.""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
