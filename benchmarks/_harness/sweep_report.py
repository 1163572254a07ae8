"""Section 4 of docs/RESULTS.md: the sweep at the pins and, once measured, at the latest pins.

    sweep_section(results)        # markdown lines from results/sweep-pins.json (and sweep-latest.json)
    measured(rows)                # the rows the totals count: measured, no compiled forward raised
    breaks_left_by_kind(rows)     # [{kind, count, models {arch: n}, sites {site: n}}], largest count first
    moe_breaks(rows)              # the MoE rows' breaks: {rows, breaks_before, breaks_after, models}
    moe_gaps_section(results)     # section 4a, from results/moe-gaps-pins.json (and -latest)
    moe_settings_section(results) # section 4b, from results/sweep-moe-{b1t8,b1t16,b2t16,grad}-pins.json
    conditions(row)               # a row's fixed-when sites: [{site, rule, what, condition}]

Nothing is measured here; every figure comes from the JSON that benchmarks/sweep.py wrote.
"""
from __future__ import annotations

import re
from pathlib import Path

from .models import SEQ
from .report_text import COMMANDS, fmt, left, load, missing, yes_no
from .sweep import MOE

INTRO = [
    "Each row is one transformers architecture, its `AutoConfig` shrunk to hidden 64, 2 layers,",
    "2 heads, ffn 128, vocab 128 (MoE: 4 experts, 2 per token; plus the overrides named in",
    "`benchmarks/_harness/sweep.py`), random weights, float32, measured as the reference rows are",
    "(section 1). **Flags** name what the fix made worse: more breaks (FX graphs − 1, or Dynamo's",
    "counter), outputs or messages that differ, or a row that could not be measured. An architecture",
    "that a transformers version lacks, or no longer builds from its config, is \"not available\".",
    "**Outputs** are compared bit for bit (both arms run the captured FX graphs as traced); where they",
    "are not bit-equal, \"within gap\" says the largest difference from the original (fixed gap) is",
    "no larger than the original compiled with Inductor differs from its own eager run (eager gap,",
    "`benchmarks/_harness/eager_gap.py`), the tolerance issue 11 sets. Where the fixed gap is the",
    "larger, \"as accurate\" says the fixed model is no further from a float64 run of the original than",
    "the original is, eager or compiled: its root-mean-square error against that run is no larger",
    "than the larger of the original's two (the measure of section 4a), and its outputs that are not",
    "floating tensors are equal; \"no\" is flagged.",
    "",
]


def measured(rows):
    return [r for r in rows if r.get("breaks_before") is not None
            and not r.get("exception_before") and not r.get("exception_after")]


def _architecture(r):
    return r.get("architecture") or r["row"].split("/")[0]


def breaks_left_by_kind(rows):
    """The breaks left in the measured rows, grouped by kind: count (Dynamo's break records), and
    per architecture and per site how many; the kind with the most records first."""
    kinds = {}
    for r in measured(rows):
        for b in r.get("breaks_left") or []:
            n = b.get("count", 1)
            k = kinds.setdefault(b.get("kind", "?"), {"kind": b.get("kind", "?"), "count": 0,
                                                      "models": {}, "sites": {}})
            k["count"] += n
            k["models"][_architecture(r)] = k["models"].get(_architecture(r), 0) + n
            k["sites"][b.get("site", "?")] = k["sites"].get(b.get("site", "?"), 0) + n
    return sorted(kinds.values(), key=lambda k: (-k["count"], k["kind"]))


def moe_breaks(rows):
    """Breaks before and after over the measured rows of the MoE architectures (sweep.MOE)."""
    moe = [r for r in measured(rows) if _architecture(r) in MOE]
    return {"rows": len(moe), "breaks_before": sum(r["breaks_before"] for r in moe),
            "breaks_after": sum(r["breaks_after"] for r in moe),
            "models": {_architecture(r): (r["breaks_before"], r["breaks_after"]) for r in moe}}


