"""`graph_breaks.py --suite reference|sweep`: many models measured the --model way, with totals.

Each suite row is one harness model (models.get_spec) in one dtype, measured by
model_bench.run_model (two fresh processes, the installed transformers against a
copy fixed by graphmend, same weights). The package is copied and fixed once per
suite run (and per --unsafe-fixes setting); every row's fixed arm runs on that copy.

"reference": the rows of docs/reference.md §2, next to the reference's figures
for the row each stands for. The reference ran one small config per transformers class
family and reported it once per checkpoint it names (21 rows, 89 -> 19 breaks);
`checkpoints` keeps that weight so the totals can be compared both ways.
"sweep": one row per architecture of sweep.ARCHS (model "sweep:<model_type>", row
"<model_type>/float32"), built by the generic small-config builder; no reference figures.

    rows = select_rows("reference", ["bart"])        # SuiteRow list (by row or model name)
    result = run_suite(rows, "latest", "OUT.json")   # runs, writes OUT.json after every row
    run_suite(rows, "pins", "OUT.json", suite="sweep", shape=(2, 16), grad=True)  # another setting

A setting other than the rows' own inputs under torch.no_grad() (shape: (batch, tokens) of the
inputs, the sweep's rows only; grad: the forwards with autograd enabled) applies to every row of
the run, and the result records it under "setting".

Environments (--env): "pins" runs the arms with <repo>/.venv (torch 2.12.1,
transformers 4.52.4, the reference's pins), "latest" with <repo>/.venv-latest
(scripts/setup_latest.sh, requirements-latest.txt). The parent process may run
under either; it only compares the arms' outputs.

Result JSON (written after every row, complete when "finished" is set):
  suite, env ("pins" | "latest"), command (the parent's command line), started, finished, seconds;
  setting: {batch, tokens (null: the rows' own inputs), grad};
  environment: python, python_executable, torch, transformers, torch_cuda, platform (the arms'
      interpreter), venv, parent_python, parent_python_executable, parent_torch, cpu_count,
      machine; matches_pins (pins only); requirements (latest only: requirements-latest.txt);
  graphmend: source (the binary or GRAPHMEND_BIN), sha256 and modified of the copy every row
      ran, repo_commit (git HEAD when the suite ran; the binary may be built from another tree);
  reference_total: the reference's own total line {rows 21, before 89, after 19, removed_percent};
  rows: one dict per row (row_result): row, model, architecture (sweep: the model_type), dtype,
      description, model_class, config_class, config, config_overrides (sweep: the architecture's
      own overrides; config is the whole difference to the class defaults), reference_row, reference_checkpoints, reference_before/after,
      in_totals, note, input_shape ([batch, tokens], null: the row's own inputs) and grad (the setting),
      torch, transformers, seconds, ok, error; not_available (the reason) for a
      model this transformers lacks or cannot build, error "not available at this version: ...",
      and nothing else measured; when measured also
      graphs/breaks/dynamo_breaks _before/_after, outputs_identical, output_sha256_before/after,
      output_tensors, messages_identical, messages_comparison, exception_before/after,
      kinds_before/after ({kind: log records}), sites_before and breaks_left ([{site, kind,
      reason, gb, action, context, call, count}]), graph_sites_before/after (per graph: ops,
      first and last user-code file:line), graphs_only_before/after (["first .. last (via
      callers)"] of the graphs one arm made and the other did not: where an added graph comes from), graphmend {returncode, seconds, last_line,
      break_files_report, model_folder, model_folder_sites, model_folder_report}; and
      messages_before/after, output_differences, arm_before/after, traceback when something
      differed or failed; flags: what makes the row worse after the fix ("breaks up",
      "Dynamo breaks up", "outputs differ", "messages differ") or leaves it unmeasured ("raised":
      a compiled forward raised; "failed": an arm failed); see row_flags;
  totals: float32, float32_weighted_by_checkpoints (reference only), float16, all_rows (see
      totals()), rows_ok, rows_failed (not ok, not counting the rows not available),
      rows_not_available ({row: reason}), flagged ({row: flags} of the rows with any flag).
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from . import fixer, sweep
from .models import get_spec

REPO = Path(__file__).resolve().parents[2]
ENVS = {
    "pins": {"venv": REPO / ".venv", "setup": "bash scripts/setup.sh",
             "expect": {"torch": "2.12.1", "transformers": "4.52.4"}},
    "latest": {"venv": REPO / ".venv-latest", "setup": "bash scripts/setup_latest.sh",
               "requirements": REPO / "requirements-latest.txt"},
}


@dataclasses.dataclass(frozen=True)
class ReferenceRow:
    """One row of docs/reference.md §2: the checkpoints it covers and the breaks it reported."""
    label: str
    checkpoints: tuple
    before: int
    after: int
    before_fp16: int | None = None  # the reference gave an fp16 figure for BART and Marian only


@dataclasses.dataclass(frozen=True)
class SuiteRow:
    """One measurement: harness model `model` in `dtype`, standing for reference row `reference`
    (None: a row with no reference figure, as in the sweep)."""
    model: str
    dtype: str
    reference: ReferenceRow | None = None
    in_totals: bool = True  # False: an extra variant, measured but not added to the totals
    note: str = ""
    unsafe_fixes: bool = False  # fix with `graphmend fix --unsafe-fixes`
    calls: int = 1  # forwards on the same inputs; graphs made by calls 2..N are recompiles

    @property
    def architecture(self):
        """The model's name without the sweep prefix (sweep:gpt2 -> gpt2)."""
        return self.model.removeprefix(sweep.PREFIX)

    @property
    def name(self):
        return f"{self.architecture}/{self.dtype}" + ("/unsafe-fixes" if self.unsafe_fixes else "")

    def reference_figures(self):
        """(before, after) the reference reported for this row's dtype (None: not reported)."""
        if self.reference is None:
            return None, None
        if self.dtype == "float16":
            if self.reference.before_fp16 is None:
                return None, None
            return self.reference.before_fp16, 0 if self.reference.after == 0 else None
        return self.reference.before, self.reference.after


