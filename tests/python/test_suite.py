"""`graph_breaks.py --suite reference`: row selection, arguments, totals and break kinds.

Cheap: nothing here compiles a model or runs graphmend (the full suite takes 15-30 minutes;
see docs/measuring.md).
"""
import re
import subprocess
import sys

import pytest

from conftest import HARNESS, REPO

from _harness import suite
from _harness.dynamo import KINDS, classify
from _harness.models import MODELS

REFERENCE_MD = REPO / "docs" / "reference.md"  # the handed REFERENCE.md's sections 2 and 3


def _parse_args(argv):
    sys.path.insert(0, str(HARNESS.parent))
    import graph_breaks

    return graph_breaks.parse_args(argv)


def test_reference_suite_covers_every_reference_row_with_a_known_model():
    rows = suite.select_rows("reference")
    assert {r.reference for r in rows} == set(suite.REFERENCE_ROWS)
    assert all(r.model in MODELS for r in rows)
    assert len({r.name for r in rows}) == len(rows)
    assert sorted(r.model for r in rows if r.dtype == "float16") == ["bart", "marian", "whisper"]
    # Every reference family has exactly one float32 row in the totals.
    counted = [r.reference for r in rows if r.dtype == "float32" and r.in_totals]
    assert sorted(x.label for x in counted) == sorted(x.label for x in suite.REFERENCE_ROWS)


def test_reference_figures_add_up_to_the_reference_total():
    counted = [r for r in suite.select_rows("reference") if r.dtype == "float32" and r.in_totals]
    weight = [len(r.reference.checkpoints) for r in counted]
    assert sum(weight) == suite.REFERENCE_TOTAL["rows"] == 21
    assert sum(w * r.reference_figures()[0] for w, r in zip(weight, counted)) == 89
    assert sum(w * r.reference_figures()[1] for w, r in zip(weight, counted)) == 19
    fp16 = {r.model: r.reference_figures() for r in suite.select_rows("reference") if r.dtype == "float16"}
    assert fp16 == {"bart": (7, 0), "marian": (6, 0), "whisper": (None, None)}


def test_reference_rows_match_reference_md():
    text = REFERENCE_MD.read_text()
    section = text.split("## 2.", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1][:1].isdigit():
            table[cells[0]] = (cells[1], cells[2])
    for ref in suite.REFERENCE_ROWS:
        assert ref.label in table, ref.label
        before, after = table[ref.label]
        assert int(before.split()[0]) == ref.before and int(after.split()[0]) == ref.after, ref.label
        fp16 = re.search(r"\((\d+) in fp16\)", before)
        assert (int(fp16[1]) if fp16 else None) == ref.before_fp16, ref.label


def test_select_rows_by_row_or_model_name_keeps_suite_order():
    assert [r.name for r in suite.select_rows("reference", ["marian", "t5/float32"])] == [
        "t5/float32", "marian/float32", "marian/float16"]
    assert [r.name for r in suite.select_rows("reference", ["bart/float16"])] == ["bart/float16"]
    with pytest.raises(ValueError, match="no row named nope"):
        suite.select_rows("reference", ["bart", "nope"])
    with pytest.raises(KeyError):
        suite.select_rows("no-such-suite")


def test_suite_arguments():
    args = _parse_args(["--suite", "reference", "--env", "latest", "--rows", "bart", "--json", "o.json"])
    assert (args.suite, args.env, args.rows, args.json) == ("reference", "latest", "bart", "o.json")
    assert _parse_args(["--suite", "reference", "--list"]).list
    # another setting: --batch/--tokens for the sweep's rows, --grad for every kind of run
    args = _parse_args(["--suite", "sweep", "--rows", "moe", "--batch", "2", "--tokens", "16", "--json", "o"])
    assert (args.shape, args.grad) == ((2, 16), False)
    assert _parse_args(["--model", "sweep:mixtral", "--grad"]).grad
    assert _parse_args(["--suite", "sweep", "--json", "o"]).shape is None
    for bad in (["--suite", "reference"],                                   # no --json
                ["--suite", "sweep", "--batch", "0", "--json", "o"],
                ["--case", "c.py", "--tokens", "16"],
                ["--suite", "reference", "--json", "o", "--dtype", "float16"],
                ["--model", "t5", "--env", "latest"],
                ["--suite", "reference", "--env", "newest", "--json", "o"],
                ["--suite", "everything", "--json", "o"]):
        with pytest.raises(SystemExit) as exc:
            _parse_args(bad)
        assert exc.value.code == 2, bad


