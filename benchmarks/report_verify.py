"""Section 6 of docs/RESULTS.md: `graphmend verify` (issue 30), from docs/results/verify-*.json.

  verify-agreement.json  benchmarks/verify_agreement.py: verify's FX graphs against the harness's
  verify-outside.json    benchmarks/verify_outside.py: code we did not write (diffusers, torchvision, timm)
  verify-hub.json        Hub remote-code checkouts (see verify-hub.md for how they were made)
  verify-batch.json      benchmarks/verify_batch.py: a folder of checkouts, -j N against --executor ray
"""
import json
from pathlib import Path


def _load(results: Path, name: str):
    path = results / name
    return json.loads(path.read_text()) if path.exists() else None


def _agreement(d, rerun=None) -> list[str]:
    out = ["### 6.1 verify against the harness", "",
           f"`benchmarks/verify_agreement.py`: {d['targets']} targets (the 26 cases, the shared checkouts, the "
           f"reference rows at the pins, built by the harness's builders and from a bare config.json); FX graphs "
           f"before and after equal to the harness's on {d['equal']} of {d['targets']}. {d['wall_note']}.", "",
           "| target | harness | verify | equal | verdict | break statuses |", "| --- | --- | --- | --- | --- | --- |"]
    for e in d["entries"]:
        h, v = e.get("harness_graphs") or [None, None], e.get("verify_graphs") or [None, None]
        verify = e.get("verify") or {}
        statuses = ", ".join(f"{k} {n}" for k, n in sorted((verify.get("breaks_by_status") or {}).items()) if n)
        out.append(f"| {e['target']} | {h[0]} -> {h[1]} | {v[0]} -> {v[1]} | {'yes' if e.get('equal') else 'NO'} | "
                   f"{verify.get('verdict', '?')} | {statuses or 'no breaks'} |")
    if rerun is not None:
        out += ["", f"The cases and checkouts again with a later build (`{rerun['command']}`, "
                "verify-agreement-cases.json): graphs equal on "
                f"{rerun['equal']} of {rerun['targets']}, the same statuses; {rerun['verify_wall_s_total']} s of "
                "verify in all."]
    return out + [""]