T5 = ReferenceRow("t5-small, t5-base, t5-3b, flan-t5-large, it5 (T5)",
                  ("t5-small", "t5-base", "t5-3b", "flan-t5-large", "it5"), 3, 0)
WHISPER = ReferenceRow("whisper, whisper-small, whisper-base (Whisper)",
                       ("whisper", "whisper-small", "whisper-base"), 3, 0)
BART = ReferenceRow("bart, bart-base, rebel-large (BART)", ("bart", "bart-base", "rebel-large"), 3, 0, 7)
BIOGPT = ReferenceRow("biogpt (BioGPT)", ("biogpt",), 2, 0)
BLENDERBOT = ReferenceRow("blenderbot-400M-distill (Blenderbot)", ("blenderbot-400M-distill",), 3, 0)
MARIAN = ReferenceRow("opus-mt-fr-en (Marian)", ("opus-mt-fr-en",), 3, 0, 6)
PEGASUS = ReferenceRow("PegasusForCausalLM (Pegasus)", ("PegasusForCausalLM",), 2, 0)
LAYOUTLMV3 = ReferenceRow("layoutlmv3-base (LayoutLMv3)", ("layoutlmv3-base",), 2, 0)
PHI3 = ReferenceRow("Phi-4-mini-instruct (Phi-3 with longrope scaling)", ("Phi-4-mini-instruct",), 5, 0)
GROUNDING_DINO = ReferenceRow("grounding-dino tiny and base (Grounding DINO)",
                              ("grounding-dino-tiny", "grounding-dino-base"), 16, 7)
LONGFORMER = ReferenceRow("longformer-base-4096 (Longformer)", ("longformer-base-4096",), 5, 3)
CLAP = ReferenceRow("clap-htsat-fused (CLAP)", ("clap-htsat-fused",), 2, 2)
REFERENCE_ROWS = (T5, WHISPER, BART, BIOGPT, BLENDERBOT, MARIAN, PEGASUS, LAYOUTLMV3, PHI3,
                  GROUNDING_DINO, LONGFORMER, CLAP)
# The reference's own total line.
REFERENCE_TOTAL = {"rows": 21, "before": 89, "after": 19, "removed_percent": 78}

