"""Markdown pieces that benchmarks/report.py and its sweep section (sweep_report) share.

    COMMANDS["sweep-pins.json"]     # the command that makes a results file
    load(results, name)             # its JSON, or None when it is missing
    missing(name)                   # the lines saying it is missing and how to make it
    fmt(value, digits), yes_no(value), left(row)   # a figure, a check, a row's breaks left
"""
from __future__ import annotations

import json
from pathlib import Path

COMMANDS = {
    "reference-pins.json": ".venv/bin/python benchmarks/graph_breaks.py --suite reference "
                           "--json docs/results/reference-pins.json",
    "reference-latest.json": "bash scripts/setup_latest.sh && .venv/bin/python benchmarks/graph_breaks.py "
                             "--suite reference --env latest --json docs/results/reference-latest.json",
    "latency-cpu.json": ".venv/bin/python benchmarks/latency.py --rows changed --reps 5 "
                        "--json docs/results/latency-cpu.json",
    "tool-speed.json": ".venv/bin/python benchmarks/tool_speed.py --json docs/results/tool-speed.json",
    "latency-moe-cpu.json": "GRAPHMEND_DISPATCH=static .venv/bin/python benchmarks/latency.py "
                            "--rows moe:e8-t1,moe:e16-t1,moe:e4-t8,moe:e8-t4,moe:e8-t16,moe:e8-t128 "
                            "--reps 3 --calls 20 --threads 1 --json docs/results/latency-moe-cpu.json",
    "sweep-pins.json": ".venv/bin/python benchmarks/sweep.py --env pins",
    "sweep-latest.json": "bash scripts/setup_latest.sh && .venv/bin/python benchmarks/sweep.py --env latest",
    "moe-gaps-pins.json": ".venv/bin/python benchmarks/moe_gaps.py --env pins",
    "sweep-moe-b1t8-pins.json": ".venv/bin/python benchmarks/sweep.py --rows moe --name moe-b1t8",
    "sweep-moe-b1t16-pins.json": ".venv/bin/python benchmarks/sweep.py --rows moe --tokens 16 --name moe-b1t16",
    "sweep-moe-b2t16-pins.json": ".venv/bin/python benchmarks/sweep.py --rows moe --batch 2 --tokens 16 "
                                 "--name moe-b2t16",
    "sweep-moe-grad-pins.json": ".venv/bin/python benchmarks/sweep.py --rows moe --grad --name moe-grad",
    "moe-gaps-latest.json": "bash scripts/setup_latest.sh && .venv/bin/python benchmarks/moe_gaps.py --env latest "
                            "--rows switch_transformers,nllb-moe --unsafe-fixes",
}


def load(results: Path, name: str):
    path = results / name
    if not path.exists():
        return None
    return json.loads(path.read_text())


def missing(name: str) -> list[str]:
    return [f"Not measured yet: `{name}` is missing. Make it with:", "", "```sh", COMMANDS[name], "```", ""]


def fmt(value, digits=2):
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def yes_no(value):
    return "–" if value is None else ("yes" if value else "**no**")


def left(row: dict) -> str:
    """A row's breaks left: "kind at `site` ×n; ..."."""
    parts = []
    for b in row.get("breaks_left") or []:
        if isinstance(b, dict):
            n = b.get("count", 1)
            parts.append(f"{b.get('kind', '?')} at `{b.get('site', '?')}`" + (f" ×{n}" if n != 1 else ""))
        else:
            parts.append(str(b))
    return "; ".join(parts)
