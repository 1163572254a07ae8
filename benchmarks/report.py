#!/usr/bin/env python3
"""Render docs/RESULTS.md and its plots from the JSON results under docs/results/.

    .venv/bin/python benchmarks/report.py [--results docs/results] [--out docs/RESULTS.md]

Reads what is there (a missing file leaves its section saying how to make it):
  reference-pins.json     graph_breaks.py --suite reference --json ...           (torch/transformers pins)
  reference-latest.json   graph_breaks.py --suite reference --env latest --json ...
  latency-cpu.json        latency.py --json ...
  latency-moe-cpu.json    latency.py --rows moe --json ...   (GM501's static dispatch against the loop)
  tool-speed.json         tool_speed.py --json ...
  sweep-pins.json         sweep.py --env pins                                    (many architectures, pins)
  sweep-latest.json       sweep.py --env latest                                  (the same at the latest pins)
  moe-gaps-pins.json      moe_gaps.py --env pins        (the MoE rows over several inputs, against float64)
  moe-gaps-latest.json    moe_gaps.py --env latest ...  (the same at the latest pins)
  sweep-moe-{b1t8,b1t16,b2t16,grad}-pins.json
                          sweep.py --rows moe [--tokens 16 | --batch 2 --tokens 16 | --grad] --name ...
                          (the MoE rows at the sweep's input, at 1 x 16, 2 x 16, with autograd)
Writes docs/RESULTS.md and PNG plots beside it (docs/results/*.png, matplotlib, Agg backend).
Nothing is measured here: every figure comes from a JSON file, and the page names the
command that made it. Exit 0, or 2 when the results folder does not exist.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness.report_text import COMMANDS, fmt, load, missing, yes_no  # noqa: E402
from _harness.report_text import left as _left  # noqa: E402
from _harness.sweep_report import moe_gaps_section, moe_settings_section, sweep_section  # noqa: E402
from report_verify import verify_section  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


# --- reference rows ---------------------------------------------------------------------------


def reference_section(results: Path, plots: list) -> list[str]:
    pins = load(results, "reference-pins.json")
    latest = load(results, "reference-latest.json")
    out = ["## 1. Graph breaks on the reference rows", ""]
    out += [
        "Each row builds the transformers class of a row of the reference measurement",
        "([reference.md](reference.md) §2) from a small config with random weights. The row runs",
        "twice in fresh processes: once on the installed package, and once on a copy that",
        "`graphmend fix` rewrote, loading the first arm's `state_dict` strictly. Breaks are",
        "FX graphs − 1 under a counting backend (`dynamic=False`, one forward under `no_grad`).",
        "\"Dynamo\" is Dynamo's own `graph_break` counter. \"Outputs\" means bit-equal outputs",
        "(SHA-256 and `torch.equal`). \"Messages\" means the same stdout, stderr, warnings and log",
        "records, in the same order.",
        "",
    ]
    envs = [("pins", pins, "reference-pins.json"), ("latest", latest, "reference-latest.json")]
    for label, data, name in envs:
        if data is None:
            out += [f"### {label}", ""] + missing(name)
            continue
        env = data.get("environment", {})
        out += [f"### {label}: torch {env.get('torch')}, transformers {env.get('transformers')}, "
                f"Python {env.get('python')}", ""]
        out += ["| row | class | reference before → after | breaks before → after | "
                "Dynamo before → after | outputs | messages | breaks left (kind at site) |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in data["rows"]:
            ref = (f"{r.get('reference_before')} → {r.get('reference_after')}"
                   if r.get("reference_before") is not None else "–")
            if r.get("error") or r.get("breaks_before") is None:
                out.append(f"| {r['row']} | {r.get('model_class') or ''} | {ref} | not measured: "
                           f"{(r.get('error') or 'no result').splitlines()[0][:120]} | | | | |")
                continue
            extra = "" if r.get("in_totals", True) else " (not in totals)"
            if (r.get("calls") or 1) > 1:
                extra += (f"; new graphs on later calls {r.get('recompiles_before')} → "
                          f"{r.get('recompiles_after')}")
            out.append(
                f"| {r['row']} | {r.get('model_class') or ''} | {ref} | "
                f"{r['breaks_before']} → {r['breaks_after']}{extra} | "
                f"{r.get('dynamo_breaks_before')} → {r.get('dynamo_breaks_after')} | "
                f"{yes_no(r.get('outputs_identical'))} | {yes_no(r.get('messages_identical'))} | {_left(r)} |")
        out.append("")
        totals = data.get("totals", {})
        out += ["| totals | rows | breaks before → after | removed | reference before → after (same rows) | "
                "reference removed |", "| --- | --- | --- | --- | --- | --- |"]
        # ("all_rows" is left out: it also counts the extra variants, whose reference figures
        # are their base row's.)
        for key in ("float32", "float32_weighted_by_checkpoints", "float16"):
            t = totals.get(key)
            if not t:
                continue
            ref = (f"{t.get('reference_before')} → {t.get('reference_after')}"
                   if t.get("rows_with_reference") else "–")
            out.append(f"| {key.replace('_', ' ')} | {t.get('rows_measured')}/{t.get('rows')} | "
                       f"{t.get('breaks_before')} → {t.get('breaks_after')} | {fmt(t.get('removed_percent'), 1)} % | "
                       f"{ref} | {fmt(t.get('reference_removed_percent'), 1)} % |")
        out += ["", f"Made by `{COMMANDS[name]}`"
                + (f" in {data.get('seconds')} s" if data.get("seconds") else "")
                + f", graphmend at commit `{(data.get('graphmend') or {}).get('repo_commit', '?')[:10]}`.", ""]
        for again in data.get("remeasured", []):  # rows run again with `--rows` and a newer binary
            rg = again.get("graphmend") or {}
            out += [f"Rows {', '.join(f'`{r}`' for r in again['rows'])} were measured again on "
                    f"{again.get('started', '?')} with `--rows` and the binary sha256 "
                    f"`{(rg.get('sha256') or '?')[:12]}` (checkout at `{(rg.get('repo_commit') or '?')[:10]}`); "
                    "their rows and the totals above are those figures.", ""]
        # Row classes and configs, once (pins).
        if label == "pins":
            out += ["<details><summary>Classes and configs of the rows</summary>", ""]
            for r in data["rows"]:
                out.append(f"- **{r['row']}**: {r.get('description') or r.get('model_class')}"
                           + (f" ({r['note']})" if r.get("note") else ""))
            out += ["", "</details>", ""]
    out += ["Rows marked \"not in totals\" are extra variants. `phi3/float32/unsafe-fixes` is the Phi-3 row",
            "fixed with `--unsafe-fixes`: GM201 rewrites the longrope update (`modeling_rope_utils.py:50`),",
            "which rebinds a buffer under a data test, only as an unsafe fix (docs/rules/GM201.md).",
            "It is called twice; \"new graphs on later calls\" counts the graphs the second call made.", ""]
    if pins is not None:
        png = plot_reference(results, pins, latest)
        if png:
            plots.append(png)
            out += [f"![graph breaks per row, before and after](results/{png.name})", ""]
    return out


def grouped_bars(png: Path, groups: list, series: list, *, ylabel: str, title: str, figsize=None,
                 rotation=45, legend=None, baseline=None) -> Path:
    """One grouped bar chart written to `png`: `groups` label the x axis; each series is
    (label, values[, color][, (below, above) error bars]), one bar per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=figsize or (max(8, len(groups) * 0.9), 4.5))
    for i, (label, values, *extra) in enumerate(series):
        color = next((e for e in extra if isinstance(e, str)), None)
        errors = next((e for e in extra if isinstance(e, tuple)), None)
        ax.bar([x + i * width for x in range(len(groups))], values, width, label=label, color=color,
               yerr=list(errors) if errors else None, capsize=2 if errors else 0)
    if baseline is not None:
        ax.axhline(baseline, color="black", linewidth=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
    ax.set_xticklabels(groups, rotation=rotation, ha="right" if rotation else "center", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(**(legend or {"fontsize": 8}))
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def plot_reference(results: Path, pins: dict, latest: dict | None):
    rows = [r["row"] for r in pins["rows"]]

    def series(data, key):
        by_row = {r["row"]: r.get(key) for r in (data or {}).get("rows", [])}
        return [by_row.get(name) if by_row.get(name) is not None else 0 for name in rows]

    bars = [("reference before", [r.get("reference_before") or 0 for r in pins["rows"]], "#bbbbbb"),
            ("reference after", [r.get("reference_after") or 0 for r in pins["rows"]], "#777777"),
            ("pins before", series(pins, "breaks_before"), "#f4a582"),
            ("pins after", series(pins, "breaks_after"), "#ca0020")]
    if latest is not None:
        bars += [("latest before", series(latest, "breaks_before"), "#92c5de"),
                 ("latest after", series(latest, "breaks_after"), "#0571b0")]
    return grouped_bars(results / "reference-breaks.png", rows, bars, ylabel="graph breaks (FX graphs − 1)",
                        title="Graph breaks per reference row, before and after graphmend",
                        legend={"fontsize": 7, "ncol": 3})


# --- latency ----------------------------------------------------------------------------------


def latency_section(results: Path, plots: list) -> list[str]:
    data = load(results, "latency-cpu.json")
    out = ["## 2. Model latency (Inductor on CPU)", ""]
    if data is None:
        return out + missing("latency-cpu.json")
    out += latency_table(data)
    out += [f"Reproduce with `{COMMANDS['latency-cpu.json']}` (all rows: over two hours on 2 cores). This file "
            f"was made by a run from {data.get('started')} to {data.get('finished')} with the options recorded "
            "in its JSON (`command`, `reruns`).", ""]
    png = plot_latency(results, data)
    if png:
        plots.append(png)
        out += [f"![latency ratios original/fixed](results/{png.name})", ""]
    return out


def moe_latency_section(results: Path) -> list[str]:
    """The latency of GM501's static expert dispatch against the loop, both compiled, and the
    cost rule (src/runtime/static_dispatch.py's limit) the figures support."""
    data = load(results, "latency-moe-cpu.json")
    out = ["## 2a. MoE dispatch latency (GM501, Inductor on CPU)", ""]
    if data is None:
        return out + missing("latency-moe-cpu.json")
    out += ["Mixtral at a mid size (`benchmarks/_harness/moe_rows.py`: hidden 256, 2 layers, expert ffn 512, top-2),",
            "prefill (a batch of 128 tokens, `-t128`), decode (1 token, no cache, `-t1`) and 16 tokens, with 4, 8",
            "and 16 experts (`moe:eE-tT`). The fixed arm was run with `GRAPHMEND_DISPATCH="
            f"{data.get('graphmend_dispatch', 'auto')}`, so that it takes the static form in every row whatever the",
            "size limit says; the original arm breaks in every MoE block and runs it eagerly.", ""]
    out += latency_table(data)
    rows = {r.get("model"): r for r in data.get("rows", [])}

    def steady(name):
        r = rows.get(name) or {}
        return ((r.get("ratios") or {}).get("steady_s") or {}).get("median")

    work = []
    for name in rows:
        try:
            e, t = name.split(":")[1].split("-")
            experts, tokens = int(e[1:]), int(t[1:])
        except (IndexError, ValueError):
            continue
        ratio = steady(name)
        if ratio is not None:
            work.append((experts * 2 * tokens, name, ratio))
    work.sort()
    if work:
        out += ["Candidate rows the static form computes (experts × top-k × tokens) against the steady-state "
                "ratio (original / fixed; at least 1: the static form is no slower):", "",
                "| row | experts × top-k × tokens | steady-state ratio |", "| --- | --- | --- |"]
        out += [f"| {name} | {n} | {fmt(ratio, 2)} |" for n, name, ratio in work]
        out.append("")
    out += ["The cost rule these figures support, applied by `src/runtime/static_dispatch.py` (GM501's fixes "
            "take the static form only inside it): experts × candidate rows ≤ 64, and experts ≤ 4 × "
            "candidate rows per expert. Every row inside it is at least 1.0 in steady state, every row outside "
            "below; cold start is faster in every row, compile time up to 18 % slower inside the rule.", ""]
    out += [f"Reproduce with `{COMMANDS['latency-moe-cpu.json']}`. This file was made by a run from "
            f"{data.get('started')} to {data.get('finished')}.", ""]
    return out


def _stat(s: dict | None, digits=2) -> str:
    if not s:
        return "–"
    med = s.get("median")
    lo, hi = s.get("min"), s.get("max")
    if lo is None or hi is None:
        return fmt(med, digits)
    return f"{fmt(med, digits)} ({fmt(lo, digits)}–{fmt(hi, digits)})"


LATENCY_METRICS = [("compile_s", "compile time"), ("cold_start_s", "cold start"),
                   ("second_call_s", "second call"), ("steady_s", "steady state")]


def latency_table(data: dict) -> list[str]:
    out = [f"torch {data.get('torch')}, transformers {data.get('transformers')}, Python {data.get('python')}, "
           f"device {data.get('device')}, {data.get('threads')} thread(s); {data.get('reps')} repetitions, "
           f"{data.get('calls')} steady-state calls after {data.get('warmup')} warm-up calls; "
           f"mode {data.get('mode')}; caches: {data.get('caches')}.", ""]
    if data.get("definitions"):
        out += ["What each figure is:", ""]
        out += [f"- **{k}**: {v}" for k, v in data["definitions"].items()]
        out.append("")
    out += ["Ratios are original / fixed, per repetition: median over the repetitions, with the min and max in "
            "brackets. Above 1 means the fixed model is faster.", "",
            "| row | graphs original → fixed | " + " | ".join(f"{label} ratio" for _, label in LATENCY_METRICS)
            + " | steady state original / fixed (ms) | outputs |",
            "| --- | --- | " + " | ".join("---" for _ in LATENCY_METRICS) + " | --- | --- |"]
    for r in data.get("rows", []):
        ratios = r.get("ratios") or {}
        if not any(ratios.values()):
            why = "; ".join(str(e).splitlines()[0][:140] for e in (r.get("errors") or [])[:1]) or "no repetition ran"
            if r.get("reps_ok_fixed") == 0 and r.get("reps_ok_original"):
                why = f"the fixed arm failed in every repetition ({why})"
            out.append(f"| {r.get('model')} | {r.get('graphs_original') or '–'} → {r.get('graphs_fixed') or '–'} | "
                       f"not measured: {why} |" + " |" * (len(LATENCY_METRICS) + 1))
            continue
        steady_o = ((r.get("original") or {}).get("steady_s") or {}).get("median")
        steady_f = ((r.get("fixed") or {}).get("steady_s") or {}).get("median")
        outputs = ("bit-equal" if r.get("outputs_bit_equal")
                   else f"within tolerance (max abs diff {r.get('outputs_max_abs_diff'):.1e})"
                   if r.get("outputs_within_tolerance") else "**differ**")
        out.append(f"| {r.get('model')} | {r.get('graphs_original')} → {r.get('graphs_fixed')} | "
                   + " | ".join(_stat(ratios.get(k)) for k, _ in LATENCY_METRICS)
                   + f" | {fmt(steady_o * 1e3 if steady_o else None, 3)} / {fmt(steady_f * 1e3 if steady_f else None, 3)}"
                   f" | {outputs} |")
    out.append("")
    summary = data.get("summary") or {}
    if summary:
        out += ["Geometric mean of the rows' median ratios: "
                + ", ".join(f"{label} {fmt((summary.get(k) or {}).get('geomean_of_median_ratios'))}"
                            for k, label in LATENCY_METRICS)
                + f" (over {max((v.get('rows') or 0) for v in summary.values())} rows).", ""]
    not_started = sorted(data.get("rows_not_started") or [])
    left = sorted(set(data.get("rows_left_out") or []) - set(not_started))
    if left:
        out += [f"Rows not requested in this run (`--rows changed` leaves out the rows whose breaks the default fixes do not change): {', '.join(left)}.", ""]
    if not_started:
        out += [f"Rows requested but not started within the run's time limit: {', '.join(not_started)}.", ""]
    if data.get("notes"):
        out += [f"Notes: {data['notes']}", ""]
    return out


def plot_latency(results: Path, data: dict):
    rows = [r for r in data.get("rows", []) if any((r.get("ratios") or {}).values())]
    if not rows:
        return None
    bars = []
    for key, label in LATENCY_METRICS:
        med, lo, hi = [], [], []
        for r in rows:
            s = r["ratios"].get(key) or {}
            m = s.get("median") or 0
            med.append(m)
            lo.append(max(0, m - (s.get("min") if s.get("min") is not None else m)))
            hi.append(max(0, (s.get("max") if s.get("max") is not None else m) - m))
        bars.append((label, med, (lo, hi)))
    return grouped_bars(results / "latency-cpu.png", [r.get("model") for r in rows], bars,
                        ylabel="original / fixed (>1: fixed is faster)", rotation=30, baseline=1.0,
                        title="Inductor on CPU: latency ratios, median and range over repetitions")


# --- tool speed -------------------------------------------------------------------------------


def tool_speed_section(results: Path, plots: list) -> list[str]:
    data = load(results, "tool-speed.json")
    out = ["## 3. Tool speed", ""]
    if data is None:
        return out + missing("tool-speed.json")
    pkg = data.get("package", {})
    gm = data.get("graphmend", {})
    machine = data.get("machine", {})
    totals = gm.get("check_totals") or {}
    # A check's report: `fixable` and `fixable-when` since schema 2; schema 1 said `fixed` there.
    fixable = (totals["fixable"] + totals.get("fixable-when", 0) if "fixable" in totals else totals.get("fixed"))
    out += [f"Corpus: every .py file of the installed {pkg.get('name')} {pkg.get('version')} package: "
            f"{pkg.get('files')} files, {fmt(pkg.get('mb'), 1)} MB. {gm.get('version') or 'graphmend'} "
            f"({gm.get('build_type')} build) reported {totals.get('sites')} sites there "
            f"({fixable} fixable, {totals.get('refused')} refused). LibCST {data.get('libcst_version')}. "
            f"{data.get('reps')} interleaved repetitions on {machine.get('cpus')} CPUs, "
            f"Python {machine.get('python')}; load average {_load(machine.get('loadavg_start'))} at the start, "
            f"{_load(machine.get('loadavg_end'))} at the end.", ""]
    out += [f"- **{k}**: {v}" for k, v in (data.get("arms") or {}).items()] + [""]
    out += ["| arm | threads | processes | wall s, median (min–max) | files/s | MB/s | CPU s | peak RSS MB |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for m in data.get("results", []):
        out.append(f"| {m.get('arm')} | {m.get('threads')} | {m.get('processes')} | {_stat(m.get('wall_s'))} | "
                   f"{fmt((m.get('files_per_s') or {}).get('median'), 1)} | "
                   f"{fmt((m.get('mb_per_s') or {}).get('median'), 2)} | "
                   f"{fmt((m.get('cpu_s') or {}).get('median'))} | {fmt((m.get('peak_rss_mb') or {}).get('median'), 1)} |")
    out += ["", "Ratios of graphmend to the others, median of the per-repetition ratios (min–max). Speed: the other's "
            "wall time / graphmend's (above 1: graphmend is faster). CPU: the other's CPU time / graphmend's. "
            "Peak RSS: graphmend's / the other's (above 1: graphmend uses more memory).", "",
            "| threads | graphmend vs | speed | CPU | peak RSS |", "| --- | --- | --- | --- | --- |"]
    for r in data.get("ratios", []):
        def per(key):
            v = r.get(key) or {}
            return _stat(v.get("per_rep") or {"median": v.get("median")})
        out.append(f"| {r.get('threads')} | {r.get('other')} | {per('speed')} | {per('cpu_efficiency')} | "
                   f"{per('peak_rss')} |")
    out.append("")
    if data.get("scaling"):
        out += ["Throughput with 2 threads (or 2 worker processes) over 1: "
                + ", ".join(f"{arm} {fmt(v.get('2'))}" for arm, v in data["scaling"].items()) + ".", ""]
    if data.get("notes"):
        out += [f"Notes: {data['notes']}", ""]
    out += [f"Reproduce with `{COMMANDS['tool-speed.json']}`. This file was made on {data.get('created')} with "
            f"the binary {gm.get('binary')} and the options recorded in its JSON (`command`).", ""]
    png = plot_tool_speed(results, data)
    if png:
        plots.append(png)
        out += [f"![files per second by arm and threads](results/{png.name})", ""]
    return out


def _load(values) -> str:
    return " / ".join(f"{v:.1f}" for v in values) if values else "–"


def plot_tool_speed(results: Path, data: dict):
    rows = data.get("results", [])
    if not rows:
        return None
    arms = list(dict.fromkeys(m.get("arm") for m in rows))
    bars = []
    for t in sorted({m.get("threads") for m in rows}):
        vals = []
        for arm in arms:
            m = next((x for x in rows if x.get("arm") == arm and x.get("threads") == t), None)
            vals.append(((m or {}).get("files_per_s") or {}).get("median") or 0)
        bars.append((f"{t} thread(s) / process(es)", vals))
    return grouped_bars(results / "tool-speed.png", arms, bars, ylabel="files per second (median)",
                        figsize=(7, 4), rotation=0,
                        title=f"{(data.get('package') or {}).get('files')} files of transformers: graphmend check, "
                              "ast.parse, LibCST round trip")


def corpus_section(results: Path) -> list[str]:
    """Section 5: benchmarks/corpus.py over a whole site-packages and stdlib (issue 12)."""
    out = ["## 5. Every file of a Python installation (corpus)", ""]
    path = results / "corpus.json"
    if not path.exists():
        return out + ["Not measured yet: `.venv/bin/python benchmarks/corpus.py`.", ""]
    d = json.loads(path.read_text())
    r1, r2 = d["graphmend"]["run1"], d["graphmend"]["run2"]
    out += [f"`benchmarks/corpus.py` over {d['files']:,} `.py` files (Python {d['python']}: "
            f"{', '.join(f'`{v}`' for v in d['roots'].values())}), fixed in one batch by `{d['graphmend']['binary']}`.", "",
            "| check | result |", "| --- | --- |",
            f"| crashes (batch or file) | {len(d['crashes']) if d['crashed'] else 0} |",
            f"| sites found / fixed | {d['sites']} / {d['sites_fixed']}"
            + (f" ({d['sites_fixed_when']} of them fixed-when) |" if d.get("sites_fixed_when") else " |"),
            f"| files rewritten | {d['rewritten']} |",
            f"| rewritten files CPython does not compile | {len(d['rewritten_not_compiling'])} |",
            f"| files not rewritten that changed | {len(d['untouched_changed'])} |",
            f"| files the second run changed | {len(d['second_run_changed'])} |",
            f"| internal errors (rewrite reverted) | {len(d['internal_errors'])} |",
            f"| files CPython compiles that graphmend refuses as a syntax error | {len(d['valid_refused'])} |",
            f"| files CPython rejects (Python 2 test data, 3.12 syntax, bad encodings) | {d['cpython_rejects']} |",
            f"| run 1: wall time, peak RSS | {r1['wall_s']} s, {r1['peak_rss_mib']:,} MiB |",
            f"| run 2: wall time, peak RSS | {r2['wall_s']} s, {r2['peak_rss_mib']:,} MiB |", ""]
    if d["valid_refused"]:
        out += ["Valid files refused:", ""] + [f"- `{k}`: {v}" for k, v in sorted(d["valid_refused"].items())] + [""]
    out += ["The run holds the parse trees of the files its analysis reads (the compiled scope and what it names), "
            "not of every file, and the texts of the files it rewrites or reports on; every other file costs its "
            "index of names and words (docs/measuring.md, \"Memory\").", ""]
    scaling = results / "depth-scaling.json"
    if scaling.exists():
        sd = json.loads(scaling.read_text())
        out += ["`benchmarks/depth_scaling.py`: `graphmend check` time against a method chain's length, a "
                f"nesting depth and the number of sites in one function (best of {sd['repeat']}, start-up included; flat or falling seconds per 1,000 "
                "mean linear growth).", "", "| series | n | seconds | seconds per 1,000 |", "| --- | --- | --- | --- |"]
        for name, rows in sd["series"].items():
            out += [f"| {name} | {r['n']} | {r['seconds']} | {r['seconds_per_1000']} |" for r in rows]
        out.append("")
    return out


def render(results: Path) -> str:
    plots: list = []
    lines = ["# graphmend: measured results", "",
             "Generated by `benchmarks/report.py` from the JSON under `docs/results/`; do not edit by hand.",
             "Every figure was measured on the machine named with it. Rerun a command to remake its JSON,",
             "then `.venv/bin/python benchmarks/report.py` to remake this page.", ""]
    lines += reference_section(results, plots)
    lines += latency_section(results, plots)
    lines += moe_latency_section(results)
    lines += tool_speed_section(results, plots)
    lines += sweep_section(results)
    lines += moe_gaps_section(results)
    lines += moe_settings_section(results)
    lines += corpus_section(results)
    lines += verify_section(results)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default=str(REPO / "docs" / "results"))
    p.add_argument("--out", default=str(REPO / "docs" / "RESULTS.md"))
    args = p.parse_args(argv)
    results = Path(args.results)
    if not results.is_dir():
        print(f"error: no results folder {results}", file=sys.stderr)
        return 2
    Path(args.out).write_text(render(results))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