SUITES = {
    "reference": (
        SuiteRow("t5", "float32", T5),
        SuiteRow("whisper", "float32", WHISPER),
        SuiteRow("whisper", "float16", WHISPER, note="the reference gave no fp16 figure for Whisper"),
        SuiteRow("bart", "float32", BART),
        SuiteRow("bart", "float16", BART),
        SuiteRow("biogpt", "float32", BIOGPT),
        SuiteRow("blenderbot", "float32", BLENDERBOT),
        SuiteRow("marian", "float32", MARIAN),
        SuiteRow("marian", "float16", MARIAN),
        SuiteRow("pegasus", "float32", PEGASUS),
        SuiteRow("layoutlmv3", "float32", LAYOUTLMV3),
        SuiteRow("phi3", "float32", PHI3),
        SuiteRow("phi3", "float32", PHI3, in_totals=False, unsafe_fixes=True, calls=2,
                 note="fixed with --unsafe-fixes (GM201's buffer rebinding, docs/rules/GM201.md), "
                      "two calls; an extra variant, not in the totals, which use the default fixes"),
        SuiteRow("grounding-dino", "float32", GROUNDING_DINO),
        SuiteRow("longformer-padded", "float32", LONGFORMER,
                 note="window 16 > 8 tokens: the model pads its input, as longformer-base-4096 "
                      "(window 512) does on the reference's 8 tokens; this variant is in the totals"),
        SuiteRow("longformer", "float32", LONGFORMER, in_totals=False,
                 note="window 4: no padding; an extra variant, not in the totals"),
        SuiteRow("clap", "float32", CLAP),
    ),
    "sweep": tuple(SuiteRow(sweep.PREFIX + a.model_type, "float32", note=a.note) for a in sweep.ARCHS.values()),
}


def check_setting(rows, shape=None):
    """Raises ValueError when `shape` is given and a row makes its inputs at one shape only."""
    if shape is None:
        return
    fixed = [r.name for r in rows if get_spec(r.model).inputs_at is None]
    if fixed:
        raise ValueError(f"--batch and --tokens apply to the sweep's rows; these make their inputs at one "
                         f"shape only: {', '.join(fixed)}")


def setting_of(shape=None, grad=False):
    """The result's "setting": {batch, tokens, grad} (batch and tokens None: the rows' own inputs)."""
    return {"batch": shape[0] if shape else None, "tokens": shape[1] if shape else None, "grad": bool(grad)}


def select_rows(suite, only=None):
    """The SuiteRows of `suite`, in order; `only` (names) keeps rows whose name or model is listed
    ("moe" in the sweep: its mixture-of-experts rows, sweep.MOE).

    Raises KeyError for an unknown suite, ValueError for a name that matches no row.
    """
    rows = list(SUITES[suite])
    if not only:
        return rows
    wanted = []
    for w in (w.strip() for w in only if w.strip()):
        wanted += list(sweep.MOE) if suite == "sweep" and w == "moe" else [w]
    def names(row):
        return (row.name, row.model, row.architecture)

    unknown = [w for w in wanted if not any(w in names(r) for r in rows)]
    if unknown:
        raise ValueError(f"no row named {', '.join(unknown)} in suite {suite!r}; "
                         f"rows: {', '.join(r.name for r in rows)}")
    return [r for r in rows if any(n in wanted for n in names(r))]


def env_python(env):
    """The interpreter of environment `env` ("pins" or "latest"); raises FileNotFoundError."""
    venv = ENVS[env]["venv"]
    python = venv / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{python} does not exist: run `{ENVS[env]['setup']}` first")
    return python


_VERSIONS = """
import json, platform, sys
import torch, transformers
print(json.dumps({"python": platform.python_version(), "python_executable": sys.executable,
                  "torch": torch.__version__, "transformers": transformers.__version__,
                  "torch_cuda": torch.version.cuda, "platform": platform.platform()}))
"""


