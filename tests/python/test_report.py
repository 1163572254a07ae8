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