def test_list_prints_the_rows_and_runs_nothing():
    proc = subprocess.run([sys.executable, str(HARNESS), "--suite", "reference", "--list", "--rows", "bart,clap"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["bart/float32", "bart/float16", "clap/float32"]
    assert "(reference 7 -> 0)" in proc.stdout
    proc = subprocess.run([sys.executable, str(HARNESS), "--suite", "reference", "--list", "--rows", "nope"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no row named nope" in proc.stderr


def test_env_python_names_the_setup_script_when_the_venv_is_missing(tmp_path, monkeypatch):
    monkeypatch.setitem(suite.ENVS, "latest", {**suite.ENVS["latest"], "venv": tmp_path / "absent"})
    with pytest.raises(FileNotFoundError, match="setup_latest.sh"):
        suite.env_python("latest")


def _measured(row, before, after, kinds_after=()):
    result = {"ok": True, "graphs_before": before + 1, "graphs_after": after + 1,
              "breaks_before": before, "breaks_after": after,
              "dynamo_breaks_before": before, "dynamo_breaks_after": after,
              "outputs_identical": True, "output_sha256_before": "x", "output_sha256_after": "x",
              "output_tensors": 1, "messages_identical": True, "messages_comparison": {"identical": True},
              "exception_before": None, "exception_after": None, "output_differences": [],
              "break_sites_before": [], "break_sites_after": [
                  {"site": "m.py:1", "kind": k, "reason": k, "call": 1} for k in kinds_after]}
    return suite.row_result(row, result, 1.0, "/nowhere")


def test_totals_weight_by_checkpoints_and_record_failed_rows():
    rows = {r.name: r for r in suite.select_rows("reference")}
    records = [
        _measured(rows["t5/float32"], 3, 0),                       # 5 checkpoints
        _measured(rows["bart/float16"], 4, 0),
        _measured(rows["clap/float32"], 2, 1, ["nonzero"]),
        _measured(rows["longformer/float32"], 2, 1, [".item()"]),  # not in the totals
        suite.row_result(rows["phi3/float32"], {"ok": False, "error": "arm 'before' failed"}, 1.0, "/nowhere"),
    ]
    assert records[2]["breaks_left"] == [{"site": "m.py:1", "kind": "nonzero", "reason": "nonzero", "gb": None,
                                          "action": None, "context": "", "call": 1, "count": 1}]
    assert records[4]["error"] == "arm 'before' failed" and "breaks_before" not in records[4]
    t = suite.totals(records)
    assert (t["float32"]["breaks_before"], t["float32"]["breaks_after"]) == (5, 1)
    assert (t["float32"]["reference_before"], t["float32"]["reference_after"]) == (5, 2)
    assert t["float32"]["rows_missing"] == ["phi3/float32"]
    weighted = t["float32_weighted_by_checkpoints"]
    assert (weighted["breaks_before"], weighted["breaks_after"], weighted["reference_before"]) == (17, 1, 17)
    assert (t["float16"]["breaks_before"], t["float16"]["reference_before"]) == (4, 7)
    assert t["rows_failed"] == ["phi3/float32"] and t["rows_ok"] == 4
    assert "FAILED" in suite.row_line(records[4])


@pytest.mark.parametrize("reason,gb,context,opcode,kind", [
    ("Data-dependent branching", "GB0170", "attempted to jump with TensorVariable()", "", "data-dependent branch"),
    ("Unsupported Tensor.item() call with capture_scalar_outputs=False", "GB0124",
     "call_method TensorVariable() item () {}", "CALL", ".item()"),
    ("Dynamic shape operator", "GB0036", "aten.nonzero.default", "CALL", "nonzero"),
    ("Dynamic shape operator", "GB0036", "aten.nonzero.default", "BINARY_SUBSCR", "boolean mask index (nonzero)"),
    ("Dynamic shape operator", "GB0036", "aten.unique_consecutive.default", "CALL",
     "dynamic shape (aten.unique_consecutive.default)"),
    ("Data dependent operator", "GB0033", "aten._local_scalar_dense.default", "CALL",
     "tensor read as a Python number"),
    ("logging.Logger method not supported for non-export cases", "GB0291", "method: ...", "CALL", "logging"),
    ("Failed to trace builtin operator", "GB0059", "builtin print [...] False", "CALL", "print"),
    ("Attempted to call function marked as skipped", "GB0007",
     "module: _warnings, qualname: warn, skip reason: ...", "CALL", "warnings.warn"),
    ("C-implemented special method without VariableTracker model", None,
     "name=__next__, type=dict_keyiterator", "CALL", "unsupported builtin"),
    ("Something new in Dynamo", None, "", "", "other: Something new in Dynamo"),
])
def test_break_kinds(reason, gb, context, opcode, kind):
    assert classify(reason, gb, context, opcode) == kind
    assert kind in KINDS or kind.startswith(("dynamic shape (", "other: "))


def test_a_skipped_c_extension_is_not_warnings_warn():
    # Dynamo's explanation of GB0007 names `_warnings.warn` as an example whatever was called:
    # scipy.integrate.quad (diffusers' LMSDiscreteScheduler) is a call to a skipped function.
    text = ("Attempted to call function marked as skipped\n  Explanation: Dynamo does not know how to "
            "trace the builtin `scipy.integrate._quadpack._qagse.` This function is either a Python "
            "builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension (perhaps created with pybind).")
    context = "module: scipy.integrate._quadpack, qualname: _qagse, skip reason: cannot determine source file"
    reason = "Attempted to call function marked as skipped"
    assert classify(reason, "GB0007", context, "CALL", text) == "call to a skipped function"
    sys.path.insert(0, str(REPO / "src" / "verify" / "python"))
    try:
        import _graphmend_verify_hook as hook
    finally:
        sys.path.pop(0)
    assert hook.classify(reason, "GB0007", context, "CALL", text) == "call to a skipped function"
    warn_context = "module: _warnings, qualname: warn, skip reason: ..."
    assert hook.classify(reason, "GB0007", warn_context, "CALL", text) == "warnings.warn"