def environment(env, python):
    """Versions of the arms' interpreter and of the parent, for the result's "environment"."""
    proc = subprocess.run([str(python), "-c", _VERSIONS], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ""}, timeout=600)
    info = json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-2000:]}
    info.update({
        "env": env,
        "venv": str(ENVS[env]["venv"].relative_to(REPO)),
        "parent_python": platform.python_version(),
        "parent_python_executable": sys.executable,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
    })
    try:
        import torch
        info["parent_torch"] = torch.__version__
    except ImportError:
        info["parent_torch"] = None
    expect = ENVS[env].get("expect")
    if expect and "torch" in info:
        info["matches_pins"] = (info["torch"].split("+")[0] == expect["torch"]
                                and info["transformers"] == expect["transformers"])
    requirements = ENVS[env].get("requirements")
    if requirements and requirements.exists():
        info["requirements"] = [line.strip() for line in requirements.read_text().splitlines()
                                if line.strip() and not line.lstrip().startswith("#")]
    return info


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _git_head():
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def freeze_graphmend(folder):
    """Copy the graphmend binary into `folder` so every row runs the same one.

    Returns (info dict, the GRAPHMEND_BIN value to use). A command line in
    GRAPHMEND_BIN (e.g. a Python stand-in) is used as it is.
    """
    cmd = fixer.fixer_command()
    exe = Path(cmd[0])
    info = {"source": " ".join(cmd), "repo_commit": _git_head()}
    if len(cmd) > 1 or not exe.is_file():
        return info, " ".join(cmd)
    copy = Path(folder) / "graphmend"
    shutil.copy2(exe, copy)
    info.update({"sha256": _sha256(copy),
                 "modified": datetime.datetime.fromtimestamp(exe.stat().st_mtime).isoformat(timespec="seconds")})
    return info, str(copy)


def _group_sites(sites):
    """Break sites grouped by (call, site, kind, reason) in first-seen order, with a count."""
    groups = {}
    for s in sites:
        key = (s.get("call"), s["site"], s["kind"], s["reason"])
        if key not in groups:
            groups[key] = {"site": s["site"], "kind": s["kind"], "reason": s["reason"],
                           "gb": s.get("gb"), "action": s.get("action"), "context": s.get("context", ""),
                           "call": s.get("call"), "count": 0}
        groups[key]["count"] += 1
    return list(groups.values())


def _kinds(sites):
    counts = {}
    for s in sites:
        counts[s["kind"]] = counts.get(s["kind"], 0) + 1
    return counts


# `fix`'s per-file line; `N fixed-when` (fixes that remove the break only under a condition) is
# there when there is one.
_FILE_SUMMARY = re.compile(r"^(?P<path>.+?\.py): (?P<found>\d+) sites? found, (?P<fixed>\d+) fixed, "
                           r"(?:(?P<fixed_when>\d+) fixed-when, )?(?P<refused>\d+) refused")


def graphmend_digest(result, site_root):
    """graphmend's exit, time, last line; for the model's own folder its site counts and report
    lines; for every file where a break was seen before the fix, its report lines."""
    fix = result.get("graphmend") or {}
    stderr = fix.get("stderr") or ""
    lines = [line for line in stderr.splitlines() if line.strip()]
    digest = {"returncode": fix.get("returncode"), "seconds": fix.get("seconds"),
              "last_line": lines[-1] if lines else ""}
    prefix = str(site_root) + os.sep
    break_files = sorted({site["site"].rsplit(":", 1)[0] for site in result.get("break_sites_before") or []})
    digest["break_files_report"] = {
        name: [line.replace(prefix, "") for line in lines if line.startswith(prefix + name + ":")][:100]
        for name in break_files}
    module = result.get("model_module") or ""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "models":
        folder = "/".join(parts[:3])  # transformers/models/<family>
        mine = [line.replace(prefix, "") for line in lines if f"{folder}/" in line]
        totals = {"found": 0, "fixed": 0, "fixed_when": 0, "refused": 0}
        for line in mine:
            m = _FILE_SUMMARY.match(line)
            if m:
                for key in totals:
                    totals[key] += int(m[key] or 0)
        digest.update({"model_folder": folder, "model_folder_sites": totals,
                       "model_folder_report": [line for line in mine if not _FILE_SUMMARY.match(line)][:200]})
    return digest


