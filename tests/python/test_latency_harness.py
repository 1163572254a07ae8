"""Cheap self-tests of benchmarks/latency.py: argument parsing, ratio statistics, output comparison.

Nothing here times anything or runs torch.compile: a benchmark must not fail a test
because the machine is slow.
"""
import pytest
import torch

import latency  # benchmarks/latency.py (conftest puts benchmarks/ on sys.path)
from _harness import latency_stats
from _harness.latency_arm import compile_seconds
from _harness.models import MODELS

# ------------------------------------------------------------------ argument parsing


def test_defaults():
    args = latency.parse_args([])
    assert args.rows == list(MODELS)
    assert (args.reps, args.calls, args.warmup, args.device) == (5, 50, 5, "cpu")
    assert args.threads == 1 and args.compile_threads == 1
    assert args.json is None and args.max_minutes is None
    assert args.unsafe_fixes is False


def test_cuda_defaults_leave_threads_to_torch():
    assert latency.parse_args(["--device", "cuda"]).threads == 0


def test_rows_list_aliases_and_order():
    assert latency.parse_args(["--rows", "bart,t5"]).rows == ["bart", "t5"]
    assert latency.parse_args(["--rows", "changed"]).rows == list(latency.CHANGED)
    mixed = latency.parse_args(["--rows", "clap, changed,t5"]).rows
    assert mixed[0] == "clap" and mixed[1:] == list(latency.CHANGED)  # t5 only once
    assert set(latency.CHANGED) <= set(MODELS)


@pytest.mark.parametrize("argv", [
    ["--rows", "nope"], ["--rows", ","], ["--reps", "0"], ["--calls", "0"], ["--warmup", "-1"],
    ["--device", "tpu"], ["--threads", "-2"], ["--max-minutes", "0"],
])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        latency.parse_args(argv)
    assert exc.value.code == 2


def test_options_are_kept(tmp_path):
    out = tmp_path / "x.json"
    args = latency.parse_args(["--rows", "t5", "--reps", "7", "--calls", "60", "--json", str(out),
                               "--threads", "2", "--compile-threads", "0"])
    assert (args.rows, args.reps, args.calls, args.json, args.threads, args.compile_threads) == \
        (["t5"], 7, 60, str(out), 2, 0)


def test_unsafe_fixes_reach_graphmend(tmp_path, monkeypatch):
    """--unsafe-fixes: the package copy is fixed with `graphmend fix --unsafe-fixes`; without it, not."""
    from _harness import fixer, model_bench

    calls = []
    monkeypatch.setattr(fixer, "run_fix", lambda args: calls.append([str(a) for a in args]))
    monkeypatch.setattr(model_bench, "installed_package_dir", lambda python, package: tmp_path / "installed")
    monkeypatch.setattr(model_bench, "_copy_package", lambda src, dst: None)
    assert latency.parse_args(["--rows", "phi3", "--unsafe-fixes"]).unsafe_fixes is True
    latency.fix_package("python", "transformers", tmp_path, unsafe_fixes=True)
    latency.fix_package("python", "transformers", tmp_path)
    assert calls == [[str(tmp_path / "site/transformers"), "--unsafe-fixes"], [str(tmp_path / "site/transformers")]]


def test_arm_order_alternates():
    assert latency.arm_order(0) == ("original", "fixed")
    assert latency.arm_order(1) == ("fixed", "original")
    assert latency.arm_order(4) == ("original", "fixed")


