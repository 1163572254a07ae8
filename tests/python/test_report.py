"""benchmarks/report.py renders what the JSON results say, and says what is missing."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import report  # noqa: E402


def _row(name, before, after, ref=(3, 0), left=()):
    return {"row": name, "model_class": "T5ForConditionalGeneration", "description": "T5, small",
            "reference_before": ref[0], "reference_after": ref[1], "breaks_before": before,
            "breaks_after": after, "dynamo_breaks_before": before, "dynamo_breaks_after": after,
            "outputs_identical": True, "messages_identical": before != 7, "breaks_left": list(left)}


def test_reference_rows_totals_and_missing_sections(tmp_path):
    data = {"environment": {"torch": "2.12.1", "transformers": "4.52.4", "python": "3.11.7"},
            "rows": [_row("t5/float32", 3, 0),
                     _row("clap/float32", 2, 2, (2, 2), [{"kind": "nonzero", "site": "m.py:904", "count": 1}]),
                     _row("bart/float16", 7, 0, (7, 0)),
                     {"row": "phi3/float32", "error": "arm 'after' failed\nTraceback"}],
            "totals": {"float32": {"rows": 3, "rows_measured": 2, "breaks_before": 5, "breaks_after": 2,
                                   "removed_percent": 60.0, "rows_with_reference": 2, "reference_before": 5,
                                   "reference_after": 2, "reference_removed_percent": 60.0}},
            "graphmend": {"repo_commit": "0123456789abcdef"}}
    (tmp_path / "reference-pins.json").write_text(json.dumps(data))
    page = report.render(tmp_path)
    assert "| t5/float32 | T5ForConditionalGeneration | 3 → 0 | 3 → 0 | 3 → 0 | yes | yes |  |" in page
    assert "nonzero at `m.py:904`" in page
    assert "| bart/float16 | T5ForConditionalGeneration | 7 → 0 | 7 → 0 | 7 → 0 | yes | **no** |" in page
    assert "| phi3/float32 |  | – | not measured: arm 'after' failed |" in page
    assert "| float32 | 2/3 | 5 → 2 | 60.0 % | 5 → 2 | 60.0 % |" in page
    # the sections with no JSON name the command that makes it
    assert "`reference-latest.json` is missing" in page and "--env latest" in page
    assert "`latency-cpu.json` is missing" in page and "`tool-speed.json` is missing" in page
    assert (tmp_path / "reference-breaks.png").stat().st_size > 0


def test_sweep_section_flags_the_rows_made_worse(tmp_path):
    worse = {**_row("switch_transformers/float32", 15, 16), "architecture": "switch_transformers",
             "model_class": "SwitchTransformersForConditionalGeneration", "flags": ["breaks up"],
             "graphs_only_after": ["m.py:306 .. m.py:308"],
             "breaks_left": [{"kind": "nonzero", "site": "m.py:306", "count": 6}]}
    data = {"environment": {"torch": "2.12.1", "transformers": "4.52.4", "python": "3.11.7"},
            "rows": [worse, {"row": "bert/float32", "architecture": "bert", "error": "arm 'after' failed",
                             "flags": ["failed"]}],
            "totals": {"float32": {"rows": 2, "rows_measured": 1, "breaks_before": 15, "breaks_after": 16}}}
    (tmp_path / "sweep-pins.json").write_text(json.dumps(data))
    page = report.render(tmp_path)
    assert ("| switch_transformers | SwitchTransformersForConditionalGeneration | 15 → 16 | 15 → 16 | yes | yes | "
            "**breaks up** | nonzero at `m.py:306` ×6 |") in page
    assert "| bert |  | not measured: arm 'after' failed | | | | **failed** | |" in page
    assert "- **switch_transformers/float32** (breaks up): new graphs `m.py:306 .. m.py:308`" in page
    assert "`sweep-pins.json` is missing" not in page


def _sweep_row(arch, before, after, left=()):
    return {**_row(f"{arch}/float32", before, after), "architecture": arch, "model_class": f"{arch}-class",
            "messages_identical": True, "breaks_left": [{"kind": k, "site": s, "count": n} for k, s, n in left]}


def _sweep(rows, env="pins"):
    measured = [r for r in rows if "breaks_before" in r]
    return {"environment": {"torch": "2.12.1", "transformers": "4.52.4" if env == "pins" else "5.24.0",
                            "python": "3.11.7"}, "command": f".venv/bin/python benchmarks/sweep.py --env {env}",
            "rows": rows,
            "totals": {"float32": {"rows": len(rows), "rows_measured": len(measured),
                                   "breaks_before": sum(r["breaks_before"] for r in measured),
                                   "breaks_after": sum(r["breaks_after"] for r in measured),
                                   "removed_percent": 10.0, "dynamo_breaks_before": 1, "dynamo_breaks_after": 1,
                                   "outputs_identical": len(measured), "messages_identical": len(measured) - 1}}}


def test_sweep_breaks_left_by_kind_and_the_moe_line():
    from _harness import sweep_report

    rows = [_sweep_row("mixtral", 12, 10, [("nonzero", "mixtral.py:132", 6), (".item()", "mixtral.py:140", 1)]),
            _sweep_row("dbrx", 8, 8, [("nonzero", "dbrx.py:677", 6)]),
            _sweep_row("led", 3, 3, [(".item()", "led.py:1655", 3)]),
            {**_sweep_row("t5", 3, 0), "exception_after": {"type": "E"}},  # raised: not counted
            _sweep_row("gpt2", 0, 0)]
    assert sweep_report.breaks_left_by_kind(rows) == [
        {"kind": "nonzero", "count": 12, "models": {"mixtral": 6, "dbrx": 6},
         "sites": {"mixtral.py:132": 6, "dbrx.py:677": 6}},
        {"kind": ".item()", "count": 4, "models": {"mixtral": 1, "led": 3},
         "sites": {"mixtral.py:140": 1, "led.py:1655": 3}}]
    assert sweep_report.moe_breaks(rows) == {"rows": 2, "breaks_before": 20, "breaks_after": 18,
                                             "models": {"mixtral": (12, 10), "dbrx": (8, 8)}}


def test_sweep_sections_pins_and_latest_with_totals_kinds_and_rows_not_available(tmp_path):
    pins = _sweep([_sweep_row("mixtral", 12, 10, [("nonzero", "mixtral.py:132", 6)]), _sweep_row("gpt2", 0, 0)])
    (tmp_path / "sweep-pins.json").write_text(json.dumps(pins))
    page = report.render(tmp_path)
    sweep = page[page.index("## 4. "):]
    assert "### pins: torch 2.12.1, transformers 4.52.4, Python 3.11.7" in sweep and "### latest" not in sweep
    assert ("Totals: 2/2 rows measured, breaks 12 → 10 (10.0 % removed), Dynamo's counter 1 → 1, "
            "outputs identical 2/2, messages identical 1/2.") in page
    assert "MoE models (1 measured): breaks 12 → 10; mixtral 12 → 10." in page
    assert "| nonzero | 6 | mixtral ×6 | `mixtral.py:132` ×6 |" in page
    assert "Made by `.venv/bin/python benchmarks/sweep.py --env pins`" in page
    nezha = {"row": "nezha/float32", "architecture": "nezha", "not_available": "transformers 5.24.0 has no "
             "model type 'nezha'", "error": "not available at this version: transformers 5.24.0 has no model "
             "type 'nezha'", "flags": []}
    (tmp_path / "sweep-latest.json").write_text(json.dumps(_sweep([_sweep_row("gpt2", 0, 0), nezha], "latest")))
    page = report.render(tmp_path)
    assert "### latest: torch 2.12.1, transformers 5.24.0, Python 3.11.7" in page
    assert ("| nezha |  | not available at this version: transformers 5.24.0 has no model type 'nezha' "
            "| | | |  | |") in page
    latest = page[page.index("### latest: "):]
    assert "Totals: 1/2 rows measured (1 not available at this version: nezha), breaks 0 → 0" in latest
    assert "No break is left in the rows measured." in latest and "MoE models" not in latest


def test_moe_gaps_section_and_its_measures(tmp_path):
    import torch

    import moe_gaps

    # the measures: largest absolute difference over the floating leaves, RMS error against float64
    a = [("out.logits", torch.tensor([1.0, 2.0])), ("out.ids", torch.tensor([1, 2])), ("out.n", "3")]
    b = [("out.logits", torch.tensor([1.0, 2.5])), ("out.ids", torch.tensor([1, 2])), ("out.n", "3")]
    assert moe_gaps.max_diff(a, a) == 0.0 and moe_gaps.max_diff(a, b) == 0.5
    assert moe_gaps.max_diff(a, [("out.logits", torch.tensor([1.0]))]) == float("inf")
    assert moe_gaps.rms_error(b, [("out.hidden", torch.tensor([1.0, 2.0], dtype=torch.float64))]) == float("inf")
    c = [("out.logits", torch.tensor([1.0, 2.0], dtype=torch.float64)), ("out.ids", torch.tensor([1, 2]))]
    assert abs(moe_gaps.rms_error(b[:2], c) - (0.25 / 2) ** 0.5) < 1e-12

    assert "`moe-gaps-pins.json` is missing" in report.render(tmp_path)
    row = {"row": "dbrx", "summary": {
        "max_diff_from_eager": {"original_inductor": 2.09e-7, "fixed_traced": 2.09e-7, "fixed_inductor": 2.38e-7},
        "max_error_vs_float64": {"eager": 3.58e-8, "original_inductor": 3.74e-8, "fixed_traced": 3.52e-8,
                                 "fixed_inductor": 3.7e-8},
        "inputs_fixed_within_gap": 4, "inputs_fixed_bit_equal": 0, "graphs": {"original": 9, "fixed": 1}},
        # inputs past the gap: input 3 as accurate against float64, input 4 neither
        "per_input": [{"input": k, "diff_from_eager": {"original_inductor": 1e-7, "fixed_traced": f},
                       "error_vs_float64": {"eager": 3e-8, "original_inductor": 4e-8, "fixed_traced": e}}
                      for k, f, e in ((0, 1e-7, 9e-8), (3, 2e-7, 3.9e-8), (4, 2e-7, 4.1e-8))]}
    data = {"environment": {"torch": "2.12.1", "transformers": "4.52.4"}, "inputs": 5, "unsafe_fixes": False,
            "seconds": 600.0, "graphmend": {"sha256": "abcdef0123456789", "repo_commit": "0123456789abcdef"},
            "rows": [row]}
    (tmp_path / "moe-gaps-pins.json").write_text(json.dumps(data))
    page = report.render(tmp_path)
    assert ("| dbrx | 9 → 1 | 2.09e-07 | 2.09e-07 | 2.38e-07 | 4/5 (0) | 1 / input 4 | 3.58e-08 | 3.74e-08 | 3.52e-08 | "
            "3.7e-08 |") in page
    assert "without `--unsafe-fixes`" in page and "`moe-gaps-latest.json` is missing" in page


def _moe_row(arch, before, after, **outputs):
    when = (f"transformers/models/{arch}/modeling_{arch}.py:135:26: GM501 [fixed-when] expert dispatch over "
            "torch.where(m): removes graph break GB0036 only when: no autograd, experts x rows per expert <= 64 "
            "(static-expert-dispatch: under torch.compile (in a sentence: with parentheses); otherwise ...)")
    modular = when.replace("modeling_", "modular_").replace(":135:", ":206:")
    return {**_sweep_row(arch, before, after), "outputs_identical": not outputs, **outputs,
            "graphmend": {"model_folder_report": [
                when, modular, f"transformers/models/{arch}/modeling_{arch}.py:286:17: GM101 [fixed] "
                "logger.warning_once(...): removes graph break GB0291 (deferred-side-effect)"]}}


def _moe_setting(rows, command, setting):
    return {**_sweep(rows), "command": command, "setting": setting, "seconds": 90.5,
            "started": "2026-12-05T02:00:00", "finished": "2026-12-05T02:01:30",
            "graphmend": {"sha256": "abcdef0123456789", "repo_commit": "0123456789abcdef"}}


def test_moe_settings_section_breaks_outputs_and_conditions_per_setting(tmp_path):
    from _harness import sweep_report

    assert "`sweep-moe-b1t8-pins.json` is missing" in report.render(tmp_path)
    within = {"outputs_within_eager_gap": True, "fixed_gap": 7.5e-8, "eager_gap": 1.5e-7}
    past = {"outputs_within_eager_gap": False, "fixed_gap": 3e-6, "eager_gap": 0.0, "outputs_as_accurate": False,
            "float64_rms_error": {"error_eager": 5e-7, "error_inductor": 5e-7, "error_fixed": 6e-7}}
    runs = {
        "sweep-moe-b1t8-pins.json": _moe_setting(
            [_moe_row("mixtral", 12, 0, **within), _moe_row("dbrx", 8, 0)], "sweep.py --rows moe --name moe-b1t8",
            {"batch": None, "tokens": None, "grad": False}),
        "sweep-moe-b2t16-pins.json": _moe_setting(
            [_moe_row("mixtral", 14, 14), _moe_row("dbrx", 9, 9, **past)], "sweep.py --batch 2 --tokens 16",
            {"batch": 2, "tokens": 16, "grad": False})}
    for name, data in runs.items():
        (tmp_path / name).write_text(json.dumps(data))
    assert sweep_report.conditions(runs["sweep-moe-b1t8-pins.json"]["rows"][0]) == [
        {"site": "modeling_mixtral.py:135", "rule": "GM501", "what": "expert dispatch over torch.where(m)",
         "condition": "no autograd, experts x rows per expert <= 64"}]  # the modular_ source is left out
    page = report.render(tmp_path)
    section = page[page.index("## 4b. "):page.index("## 5. ")]
    assert ("| row | 1 × 8: breaks before → after | outputs | 2 × 16: breaks before → after | outputs |"
            in section)
    assert "| mixtral | 12 → 0 | within gap (7.5e-08 ≤ 1.5e-07) | 14 → 14 | identical |" in section
    assert "| dbrx | 8 → 0 | identical | 9 → 9 | **past both** |" in section
    accurate = {**past, "outputs_as_accurate": True, "float64_rms_error": {**past["float64_rms_error"],
                                                                          "error_fixed": 4e-7}}
    assert sweep_report._outputs_word({"breaks_before": 9, **accurate}) == (
        "as accurate (gap 3e-06 > 0; RMS error vs float64 4e-07 ≤ 5e-07)")
    assert "Breaks before → after over the rows measured: 1 × 8 20 → 0 (2 rows); 2 × 16 23 → 23 (2 rows)." in section
    assert "bit-identical to the original's" not in section  # one row at each setting is not
    assert ("- **dbrx** at 2 × 16: largest difference from the original 3e-06, the original's compiled-vs-eager "
            "gap 0; RMS error against float64 6e-07, the original's 5e-07 eager and 5e-07 compiled.") in section
    assert ("- **mixtral**, GM501 at `modeling_mixtral.py:135` (expert dispatch over torch.where(m)): only when "
            "no autograd, experts x rows per expert <= 64") in section
    assert ("2 × 16: made by `sweep.py --batch 2 --tokens 16` in 90.5 s (torch 2.12.1, transformers 4.52.4), "
            "with the binary sha256 `abcdef012345` (checkout at `0123456789`)") in section
    assert "`sweep-moe-grad-pins.json` is missing" in section and "--grad --name moe-grad" in section
    # the other sections do not change with it
    for name in runs:
        (tmp_path / name).unlink()
    without = report.render(tmp_path)
    assert page.replace(section, "") == without.replace(without[without.index("## 4b. "):without.index("## 5. ")], "")