def _counts(counts, code=False):
    return ", ".join((f"`{k}`" if code else k) + (f" ×{n}" if n != 1 else "")
                     for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _row_line(r):
    arch, cls = _architecture(r), r.get("model_class") or ""
    flags = ", ".join(f"**{f}**" for f in r.get("flags") or [])
    if r.get("breaks_before") is None:
        why = r.get("error") or "no result"
        why = why if r.get("not_available") else f"not measured: {why.splitlines()[0][:120]}"
        return f"| {arch} | {cls} | {why} | | | | {flags} | |"
    return (f"| {arch} | {cls} | {r['breaks_before']} → {r['breaks_after']} | "
            f"{r.get('dynamo_breaks_before')} → {r.get('dynamo_breaks_after')} | "
            f"{_outputs(r)} | {yes_no(r.get('messages_identical'))} | {flags} | {left(r)} |")


def _outputs(r, identical=yes_no(True), neither=yes_no(False)):
    """yes (bit-identical), "within gap" (the original compiled with Inductor is further from its eager
    run than the fixed model from the original), "as accurate" (against float64), or no; section 4b
    says "identical" and "**past both**" for yes and no."""
    if r.get("outputs_identical"):
        return identical
    if r.get("outputs_within_eager_gap"):
        return f"within gap ({r.get('fixed_gap'):.2g} ≤ {r.get('eager_gap'):.2g})"
    if r.get("outputs_as_accurate"):
        e = r["float64_rms_error"]
        return (f"as accurate (gap {r.get('fixed_gap'):.2g} > {r.get('eager_gap'):.2g}; RMS error vs float64 "
                f"{e['error_fixed']:.3g} ≤ {max(e['error_eager'], e['error_inductor']):.3g})")
    return neither


def _more_outputs(t):
    """ (and N more within the gap, and M more as accurate against float64), or nothing."""
    more = [f"{t[key]} more {words}" for key, words in (
        ("outputs_within_eager_gap", "within the original's compiled-vs-eager gap"),
        ("outputs_as_accurate", "as accurate as the original against float64")) if t.get(key)]
    return f" (and {', and '.join(more)})" if more else ""


def _totals(data):
    rows, t = data["rows"], (data.get("totals") or {}).get("float32") or {}
    absent = [_architecture(r) for r in rows if r.get("not_available")]
    n = t.get("rows_measured")
    lines = [f"Totals: {n}/{t.get('rows')} rows measured"
             + (f" ({len(absent)} not available at this version: {', '.join(absent)})" if absent else "")
             + f", breaks {t.get('breaks_before')} → {t.get('breaks_after')} ({fmt(t.get('removed_percent'), 1)} % "
             f"removed), Dynamo's counter {t.get('dynamo_breaks_before')} → {t.get('dynamo_breaks_after')}, "
             f"outputs identical {t.get('outputs_identical')}/{n}"
             + _more_outputs(t) + ", "
             f"messages identical {t.get('messages_identical')}/{n}.", ""]
    moe = moe_breaks(rows)
    if moe["rows"]:
        lines += [f"MoE models ({moe['rows']} measured): breaks {moe['breaks_before']} → {moe['breaks_after']}; "
                  + ", ".join(f"{a} {b} → {c}" for a, (b, c) in moe["models"].items()) + ".", ""]
    return lines


def _kinds_table(rows):
    groups = breaks_left_by_kind(rows)
    if not groups:
        return ["No break is left in the rows measured.", ""]
    out = ["Breaks left, grouped by kind (count: Dynamo's break records in the rows measured, as in the",
           "last column above):", "", "| kind | count | models | sites |", "| --- | --- | --- | --- |"]
    out += [f"| {g['kind']} | {g['count']} | {_counts(g['models'])} | {_counts(g['sites'], code=True)} |"
            for g in groups]
    return out + [""]


def _flagged(rows):
    flagged = [r for r in rows if r.get("flags")]
    if not flagged:
        return []
    out = ["Flagged rows, with the graphs only the fixed arm made (first .. last user-code line, and the",
           "frames that led there inside the compiled frame):", ""]
    for r in flagged:
        extra = "; ".join(f"`{g}`" for g in r.get("graphs_only_after") or []) or "none"
        out.append(f"- **{r['row']}** ({', '.join(r['flags'])}): new graphs {extra}")
    return out + [""]


def env_section(label, data, name):
    env = data.get("environment", {})
    out = [f"### {label}: torch {env.get('torch')}, transformers {env.get('transformers')}, "
           f"Python {env.get('python')}", "",
           "| architecture | class | breaks before → after | Dynamo before → after | outputs | messages | "
           "flags | breaks left (kind at site) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    out += [_row_line(r) for r in data["rows"]] + [""]
    out += _totals(data) + _kinds_table(data["rows"]) + _flagged(data["rows"])
    gm = data.get("graphmend") or {}
    made = f"Made by `{data['command']}`" if data.get("command") else "Made"  # older files lack it
    out += [made + (f" in {data.get('seconds')} s" if data.get("seconds") else "")
            + f", with the graphmend binary `{gm.get('source', '?')}` (sha256 `{(gm.get('sha256') or '?')[:12]}`, "
            f"built {gm.get('modified', '?')}) while this checkout was at `{(gm.get('repo_commit') or '?')[:10]}`"
            + ("" if data.get("command") else f"; remake it with `{COMMANDS[name]}`") + ".", ""]
    for again in data.get("remeasured", []):  # rows run again with `--rows` and a newer binary
        rg = again.get("graphmend") or {}
        out += [f"Rows {', '.join(f'`{r}`' for r in again['rows'])} were measured again on {again.get('started', '?')} "
                f"with `sweep.py --rows` and the binary sha256 `{(rg.get('sha256') or '?')[:12]}` (checkout at "
                f"`{(rg.get('repo_commit') or '?')[:10]}`); their rows and the totals above are those figures.", ""]
    return out


def sweep_section(results: Path) -> list[str]:
    """The section: pins (or how to make it), then latest when its JSON exists."""
    pins, latest = load(results, "sweep-pins.json"), load(results, "sweep-latest.json")
    out = ["## 4. Graph breaks across architectures (sweep)", ""]
    if pins is None and latest is None:
        return out + missing("sweep-pins.json")
    out += INTRO
    out += env_section("pins", pins, "sweep-pins.json") if pins else ["### pins", ""] + missing("sweep-pins.json")
    return out + (env_section("latest", latest, "sweep-latest.json") if latest else [])


GAPS_INTRO = [
    "GM501's static forms run each expert's matrix products on more rows than the loop does. On CPU",
    "the BLAS picks another kernel for another number of rows, so a row can change in its last bits:",
    "no static form can be bit-equal to the loop everywhere. The sweep compares such rows, on its one",
    "input, with the gap between the original compiled with Inductor and its eager run (and, past it,",
    "with a float64 run of the original on that input). Here the same",
    "rows run on several inputs (input 0 is the sweep's; input k is drawn after `torch.manual_seed(k)`),",
    "each arm in a fresh process, and every float32 run is also compared with the original run in",
    "float64, eagerly: the reference that says which run is closer to the exact result.",
    "Columns: the FX graphs of the original and the fixed model on input 0 (where they are as many,",
    "no static form was taken, and the row says nothing about one); the largest absolute difference",
    "from the original's eager float32 run, over the inputs,",
    "of the original compiled with Inductor (the tolerance), of the fixed model as the sweep runs it",
    "(each FX graph as traced), and of the fixed model compiled with Inductor (what users run); on how",
    "many inputs the fixed model is within the tolerance of that same input (bit-equal in brackets); of",
    "the inputs past it, on how many the fixed model (traced) is as accurate as the sweep asks (its",
    "root-mean-square error against float64 no larger than the eager or the compiled original's) and",
    "which inputs pass neither test; and the largest root-mean-square error against the float64 run, of",
    "the eager original, the compiled original and the fixed model as traced and under Inductor.",
    "",
]


def _past_the_gap(r):
    """(as accurate, [neither]): of the inputs where the fixed model (traced) is past the original's
    compiled-vs-eager gap, how many are as accurate against float64 as the sweep asks, and which
    inputs pass neither test (no float64 run: neither)."""
    accurate, neither = 0, []
    for p in r.get("per_input") or []:
        d, e = p["diff_from_eager"], p.get("error_vs_float64") or {}
        if d["fixed_traced"] <= d["original_inductor"]:
            continue
        if None not in (e.get("fixed_traced"), e.get("eager"), e.get("original_inductor")) and \
                e["fixed_traced"] <= max(e["eager"], e["original_inductor"]):
            accurate += 1
        else:
            neither.append(p["input"])
    return accurate, neither


def _gaps_table(data):
    n = data.get("inputs")
    out = ["| row | graphs | original Inductor | fixed (traced) | fixed (Inductor) | inputs within (bit-equal) | "
           "past it: as accurate / neither | "
           "RMS error vs float64: eager | original Inductor | fixed (traced) | fixed (Inductor) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in data["rows"]:
        s = r["summary"]
        d, e = s["max_diff_from_eager"], s["max_error_vs_float64"]
        accurate, neither = _past_the_gap(r)
        g = lambda v: "–" if v is None else f"{v:.3g}"  # noqa: E731
        graphs = s.get("graphs") or {}
        graphs = (f"{graphs.get('original')} → {graphs.get('fixed')}" if graphs.get("original") is not None
                  else "–")  # older files lack it
        out.append(f"| {r['row']} | {graphs} | {g(d['original_inductor'])} | {g(d['fixed_traced'])} | "
                   f"{g(d['fixed_inductor'])} | {s['inputs_fixed_within_gap']}/{n} ({s['inputs_fixed_bit_equal']}) | "
                   f"{accurate} / {', '.join(f'input {i}' for i in neither) or 'none'} | "
                   f"{g(e['eager'])} | {g(e['original_inductor'])} | {g(e['fixed_traced'])} | "
                   f"{g(e['fixed_inductor'])} |")
    out.append("")
    for r in data["rows"]:
        if r.get("float64_error"):
            out.append(f"- {r['row']}: no float64 reference, the original does not run in float64 "
                       f"(`{r['float64_error']}`).")
    return out + ([""] if out[-1] != "" else [])


def moe_gaps_section(results: Path) -> list[str]:
    """Section 4a: the MoE rows over several inputs, against float64 (moe_gaps.py)."""
    out = ["## 4a. MoE outputs over several inputs, against float64", ""]
    pins, latest = load(results, "moe-gaps-pins.json"), load(results, "moe-gaps-latest.json")
    if pins is None and latest is None:
        return out + missing("moe-gaps-pins.json")
    out += GAPS_INTRO
    for label, data, name in (("pins", pins, "moe-gaps-pins.json"), ("latest", latest, "moe-gaps-latest.json")):
        if data is None:
            out += [f"### {label}", ""] + missing(name)
            continue
        env, gm = data.get("environment", {}), data.get("graphmend") or {}
        out += [f"### {label}: torch {env.get('torch')}, transformers {env.get('transformers')}", ""]
        out += _gaps_table(data)
        out += [f"Made by `{COMMANDS[name]}` in {data.get('seconds')} s, {data.get('inputs')} inputs per row, "
                f"the copy fixed {'with' if data.get('unsafe_fixes') else 'without'} `--unsafe-fixes`, with the "
                f"binary sha256 `{(gm.get('sha256') or '?')[:12]}` (checkout at `{(gm.get('repo_commit') or '?')[:10]}`).",
                ""]
    return out


# Section 4b: the sweep's MoE rows at three settings (sweep.py --rows moe --name ...), in this order.
MOE_SETTINGS = ("sweep-moe-b1t8-pins.json", "sweep-moe-b1t16-pins.json", "sweep-moe-b2t16-pins.json",
                "sweep-moe-grad-pins.json")

SETTINGS_INTRO = [
    "GM501 takes its static form only inside a cost rule (section 2a: experts × candidate rows ≤ 64, at",
    "most 4 experts per candidate row of one expert, and no autograd), and `graphmend fix` says so: such",
    "a site is `fixed-when`, with the condition under which its break goes. The candidate rows of an",
    "expert are top-k × tokens where the loop takes `torch.where` of an expert's (top-k, tokens) mask",
    "(4 experts, top-2: 4 × 16 = 64 at 8 tokens), and one per token where the mask has a row per",
    "token (Switch Transformers and NLLB-MoE: 4 × 8 at 8 tokens). Here the sweep's MoE rows run at",
    "four settings, each measured as section 4 measures a row, all four by one binary: the sweep's",
    "input (batch 1 × 8 tokens), inside the rule; 1 × 16 tokens, where the rule splits the rows: 4 ×",
    "16 = 64 for the masks with a row per token (inside), 4 × 32 for the top-2 masks (outside); batch",
    "2 × 16, outside it for every row (4 × 64, or 4 × 32), so that the loop runs as written; and the",
    "sweep's input with autograd enabled (the forward only, in eval mode: `--grad`), where the rule",
    "does not hold either. Where the static form is taken, each expert's products run on all its",
    "candidate rows, which can change a row's last bits (section 4a); where it is not, the fixed code",
    "runs the loop as written. Outputs are held to the original's own gaps at the same setting:",
    "\"identical\" (bit for bit), \"within gap\" (no further from the original than the original",
    "compiled with Inductor is from its eager run), \"as accurate\" (past that gap, no further from a",
    "float64 run of the original than the original is) or **past both**.",
    "",
]


def _setting_label(data):
    """"1 × 8", "2 × 16", "1 × 8, autograd" from a run's "setting" (older files: the sweep's input)."""
    s = data.get("setting") or {}
    batch, tokens = s.get("batch") or SEQ[0], s.get("tokens") or SEQ[1]
    return f"{batch} × {tokens}" + (", autograd" if s.get("grad") else "")


def _outputs_word(r):
    """identical, within gap, as accurate, **past both** (section 4's words), or – (not measured)."""
    return "–" if r.get("breaks_before") is None else _outputs(r, "identical", "**past both**")


def _breaks(r):
    if r is None:
        return "not run"
    if r.get("breaks_before") is None:
        why = r.get("error") or "no result"
        return why if r.get("not_available") else f"not measured: {why.splitlines()[0][:80]}"
    return f"{r['breaks_before']} → {r['breaks_after']}"


_FIXED_WHEN = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):\d+: (?P<rule>GM\d+) \[fixed-when\] (?P<what>.*?): "
                         r"removes graph break \S+ only when: (?P<condition>.*?) \([a-z]+(?:-[a-z]+)+:")


def conditions(row):
    """The fixed-when sites of a row's model (graphmend's report lines on the modeling files of its
    folder; the modular_*.py sources transformers generates them from never run): [{site, rule, what,
    condition}] in report order."""
    out = []
    for line in ((row.get("graphmend") or {}).get("model_folder_report") or []):
        m = _FIXED_WHEN.match(line)
        if m and Path(m["path"]).name.startswith("modeling_"):
            out.append({"site": f"{Path(m['path']).name}:{m['line']}", "rule": m["rule"], "what": m["what"],
                        "condition": m["condition"]})
    return out


def _past_both(label, r):
    e = r.get("float64_rms_error") or {}
    if e:
        errors = (f"RMS error against float64 {e.get('error_fixed'):.3g}, the original's {e.get('error_eager'):.3g} "
                  f"eager and {e.get('error_inductor'):.3g} compiled")
    else:
        errors = f"no float64 run ({r.get('float64_unavailable') or 'not measured'})"
    return (f"- **{_architecture(r)}** at {label}: largest difference from the original {r.get('fixed_gap'):.3g}, "
            f"the original's compiled-vs-eager gap {r.get('eager_gap'):.3g}; {errors}.")


def moe_settings_section(results: Path) -> list[str]:
    """Section 4b: the MoE rows at the sweep's input, at batch 2 × 16 and with autograd (issue 28)."""
    out = ["## 4b. MoE rows at more than one size, and with autograd", ""]
    runs = [(name, load(results, name)) for name in MOE_SETTINGS]
    if all(data is None for _, data in runs):
        return out + missing(MOE_SETTINGS[0])
    out += SETTINGS_INTRO
    present = [(name, data) for name, data in runs if data is not None]
    labels = [_setting_label(data) for _, data in present]
    by_arch = [{_architecture(r): r for r in data["rows"]} for _, data in present]
    archs = list(dict.fromkeys(a for rows in by_arch for a in rows))
    out += ["| row | " + " | ".join(f"{label}: breaks before → after | outputs" for label in labels) + " |",
            "| --- |" + " --- | --- |" * len(labels)]
    for arch in archs:
        cells = []
        for rows in by_arch:
            r = rows.get(arch)
            cells += [_breaks(r), _outputs_word(r) if r else ""]
        out.append(f"| {arch} | " + " | ".join(cells) + " |")
    out.append("")
    totals = []
    for label, rows in zip(labels, by_arch):
        moe = moe_breaks(list(rows.values()))
        totals.append(f"{label} {moe['breaks_before']} → {moe['breaks_after']} ({moe['rows']} rows)")
    out += ["Breaks before → after over the rows measured: " + "; ".join(totals) + ".", ""]
    alike = [label for label, rows in zip(labels, by_arch)
             if measured(list(rows.values())) and all(r.get("outputs_identical") for r in measured(list(rows.values())))]
    if alike:
        out += [f"At {' and at '.join(alike)}, every row's outputs are bit-identical to the original's.", ""]
    past = [_past_both(label, r) for label, rows in zip(labels, by_arch) for r in rows.values()
            if r.get("breaks_before") is not None and _outputs_word(r) == "**past both**"]
    out += (["Outputs past both tests:", ""] + past if past else
            ["No row's outputs are past both tests at any setting."]) + [""]
    out += ["The conditions `graphmend fix` gives for these rows' `fixed-when` sites (its report line: "
            "`removes graph break ... only when: ...`):", ""]
    for arch in archs:
        row = next((rows[arch] for rows in by_arch if arch in rows and conditions(rows[arch])), None)
        for c in conditions(row) if row else []:
            out.append(f"- **{arch}**, {c['rule']} at `{c['site']}` ({c['what']}): only when {c['condition']}")
    out.append("")
    for (name, data), label in zip(present, labels):
        gm = data.get("graphmend") or {}
        out += [f"{label}: made by `{data.get('command') or COMMANDS[name]}` in {data.get('seconds')} s "
                f"(torch {(data.get('environment') or {}).get('torch')}, transformers "
                f"{(data.get('environment') or {}).get('transformers')}), with the binary sha256 "
                f"`{(gm.get('sha256') or '?')[:12]}` (checkout at `{(gm.get('repo_commit') or '?')[:10]}`), "
                f"from {data.get('started')} to {data.get('finished') or '(not finished)'}.", ""]
    for name, data in runs:
        if data is None:
            out += missing(name)
    return out