def test_arm_env_has_fresh_disabled_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
    env = latency.arm_env(tmp_path / "site", tmp_path / "cache", 1, 1)
    assert env["PYTHONPATH"] == str(tmp_path / "site")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache")
    assert env["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "0" and env["TORCHINDUCTOR_AUTOGRAD_CACHE"] == "0"
    assert env["OMP_NUM_THREADS"] == "1" and env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    assert "TORCHINDUCTOR_FORCE_DISABLE_CACHES" not in env
    plain = latency.arm_env(None, tmp_path / "c2", 0, 0)
    assert "PYTHONPATH" not in plain and "OMP_NUM_THREADS" not in plain
    assert "TORCHINDUCTOR_COMPILE_THREADS" not in plain


# ------------------------------------------------------------------ statistics


def test_timing_summary():
    s = latency_stats.timing_summary([3.0, 1.0, 2.0, 4.0, 100.0])
    assert s["median"] == 3.0 and s["min"] == 1.0 and s["max"] == 100.0 and s["n"] == 5
    assert (s["q1"], s["q3"]) == (2.0, 4.0)
    assert s["mean"] == pytest.approx(22.0)
    assert latency_stats.timing_summary([]) is None
    one = latency_stats.timing_summary([0.5])
    assert one["q1"] == one["q3"] == one["median"] == 0.5


def test_ratio_and_rep_ratios():
    assert latency_stats.ratio(2.0, 1.0) == 2.0
    assert latency_stats.ratio(None, 1.0) is None
    assert latency_stats.ratio(1.0, 0.0) is None
    reps = [
        {"original": {"steady_s": 2.0}, "fixed": {"steady_s": 1.0}},
        {"original": {"steady_s": 3.0}, "fixed": {"steady_s": 2.0}},
        {"original": None, "fixed": {"steady_s": 1.0}},      # an arm failed
        {"original": {"steady_s": 1.0}, "fixed": {}},        # metric missing
    ]
    assert latency_stats.rep_ratios(reps, "steady_s") == [2.0, 1.5]


def test_spread_of_ratios():
    s = latency_stats.spread([1.0, None, 3.0, 2.0, 5.0, 4.0])
    assert s["n"] == 5 and s["median"] == 3.0 and (s["min"], s["max"]) == (1.0, 5.0)
    assert (s["q1"], s["q3"]) == (2.0, 4.0)
    assert s["values"] == [1.0, 3.0, 2.0, 5.0, 4.0]
    assert latency_stats.spread([None]) is None


def test_geomean():
    assert latency_stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert latency_stats.geomean([None, 0.0, 4.0]) == pytest.approx(4.0)
    assert latency_stats.geomean([]) is None


def test_summarise_row_and_run():
    def arm(c, s):
        return {"returncode": 0, "exception": None, **{m: 1.0 for m in latency.METRICS},
                "compile_s": c, "steady_s": s}
    failed = {"returncode": 1, "exception": {"type": "E", "message": "", "call": 1}, "compile_s": 9.0}
    reps = [{"original": arm(4.0, 2.0), "fixed": arm(2.0, 1.0)},
            {"original": arm(6.0, 3.0), "fixed": arm(2.0, 3.0)},
            {"original": arm(8.0, 4.0), "fixed": failed}]  # in the original's figures, not the ratios
    row = latency.summarise_row(reps)
    assert row["ratios"]["compile_s"]["values"] == [2.0, 3.0]
    assert row["ratios"]["steady_s"]["median"] == 1.5
    assert row["original"]["compile_s"]["median"] == 6.0 and row["original"]["compile_s"]["n"] == 3
    assert row["fixed"]["compile_s"]["n"] == 2
    assert row["fixed"]["steady_s"]["max"] == 3.0
    run = latency.summarise_run([{"model": "a", **row}, {"model": "b", "ratios": {}}])
    assert run["compile_s"]["rows"] == 1
    assert run["compile_s"]["geomean_of_median_ratios"] == pytest.approx(2.5)


def test_compile_seconds_adds_gc():
    assert compile_seconds({"entire_frame_compile": 2.0, "gc": 0.5, "backend_compile": 1.5}) == 2.5
    assert compile_seconds({}) == 0.0


# ------------------------------------------------------------------ output comparison


def _save(path, leaves):
    torch.save(leaves, path)
    return path


def test_compare_outputs(tmp_path):
    x = torch.tensor([1.0, 2.0, 3.0])
    a = _save(tmp_path / "a.pt", [("out[0]", x), ("out[1]", "None")])
    same = latency.compare_outputs(a, _save(tmp_path / "b.pt", [("out[0]", x.clone()), ("out[1]", "None")]),
                                   1e-4, 1e-5)
    assert same["bit_equal"] and same["within_tolerance"] and same["tensors"] == 1
    near = latency.compare_outputs(a, _save(tmp_path / "c.pt", [("out[0]", x + 1e-7), ("out[1]", "None")]),
                                   1e-4, 1e-5)
    assert not near["bit_equal"] and near["within_tolerance"] and 0 < near["max_abs_diff"] < 1e-6
    far = latency.compare_outputs(a, _save(tmp_path / "d.pt", [("out[0]", x + 1.0), ("out[1]", "None")]),
                                  1e-4, 1e-5)
    assert not far["within_tolerance"] and far["max_abs_diff"] == pytest.approx(1.0)
    shape = latency.compare_outputs(a, _save(tmp_path / "e.pt", [("out[0]", x[:2]), ("out[1]", "None")]),
                                    1e-4, 1e-5)
    assert not shape["within_tolerance"]
    structure = latency.compare_outputs(a, _save(tmp_path / "f.pt", [("out[0]", x)]), 1e-4, 1e-5)
    assert not structure["within_tolerance"] and structure["details"] == ["structure differs"]
    ints = latency.compare_outputs(_save(tmp_path / "g.pt", [("i", torch.tensor([1, 2]))]),
                                   _save(tmp_path / "h.pt", [("i", torch.tensor([1, 3]))]), 1e-4, 1e-5)
    assert not ints["within_tolerance"]


# ------------------------------------------------------------------ orchestration (arms faked)


def _fake_arm(fail_fixed=False):
    calls = []

    def run_arm(args, name, arm, package_root, pythonpath, workdir, tag, state, save):
        calls.append((tag, save))
        if save:
            state.write_bytes(b"weights")
        if arm == "fixed" and fail_fixed:
            res = {"returncode": 1, "exception": {"type": "UnboundLocalError", "message": "x", "call": 1}}
            return res, res
        t = 2.0 if arm == "original" else 1.0
        res = {"returncode": 0, "exception": None, "graphs": 4 if arm == "original" else 1, "dynamo_breaks": 0,
               **{m: t for m in latency.METRICS}}
        return res, res
    return run_arm, calls


def test_run_row_saves_weights_once_and_summarises(tmp_path, monkeypatch):
    run_arm, calls = _fake_arm()
    monkeypatch.setattr(latency, "run_arm", run_arm)
    monkeypatch.setattr(latency, "compare_outputs", lambda *a: {
        "bit_equal": True, "within_tolerance": True, "max_abs_diff": 0.0, "max_rel_diff": 0.0})
    args = latency.parse_args(["--rows", "t5", "--reps", "3"])
    row = latency.run_row(args, "t5", tmp_path / "installed", tmp_path / "site", tmp_path)
    assert [c for c in calls if c[1]] == [("r0-original", True)]  # only the first original arm saves
    assert [c[0] for c in calls] == ["r0-original", "r0-fixed", "r1-fixed", "r1-original",
                                     "r2-original", "r2-fixed"]
    assert row["ok"] and row["reps_ok"] == 3 and row["errors"] == []
    assert row["ratios"]["steady_s"]["median"] == 2.0 and row["ratios"]["compile_s"]["n"] == 3
    assert (row["graphs_original"], row["graphs_fixed"]) == (4, 1)


def test_run_row_reports_a_failing_arm(tmp_path, monkeypatch):
    run_arm, _ = _fake_arm(fail_fixed=True)
    monkeypatch.setattr(latency, "run_arm", run_arm)
    args = latency.parse_args(["--rows", "t5", "--reps", "2"])
    row = latency.run_row(args, "t5", tmp_path / "installed", tmp_path / "site", tmp_path)
    assert not row["ok"] and row["reps_ok"] == 0 and len(row["errors"]) == 2
    assert "UnboundLocalError in call 1" in row["errors"][0]
    assert row["ratios"]["steady_s"] is None and row["outputs_within_tolerance"] is False
    assert row["original"]["steady_s"]["median"] == 2.0 and row["graphs_original"] == 4
    assert row["reps_ok_original"] == 2 and row["reps_ok_fixed"] == 0


def test_resummarise_recomputes_from_the_repetitions(tmp_path, monkeypatch):
    import json

    run_arm, _ = _fake_arm()
    monkeypatch.setattr(latency, "run_arm", run_arm)
    monkeypatch.setattr(latency, "compare_outputs", lambda *a: {
        "bit_equal": False, "within_tolerance": True, "max_abs_diff": 1e-7, "max_rel_diff": 1e-6})
    args = latency.parse_args(["--rows", "t5", "--reps", "2"])
    row = latency.run_row(args, "t5", tmp_path / "installed", tmp_path / "site", tmp_path)
    bare = {k: row[k] for k in ("model", "description", "reps", "errors")}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"reps": 2, "rows": [bare]}))
    assert latency.main(["--resummarise", str(path)]) == 0
    again = json.loads(path.read_text())
    assert again["rows"][0]["ratios"] == json.loads(json.dumps(row["ratios"]))
    assert again["rows"][0]["outputs_max_abs_diff"] == 1e-7 and again["rows"][0]["ok"]
    assert again["summary"]["steady_s"]["geomean_of_median_ratios"] == pytest.approx(2.0)