def row_result(row, result, seconds, site_root):
    """The suite's record of one row from model_bench.run_model's result."""
    ref_before, ref_after = row.reference_figures()
    try:
        spec = get_spec(row.model)
    except KeyError:
        spec = None
    out = {
        "row": row.name,
        "model": row.model,
        "architecture": row.architecture,
        "dtype": row.dtype,
        "description": spec.description if spec else "",
        "model_class": result.get("model_class"),
        "config_class": result.get("config_class"),
        "config": result.get("config"),
        "config_overrides": spec.config_overrides if spec else None,
        "reference_row": row.reference.label if row.reference else None,
        "reference_checkpoints": list(row.reference.checkpoints) if row.reference else [],
        "reference_before": ref_before,
        "reference_after": ref_after,
        "in_totals": row.in_totals,
        "note": row.note,
        "unsafe_fixes": row.unsafe_fixes,
        "calls": row.calls,
        "input_shape": result.get("input_shape"),
        "grad": bool(result.get("grad")),
        "torch": result.get("torch"),
        "transformers": result.get("transformers"),
        "seconds": round(seconds, 1),
        "ok": bool(result.get("ok")),
        "error": result.get("error"),
    }
    if "not_available" in result:
        out["not_available"] = result["not_available"]
    if "graphs_before" in result:
        out.update({
            "graphs_before": result["graphs_before"],
            "graphs_after": result["graphs_after"],
            "breaks_before": result["breaks_before"],
            "breaks_after": result["breaks_after"],
            "dynamo_breaks_before": result["dynamo_breaks_before"],
            "dynamo_breaks_after": result["dynamo_breaks_after"],
            "outputs_identical": result["outputs_identical"],
            "outputs_within_eager_gap": result.get("outputs_within_eager_gap"),
            "eager_gap": result.get("eager_gap"),
            "fixed_gap": result.get("fixed_gap"),
            "outputs_as_accurate": result.get("outputs_as_accurate"),
            "float64_rms_error": result.get("float64_rms_error"),
            "float64_unavailable": result.get("float64_unavailable"),
            "output_sha256_before": result["output_sha256_before"],
            "output_sha256_after": result["output_sha256_after"],
            "output_tensors": result["output_tensors"],
            "messages_identical": result["messages_identical"],
            "messages_comparison": result["messages_comparison"],
            "exception_before": result["exception_before"],
            "exception_after": result["exception_after"],
            "kinds_before": _kinds(result["break_sites_before"]),
            "kinds_after": _kinds(result["break_sites_after"]),
            "sites_before": _group_sites(result["break_sites_before"]),
            "breaks_left": _group_sites(result["break_sites_after"]),
            "recompiles_before": result.get("recompiles_before"),
            "recompiles_after": result.get("recompiles_after"),
            "graph_sites_before": result.get("graph_sites_before"),
            "graph_sites_after": result.get("graph_sites_after"),
        })
        out["graphs_only_before"], out["graphs_only_after"] = _graph_difference(
            result.get("graph_sites_before") or [], result.get("graph_sites_after") or [])
        if not result["messages_identical"]:
            out["messages_before"] = result["messages_before"]
            out["messages_after"] = result["messages_after"]
        if result["output_differences"]:
            out["output_differences"] = result["output_differences"]
    if result.get("graphmend"):
        out["graphmend"] = graphmend_digest(result, site_root)
    for key in ("arm_before", "arm_after"):
        info = result.get(key)
        if info and info.get("returncode") != 0:  # a failed arm: keep what it printed
            out[key] = info
    out["flags"] = row_flags(out)
    return out


def _graph_difference(before, after):
    """The graphs (by first and last user-code site) found in one arm and not the other, as
    ["first .. last", ...] each, with " (via CALLER > CALLER)" when the graph's origin names its
    callers; a graph that appears twice in one arm and once in the other is listed once."""
    def key(g):
        return f"{g.get('first')} .. {g.get('last')}"

    def shown(g):
        return key(g) + (f" (via {' > '.join(g['callers'])})" if g.get("callers") else "")

    only_before, only_after = list(before), []
    for g in after:
        match = next((b for b in only_before if key(b) == key(g)), None)
        if match is None:
            only_after.append(shown(g))
        else:
            only_before.remove(match)
    return [shown(g) for g in only_before], only_after


def row_flags(r):
    """What makes a row worse after the fix: breaks (either counter) up, outputs or messages that
    differ; or no measurement: a compiled forward raised in either arm ("raised"), no result at
    all ("failed"). An empty list for a row the fix did not harm, and for a row whose model this
    package version lacks ("not_available": nothing to measure, nothing made worse)."""
    if r.get("not_available"):
        return []
    if "breaks_before" not in r:
        return ["failed"]
    flags = []
    if r["breaks_after"] > r["breaks_before"]:
        flags.append("breaks up")
    if r["dynamo_breaks_after"] > r["dynamo_breaks_before"]:
        flags.append("Dynamo breaks up")
    if not outputs_accepted(r):
        flags.append("outputs differ")  # not bit-equal, beyond the compiled-vs-eager gap, and less accurate
    if not r["messages_identical"]:
        flags.append("messages differ")
    if r.get("exception_before") or r.get("exception_after"):
        flags.append("raised")  # a compiled forward that raised measures nothing
    return flags