def _outside(d) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in d["versions"].items())
    out = ["### 6.2 Code we did not write", "",
           f"`benchmarks/verify_outside.py` ({versions}); every break Dynamo logs is in verify's report with a "
           "status (the independent check parses `TORCH_LOGS=graph_breaks` of a plain run). Details and the "
           "unreported breaks with their code: [verify-outside.md](results/verify-outside.md).", "",
           "Breaks are Dynamo's records (before -> after the fix); the status columns count distinct break "
           "sites (file:line). A target whose breaks another target has too (the same driver, a narrower PATH) "
           "is left out of the total.", "",
           "| target | graphs before -> after | breaks before -> after | sites removed | condition-unmet | "
           "fixed-but-left | refused | unreported | outside | new | missing from the report | outputs |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    total = {"before": 0, "after": 0}
    for name, t in d["targets"].items():
        s = t["sites_by_status"]
        check = t.get("independent_check") or t.get("check") or {}
        missing = check.get("missing", check.get("missing_sites", "?")) if isinstance(check, dict) else "?"
        if isinstance(missing, list):
            missing = len(missing)
        outputs = ", ".join(f"{n} {k}" for k, n in sorted(t.get("outputs", {}).items())) or "-"
        out.append(f"| {name} | {t['graphs_before']} -> {t['graphs_after']} | {t['breaks_before']} -> "
                   f"{t['breaks_after']} | {s['removed']} | {s.get('condition-unmet', 0)} | "
                   f"{s.get('fixed-but-left', 0)} | {s['refused']} | {s['unreported']} | {s['outside']} | "
                   f"{s.get('new', 0)} | {missing} | {outputs} |")
        if name not in d.get("same_breaks_as", {"torchvision-detection": None}):
            total["before"] += t["breaks_before"]
            total["after"] += t["breaks_after"]
    if total["before"]:
        removed = total["before"] - total["after"]
        out += ["", f"In total {total['before']} -> {total['after']} breaks: {removed} removed "
                    f"({100 * removed / total['before']:.0f} %)."]
    out += ["", "Unreported breaks by kind (the input of issue 31):", "", "| kind | sites | breaks |", "| --- | --- | --- |"]
    for kind, k in d["unreported_by_kind"].items():
        out.append(f"| {kind} | {k['sites']} | {k['breaks']} |")
    return out + [""]


def _hub(d) -> list[str]:
    out = ["### 6.3 Hub remote-code checkouts", "",
           "Real checkouts (config.json and remote code from GitHub copies of Hub repositories, no weights), "
           "configs shrunk by hand, random weights: [verify-hub.md](results/verify-hub.md).", "",
           "| checkout | run | graphs before -> after | break records | sites by status | verdict | missing from the report |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in d["checkouts"]:
        for r in c["runs"]:
            statuses = ", ".join(f"{k} {n}" for k, n in sorted(r.get("break_records_by_status", {}).items()) if n)
            check = r.get("independent_check") or {}
            missing = check.get("missing_from_verify", check.get("missing", "?"))
            out.append(f"| {c['repo']} | {r['variant']} | {r['graphs_before']} -> {r['graphs_after']} | "
                       f"{r['breaks_before']} | {statuses or 'no breaks'} | {r['verdict']} | "
                       f"{len(missing) if isinstance(missing, list) else missing} |")
    return out + [""]


def _batch(d) -> list[str]:
    broken = d.get("broken") or {}
    out = ["### 6.4 A folder of checkouts: -j against Ray", "",
           f"`benchmarks/verify_batch.py --count {d['checkouts']}`: one `graphmend verify ROOT --tiny` over "
           f"{d['checkouts']} Hub-style checkouts (alpha, phi-a, phi-b cycled; {broken.get('count', 0)} broken on "
           f"purpose: {broken.get('how', '')}), `-j {d['jobs']}` on this machine and `--executor ray --jobs {d['jobs']}` "
           f"on a local Ray instance (ray {d['versions'].get('ray')}), one arm after the other. Results identical "
           f"(statuses, verdicts, totals, breaks, graphs, outputs, messages; not times or memory): "
           f"**{'yes' if d['identical'] else 'NO'}**. Machine: {d['machine']}; load average {d.get('load_average_at_end')} "
           "at the end.", "",
           "| arm | wall s | statuses | graphmend's own peak RSS MB | largest process MB | process tree peak RSS sum MB | processes at peak |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, a in d["arms"].items():
        statuses = ", ".join(f"{k} {n}" for k, n in sorted((a.get("statuses") or {}).items()))
        out.append(f"| {name} | {a['wall_s']} | {statuses} | {a['graphmend_hwm_mb']} | {a['tree_rss_max_mb']} | "
                   f"{a['tree_rss_sum_peak_mb']} | {a['tree_procs_peak']} |")
    out += ["", "graphmend's own peak is the batch process alone (VmHWM); the largest process and the tree sum "
            "come from sampling every process of the run every 0.5 s (a model run is the largest; the sum "
            "includes Ray's raylet, GCS, dashboard agent and workers). Neither arm had the machine alone: "
            "other work (builds, short test runs) ran at times during both, so the wall times compare loosely."]
    return out + [""]


def verify_section(results: Path) -> list[str]:
    out = ["## 6. graphmend verify: Dynamo's own account", "",
           "`graphmend verify` runs the code before and after the fix in fresh processes and joins every graph "
           "break Dynamo reports with graphmend's report (docs/verify.md).", ""]
    parts = (("verify-agreement.json", _agreement), ("verify-outside.json", _outside), ("verify-hub.json", _hub),
             ("verify-batch.json", _batch))
    for name, render in parts:
        d = _load(results, name)
        if d is not None:
            out += render(d, _load(results, "verify-agreement-cases.json")) if render is _agreement else render(d)
    return out