def test_moe_rows_are_named_apart_from_all_and_render_with_the_candidate_count(tmp_path):
    from _harness.models import get_spec
    from _harness.moe_rows import ROWS

    assert latency.parse_rows("moe") == list(ROWS)
    assert not set(ROWS) & set(latency.parse_rows("all"))
    assert latency.parse_rows("moe:e8-t1,t5") == ["moe:e8-t1", "t5"]
    assert "8 experts" in get_spec("moe:e8-t1").description
    import json

    import report  # benchmarks/report.py

    rows = [{"model": "moe:e8-t16", "graphs_original": 13, "graphs_fixed": 1,
             "ratios": {"steady_s": {"median": 0.94, "min": 0.9, "max": 0.95}}},
            {"model": "moe:e8-t1", "graphs_original": 8, "graphs_fixed": 1,
             "ratios": {"steady_s": {"median": 1.02, "min": 1.0, "max": 1.05}}}]
    (tmp_path / "latency-moe-cpu.json").write_text(json.dumps({"rows": rows, "graphmend_dispatch": "static"}))
    text = "\n".join(report.moe_latency_section(tmp_path))
    assert "| moe:e8-t1 | 16 | 1.02 |" in text and "| moe:e8-t16 | 256 | 0.94 |" in text
    assert text.index("moe:e8-t1 | 16") < text.index("moe:e8-t16 | 256")  # ordered by candidate rows