def outputs_accepted(r):
    """Issue 11's test of a row's outputs: bit-identical to the original's; or within the gap that
    separates the original compiled with Inductor from its eager run (the largest absolute
    difference); or, where that gap is smaller than the fixed model's difference, no further from
    the original run in float64 than the original is, eager or compiled (root
    mean square error, model_bench.eager_tolerance)."""
    return bool(r["outputs_identical"] or r.get("outputs_within_eager_gap") or r.get("outputs_as_accurate"))


def totals(rows):
    """Sums over the measured rows: float32 rows in the totals, the same weighted by the
    reference's checkpoints (comparable with its 21-row total), float16 rows, and every row."""
    def block(selected, weight=lambda r: 1):
        # A row whose compiled forward raised (in either arm) counted no breaks: not measured.
        measured = [r for r in selected if "breaks_before" in r
                    and not r.get("exception_before") and not r.get("exception_after")]
        t = {"rows": len(selected), "rows_measured": len(measured),
             "rows_missing": [r["row"] for r in selected if r not in measured]}
        for key in ("breaks_before", "breaks_after", "dynamo_breaks_before", "dynamo_breaks_after"):
            t[key] = sum(weight(r) * r[key] for r in measured)
        with_reference = [r for r in measured if r["reference_before"] is not None]
        t["reference_before"] = sum(weight(r) * r["reference_before"] for r in with_reference)
        t["reference_after"] = sum(weight(r) * (r["reference_after"] or 0) for r in with_reference)
        t["rows_with_reference"] = len(with_reference)
        t["removed_percent"] = (round(100 * (1 - t["breaks_after"] / t["breaks_before"]), 1)
                                if t["breaks_before"] else None)
        t["reference_removed_percent"] = (round(100 * (1 - t["reference_after"] / t["reference_before"]), 1)
                                          if t["reference_before"] else None)
        t["outputs_identical"] = sum(1 for r in measured if r["outputs_identical"])
        t["outputs_within_eager_gap"] = sum(1 for r in measured
                                            if not r["outputs_identical"] and r.get("outputs_within_eager_gap"))
        t["outputs_as_accurate"] = sum(1 for r in measured if not r["outputs_identical"]
                                       and not r.get("outputs_within_eager_gap") and r.get("outputs_as_accurate"))
        t["messages_identical"] = sum(1 for r in measured if r["messages_identical"])
        return t

    fp32 = [r for r in rows if r["dtype"] == "float32" and r["in_totals"]]
    out = {"float32": block(fp32)}
    if any(r["reference_checkpoints"] for r in fp32):
        weighted = block(fp32, weight=lambda r: len(r["reference_checkpoints"]))
        weighted["checkpoints"] = sum(len(r["reference_checkpoints"]) for r in fp32)
        out["float32_weighted_by_checkpoints"] = weighted
    out.update({
        "float16": block([r for r in rows if r["dtype"] == "float16"]),
        "all_rows": block(rows),
        "rows_ok": sum(1 for r in rows if r["ok"]),
        "rows_failed": [r["row"] for r in rows if not r["ok"] and not r.get("not_available")],
        "rows_not_available": {r["row"]: r["not_available"] for r in rows if r.get("not_available")},
        "flagged": {r["row"]: r["flags"] for r in rows if r.get("flags")},
    })
    return out


def run_suite(rows, env, json_path=None, keep=None, log=print, suite="reference", shape=None, grad=False):
    """Measure `rows` of `suite` with environment `env`; writes json_path after every row; returns
    the result. shape and grad: the setting of every row (see the module docstring)."""
    from .model_bench import fix_package, installed_package_dir, run_model

    python = env_python(env)
    started = time.time()
    result = {
        "suite": suite,
        "env": env,
        "command": " ".join([os.path.relpath(sys.executable, REPO)] + sys.argv),
        "environment": environment(env, python),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "setting": setting_of(shape, grad),
        "rows": [],
    }
    if suite == "reference":
        result["reference_total"] = REFERENCE_TOTAL
    fixed = {}  # (package, unsafe_fixes) -> fix_package's (copy, FixResult), made for the first row
    with tempfile.TemporaryDirectory(prefix="graphmend-suite-") as tmp:
        result["graphmend"], bin_value = freeze_graphmend(tmp)
        saved_bin = os.environ.get("GRAPHMEND_BIN")
        os.environ["GRAPHMEND_BIN"] = bin_value
        try:
            for i, row in enumerate(rows, 1):
                log(f"[{i}/{len(rows)}] {row.name} ({env}) ...")
                workdir = Path(keep) / row.name.replace("/", "-") if keep else Path(tmp) / row.name.replace("/", "-")
                if workdir.exists():
                    shutil.rmtree(workdir)
                workdir.mkdir(parents=True)
                start = time.monotonic()
                site = None
                try:
                    key = (get_spec(row.model).package, row.unsafe_fixes)
                    if key not in fixed:
                        log(f"    fixing a copy of {key[0]}" + (" with --unsafe-fixes" if key[1] else "") + " ...")
                        fixed[key] = fix_package(installed_package_dir(str(python), key[0]),
                                                 (Path(keep) if keep else Path(tmp)) / f"site-{len(fixed)}",
                                                 unsafe_fixes=key[1])
                    site = fixed[key][0].parent
                    measured = run_model(row.model, str(python), workdir, row.dtype, row.calls,
                                         unsafe_fixes=row.unsafe_fixes, fixed=fixed[key], shape=shape, grad=grad)
                except Exception as exc:  # one row must not stop the suite
                    measured = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                "traceback": traceback.format_exc()[-4000:]}
                record = row_result(row, measured, time.monotonic() - start, site or workdir / "site")
                if "traceback" in measured:
                    record["traceback"] = measured["traceback"]
                result["rows"].append(record)
                if not keep:
                    shutil.rmtree(workdir, ignore_errors=True)
                log("    " + row_line(record))
                _finish(result, started, json_path)
        finally:
            if saved_bin is None:
                os.environ.pop("GRAPHMEND_BIN", None)
            else:
                os.environ["GRAPHMEND_BIN"] = saved_bin
    result["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    _finish(result, started, json_path)
    return result


def merge_remeasured(whole, part):
    """Put the rows of `part` (a suite result of a `--rows` run) into `whole` (a full run of the
    same suite and environment), in whole's row order, and record them under whole["remeasured"]
    ({rows, graphmend, started}); the totals are made again from the merged rows. Raises
    ValueError when the two runs are of another suite, environment (torch, transformers) or
    setting (input shape, autograd), or part holds a row whole lacks."""
    for key in ("suite", "env"):
        if whole.get(key) != part.get(key):
            raise ValueError(f"{key} differs: {whole.get(key)!r} and {part.get(key)!r}")
    settings = [run.get("setting") or setting_of() for run in (whole, part)]  # older files: the default
    if settings[0] != settings[1]:
        raise ValueError(f"setting differs: {settings[0]!r} and {settings[1]!r}")
    for key in ("torch", "transformers", "python"):
        a, b = (whole.get("environment") or {}).get(key), (part.get("environment") or {}).get(key)
        if a != b:
            raise ValueError(f"environment {key} differs: {a!r} and {b!r}")
    index = {r["row"]: i for i, r in enumerate(whole["rows"])}
    missing = [r["row"] for r in part["rows"] if r["row"] not in index]
    if missing:
        raise ValueError(f"rows not in the whole run: {', '.join(missing)}")
    for r in part["rows"]:
        whole["rows"][index[r["row"]]] = r
    whole.setdefault("remeasured", []).append(
        {"rows": [r["row"] for r in part["rows"]], "graphmend": part.get("graphmend"), "started": part.get("started")})
    whole["totals"] = totals(whole["rows"])
    return whole


def _finish(result, started, json_path):
    result["totals"] = totals(result["rows"])
    result["seconds"] = round(time.time() - started, 1)
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(json_path) + ".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        os.replace(tmp, json_path)


def _outputs_word(r):
    """'identical', 'within the compiled-vs-eager gap (fixed X <= Y)' or 'DIFFER'."""
    if r["outputs_identical"]:
        return "identical"
    if r.get("outputs_within_eager_gap"):
        return f"within the compiled-vs-eager gap (fixed {r.get('fixed_gap'):.3g} <= {r.get('eager_gap'):.3g})"
    if r.get("outputs_as_accurate"):
        e = r["float64_rms_error"]
        return (f"as accurate as the original against float64 (RMS error fixed {e['error_fixed']:.3g} <= "
                f"{max(e['error_eager'], e['error_inductor']):.3g}; largest difference {r.get('fixed_gap'):.3g} > "
                f"gap {r.get('eager_gap'):.3g})")
    return "DIFFER"


def row_line(r):
    """One line for a row: breaks before -> after (Dynamo's counter), checks, reference, flags."""
    if r.get("reference_row") is None:
        ref = ""
    elif r["reference_before"] is not None:
        ref = f"; reference {r['reference_before']} -> {r['reference_after']}"
    else:
        ref = "; no reference figure"
    if r.get("not_available"):
        return f"{r['row']}: {r['error']}{ref}"
    if "breaks_before" not in r:
        return f"{r['row']}: FAILED ({r.get('error')}){ref}"
    left = ", ".join(f"{n}x {k}" for k, n in r["kinds_after"].items()) or "none"
    flags = [f for f in r.get("flags", ()) if f != "messages differ"]  # said just before
    return (f"{r['row']}: breaks {r['breaks_before']} -> {r['breaks_after']} "
            f"(Dynamo {r['dynamo_breaks_before']} -> {r['dynamo_breaks_after']}){ref}; "
            f"outputs {_outputs_word(r)}, "
            f"messages {'identical' if r['messages_identical'] else 'DIFFER'}; left: {left}"
            + (f"  <-- WORSE: {', '.join(flags)}" if flags else ""))


def summary_lines(result):
    """The whole suite in a few lines (printed at the end of a run)."""
    env = result["environment"]
    setting = result.get("setting") or {}
    lines = [f"suite {result['suite']} ({result['env']}): torch {env.get('torch')}, "
             f"transformers {env.get('transformers')}, python {env.get('python')}"
             + (f"; inputs {setting['batch']} x {setting['tokens']}" if setting.get("batch") else "")
             + ("; autograd enabled" if setting.get("grad") else "")]
    lines += ["  " + row_line(r) for r in result["rows"]]
    for key in ("float32", "float32_weighted_by_checkpoints", "float16"):
        t = result["totals"].get(key)
        if not t or not t["rows"]:
            continue
        lines.append(f"  total {key}: breaks {t['breaks_before']} -> {t['breaks_after']} "
                     f"(Dynamo {t['dynamo_breaks_before']} -> {t['dynamo_breaks_after']}), "
                     + (f"reference {t['reference_before']} -> {t['reference_after']}, "
                        if t["rows_with_reference"] else "")
                     + f"{t['rows_measured']}/{t['rows']} rows measured, "
                     f"outputs identical {t['outputs_identical']}, messages identical {t['messages_identical']}")
    failed = result["totals"]["rows_failed"]
    absent = result["totals"].get("rows_not_available") or {}
    lines.append(f"  rows ok: {result['totals']['rows_ok']}/{len(result['rows'])}"
                 + (f"; not ok: {', '.join(failed)}" if failed else "")
                 + (f"; not available at this version: {', '.join(absent)}" if absent else ""))
    for name, flags in result["totals"].get("flagged", {}).items():
        lines.append(f"  WORSE after the fix: {name}: {', '.join(flags)}")
    return lines


def main_suite(suite, env, json_path, keep=None, only=None, shape=None, grad=False):
    """Entry for --suite: run, write JSON, print the summary; returns the exit code."""
    try:
        rows = select_rows(suite, only)
        check_setting(rows, shape)
        env_python(env)
        fixer.fixer_command()
    except (ValueError, FileNotFoundError, fixer.FixerMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = run_suite(rows, env, json_path, keep, log=lambda line: print(line, flush=True), suite=suite,
                       shape=shape, grad=grad)
    for line in summary_lines(result):
        print(line)
    return 1 if result["totals"]["rows_failed"] else 0
