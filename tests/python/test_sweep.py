"""`graph_breaks.py --suite sweep`: the small-config builder, the rows, flags, totals and rows
not available at a transformers version.

Cheap: configs only, no model is compiled and graphmend does not run (the sweep itself
takes about 15 minutes per environment on 2 cores; docs/measuring.md, "The sweep").
"""
import subprocess
import sys

import pytest

from conftest import HARNESS, REPO

from _harness import suite, sweep
from _harness.models import FFN, HEADS, HIDDEN, LAYERS, VOCAB, get_spec


def test_generic_shrinking_uses_the_config_class_own_field_names():
    gpt2 = sweep.config_kwargs("gpt2")
    assert {k: gpt2[k] for k in ("n_embd", "n_layer", "n_head", "vocab_size", "n_positions")} == {
        "n_embd": HIDDEN, "n_layer": LAYERS, "n_head": HEADS, "vocab_size": VOCAB, "n_positions": 64}
    assert "hidden_size" not in gpt2  # an attribute_map alias, not an argument of GPT2Config
    assert "n_inner" not in gpt2  # default None: left alone
    # GPT-2's bos/eos (50256) move into the small vocabulary.
    assert (gpt2["bos_token_id"], gpt2["eos_token_id"]) == (1, 2)
    llama = sweep.build_config("llama")
    assert (llama.hidden_size, llama.num_hidden_layers, llama.num_attention_heads,
            llama.num_key_value_heads, llama.intermediate_size, llama.head_dim) == (
        HIDDEN, LAYERS, HEADS, HEADS, FFN, HIDDEN // HEADS)


def test_architecture_overrides_win_and_moe_and_encoder_decoder_fields_shrink():
    switch = sweep.build_config("switch_transformers")
    assert (switch.num_experts, switch.num_layers, switch.num_decoder_layers) == (sweep.EXPERTS, LAYERS, LAYERS)
    assert switch.encoder_sparse_step == switch.decoder_sparse_step == 1  # every layer sparse
    neo = sweep.build_config("gpt_neo")
    assert neo.attention_layers == ["global", "local"] and neo.num_layers == LAYERS
    marian = sweep.build_config("marian")
    assert max(marian.pad_token_id, marian.decoder_start_token_id) < VOCAB == marian.decoder_vocab_size
    codegen = sweep.config_kwargs("codegen")
    assert (codegen["n_head"], codegen["rotary_dim"]) == (4, 8)  # the override, not HEADS
    assert get_spec("sweep:switch_transformers").config_overrides == {
        "num_sparse_encoder_layers": LAYERS, "num_sparse_decoder_layers": LAYERS}


def test_every_architecture_has_a_known_task_and_sweep_rows_are_named_by_model_type():
    assert all(a.task in sweep.TASKS for a in sweep.ARCHS.values())
    rows = suite.select_rows("sweep")
    assert len(rows) >= 40 and all(r.reference is None and r.dtype == "float32" for r in rows)
    assert [r.name for r in suite.select_rows("sweep", ["t5", "sweep:gpt2"])] == ["gpt2/float32", "t5/float32"]
    assert "switch_transformers/float32" in {r.name for r in rows}


def test_sweep_row_flags_and_totals():
    rows = {r.name: r for r in suite.select_rows("sweep", ["gpt2", "switch_transformers", "bert"])}
    measured = {"ok": True, "graphs_before": 23, "graphs_after": 24, "breaks_before": 22, "breaks_after": 23,
                "dynamo_breaks_before": 22, "dynamo_breaks_after": 23, "outputs_identical": True,
                "output_sha256_before": "x", "output_sha256_after": "x", "output_tensors": 1,
                "messages_identical": True, "messages_comparison": {"identical": True},
                "exception_before": None, "exception_after": None, "output_differences": [],
                "break_sites_before": [], "break_sites_after": [{"site": "m.py:7", "kind": ".item()",
                                                                  "reason": "r", "call": 1}]}
    worse = suite.row_result(rows["switch_transformers/float32"], measured, 1.0, "/nowhere")
    same = suite.row_result(rows["gpt2/float32"], {**measured, "breaks_after": 22, "dynamo_breaks_after": 22},
                            1.0, "/nowhere")
    failed = suite.row_result(rows["bert/float32"], {"ok": False, "error": "arm 'after' failed"}, 1.0, "/nowhere")
    raised = suite.row_result(rows["gpt2/float32"], {**measured, "exception_before": {"type": "E"}}, 1.0, "/x")
    assert worse["flags"] == ["breaks up", "Dynamo breaks up"] and same["flags"] == []
    assert raised["flags"] == ["breaks up", "Dynamo breaks up", "raised"]
    assert worse["architecture"] == "switch_transformers" and worse["reference_row"] is None
    assert "WORSE: breaks up" in suite.row_line(worse) and "reference" not in suite.row_line(same)
    t = suite.totals([worse, same, failed])
    assert "float32_weighted_by_checkpoints" not in t
    assert (t["float32"]["breaks_before"], t["float32"]["breaks_after"]) == (44, 45)
    assert suite.totals([worse, raised])["float32"]["rows_missing"] == ["gpt2/float32"]  # raised: not counted
    assert t["flagged"] == {"switch_transformers/float32": ["breaks up", "Dynamo breaks up"],
                            "bert/float32": ["failed"]}


def _moe_row_result(name, **outputs):
    """suite.row_result of the sweep's row `name` with its breaks all removed, outputs not
    bit-equal, and the fields `outputs` says about them."""
    row = {r.name: r for r in suite.select_rows("sweep", [name])}[f"{name}/float32"]
    base = {"ok": True, "graphs_before": 13, "graphs_after": 1, "breaks_before": 12, "breaks_after": 0,
            "dynamo_breaks_before": 6, "dynamo_breaks_after": 0, "outputs_identical": False,
            "output_sha256_before": "x", "output_sha256_after": "y", "output_tensors": 1,
            "messages_identical": True, "messages_comparison": {"identical": True},
            "exception_before": None, "exception_after": None, "output_differences": [],
            "break_sites_before": [], "break_sites_after": []}
    return suite.row_result(row, {**base, **outputs}, 1.0, "/nowhere")


def test_outputs_within_the_eager_gap_are_not_flagged_and_beyond_it_are():
    within = _moe_row_result("mixtral", outputs_within_eager_gap=True, eager_gap=2.4e-7, fixed_gap=1.2e-7)
    beyond = _moe_row_result("mixtral", outputs_within_eager_gap=False, eager_gap=0.0, fixed_gap=1.2e-7)
    assert within["flags"] == [] and beyond["flags"] == ["outputs differ"]
    assert "within the compiled-vs-eager gap (fixed 1.2e-07 <= 2.4e-07)" in suite.row_line(within)
    t = suite.totals([within, beyond])["float32"]
    assert (t["outputs_identical"], t["outputs_within_eager_gap"]) == (0, 1)


def test_outputs_beyond_the_gap_but_as_accurate_against_float64_are_not_flagged():
    gap = {"outputs_within_eager_gap": False, "eager_gap": 1.79e-7, "fixed_gap": 1.94e-7}
    errors = {"error_eager": 3.6e-8, "error_inductor": 3.7e-8, "error_fixed": 3.5e-8}
    accurate = _moe_row_result("dbrx", **gap, outputs_as_accurate=True, float64_rms_error=errors)
    less = _moe_row_result("dbrx", **gap, outputs_as_accurate=False,
                           float64_rms_error={**errors, "error_fixed": 3.8e-8})
    unknown = _moe_row_result("dbrx", **gap, outputs_as_accurate=None, float64_rms_error=None,
                              float64_unavailable="RuntimeError: ...")
    assert accurate["flags"] == [] and less["flags"] == unknown["flags"] == ["outputs differ"]
    assert "as accurate as the original against float64 (RMS error fixed 3.5e-08 <= 3.7e-08" in suite.row_line(accurate)
    t = suite.totals([accurate, less, unknown])["float32"]
    assert (t["outputs_identical"], t["outputs_within_eager_gap"], t["outputs_as_accurate"]) == (0, 0, 1)


def test_as_accurate_compares_the_fixed_error_with_the_larger_of_the_originals_two():
    import torch

    from _harness.model_bench import accuracy_against_float64

    exact = {"out": torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)}
    off = lambda *d: {"out": (exact["out"] + torch.tensor(d, dtype=torch.float64)).float()}  # noqa: E731
    eager, inductor = off(1e-3, 0, 0, 0), off(0, 2e-3, 0, 0)
    r = accuracy_against_float64(eager, eager, inductor, off(0, 0, 1.5e-3, 0), exact)
    assert r["as_accurate"] is True and r["error_fixed"] < r["error_inductor"]
    assert accuracy_against_float64(eager, eager, inductor, off(0, 0, 0, 3e-3), exact)["as_accurate"] is False
    # the original arm's run is not eager_gap.py's eager run: the errors do not compare
    assert accuracy_against_float64(inductor, eager, inductor, eager, exact)["as_accurate"] is None
    # a leaf that is not a floating tensor differs (an argmax, the experts picked): RMS errors say nothing
    ids = {"ids": torch.tensor([3, 1])}
    assert accuracy_against_float64({**eager, **ids}, eager, inductor, {**off(0, 0, 1.5e-3, 0), "ids": torch.tensor(
        [1, 3])}, exact)["as_accurate"] is None
    assert accuracy_against_float64({**eager, **ids}, eager, inductor, {**off(0, 0, 1.5e-3, 0), **ids},
                                    exact)["as_accurate"] is True
    # a leaf the float64 run lacks, or a NaN: not known
    assert accuracy_against_float64(eager, eager, inductor, {"other": eager["out"]}, exact)["as_accurate"] is None
    assert accuracy_against_float64(eager, eager, inductor, off(float("nan"), 0, 0, 0), exact)["as_accurate"] is None


def test_list_prints_at_least_40_sweep_rows():
    proc = subprocess.run([sys.executable, str(HARNESS), "--suite", "sweep", "--list"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) >= 40
    assert any(line.startswith("switch_transformers/float32 ") and "AutoModelForSeq2SeqLM" in line
               for line in lines)


def test_graph_origin_and_the_graphs_only_one_arm_made():
    from types import SimpleNamespace

    from _harness.dynamo import GraphCounter

    def node(op, *frames):
        trace = "".join(f'  File "/site/{f}", line {n}, in fn\n    code\n' for f, n in frames)
        return SimpleNamespace(op=op, meta={"stack_trace": trace})

    gm = SimpleNamespace(graph=SimpleNamespace(nodes=[
        node("placeholder"), node("call_function", ("m.py", 10), ("u.py", 3), ("rt.py", 1702)),
        node("call_method", ("m.py", 10), ("rt.py", 1703)), node("output")]))
    counter = GraphCounter(paths=lambda p: p.replace("/site/", ""))
    assert counter._origin(gm) == {"ops": 2, "first": "rt.py:1702", "last": "rt.py:1703",
                                   "callers": ["m.py:10", "u.py:3"]}
    a, b, c = ({"first": f"m.py:{n}", "last": f"m.py:{n + 1}"} for n in (1, 5, 9))
    c["callers"] = ["x.py:1", "y.py:2"]
    assert suite._graph_difference([a, b, b], [a, b, c, c]) == (
        ["m.py:5 .. m.py:6"], ["m.py:9 .. m.py:10 (via x.py:1 > y.py:2)"] * 2)


def test_moe_architectures_have_4_experts_2_per_token_and_experts_in_every_layer():
    assert set(sweep.MOE) <= set(sweep.ARCHS) and len(sweep.MOE) == 11
    c = {mt: sweep.build_config(mt) for mt in ("phimoe", "olmoe", "granitemoe", "dbrx", "jamba", "deepseek_v3",
                                               "nllb-moe")}
    assert c["phimoe"].num_local_experts == c["granitemoe"].num_local_experts == sweep.EXPERTS
    assert c["olmoe"].num_experts == c["jamba"].num_experts == c["nllb-moe"].num_experts == sweep.EXPERTS
    assert all(c[mt].num_experts_per_tok == sweep.EXPERTS_PER_TOKEN for mt in ("phimoe", "olmoe", "granitemoe",
                                                                               "jamba", "deepseek_v3"))
    ffn = c["dbrx"].ffn_config
    assert (ffn.moe_num_experts, ffn.moe_top_k, c["dbrx"].attn_config.kv_n_heads) == (sweep.EXPERTS, 2, HEADS)
    v3 = c["deepseek_v3"]
    assert (v3.n_routed_experts, v3.n_group, v3.first_k_dense_replace) == (sweep.EXPERTS, 1, 0)
    jamba = c["jamba"]
    assert not jamba.use_mamba_kernels and jamba.layers_block_type == ["mamba", "attention"]
    assert jamba.layers_num_experts == [sweep.EXPERTS] * LAYERS
    assert c["nllb-moe"].encoder_sparse_step == c["nllb-moe"].decoder_sparse_step == 1


def test_build_raises_not_available_with_the_reason(monkeypatch):
    from _harness.models import NotAvailable

    monkeypatch.setitem(sweep.ARCHS, "no_such_model", sweep.Arch("no_such_model", "causal-lm"))
    monkeypatch.setitem(sweep.ARCHS, "gpt_neo", sweep.Arch("gpt_neo", "causal-lm", {"attention_types": [[["a"], 5]]}))
    monkeypatch.setitem(sweep.ARCHS, "vit", sweep.Arch("vit", "causal-lm"))
    with pytest.raises(NotAvailable, match=r"^transformers [\d.]+ has no model type 'no_such_model'$"):
        sweep.build("no_such_model")
    with pytest.raises(NotAvailable, match=r"does not build its config: ValueError: Configuration for conv"):
        sweep.build("gpt_neo")
    with pytest.raises(NotAvailable, match=r"does not build AutoModelForCausalLM from it: ValueError: Unrecog"):
        sweep.build("vit")


def test_a_row_not_available_is_neither_flagged_nor_failed_nor_measured():
    row = suite.select_rows("sweep", ["nezha"])[0]
    reason = "transformers 5.24.0 has no model type 'nezha'"
    r = suite.row_result(row, {"ok": False, "not_available": reason, "error": f"not available at this version: "
                                                                              f"{reason}"}, 4.0, "/nowhere")
    failed = suite.row_result(suite.select_rows("sweep", ["bert"])[0], {"ok": False, "error": "x"}, 1.0, "/x")
    assert r["not_available"] == reason and r["flags"] == [] and failed["flags"] == ["failed"]
    assert suite.row_line(r) == f"nezha/float32: not available at this version: {reason}"
    t = suite.totals([r, failed])
    assert t["rows_failed"] == ["bert/float32"] and t["rows_not_available"] == {"nezha/float32": reason}
    assert t["float32"]["rows_missing"] == ["nezha/float32", "bert/float32"] and t["flagged"] == {
        "bert/float32": ["failed"]}


def _sweep_run(rows, env="pins", torch_version="2.12.1"):
    """A whole (or --rows) sweep result of `rows`, as suite.main_suite writes it."""
    return {"suite": "sweep", "env": env, "started": "2026-12-04T14:00:00", "command": "sweep.py",
            "environment": {"torch": torch_version, "transformers": "4.52.4", "python": "3.11.7"},
            "graphmend": {"sha256": "ab"}, "rows": rows, "totals": suite.totals(rows)}


def test_rows_measured_again_replace_their_rows_and_are_named():
    first = _moe_row_result("mixtral", outputs_within_eager_gap=False, eager_gap=0.0, fixed_gap=1.2e-7)
    whole = _sweep_run([first, _moe_row_result("dbrx", outputs_within_eager_gap=True, eager_gap=2e-7,
                                               fixed_gap=1e-7)])
    again = {**_moe_row_result("mixtral", outputs_within_eager_gap=True, eager_gap=2e-7, fixed_gap=1e-7),
             "breaks_after": 1}
    merged = suite.merge_remeasured(whole, {**_sweep_run([again]), "started": "2026-12-04T15:00:00"})
    assert [r["row"] for r in merged["rows"]] == ["mixtral/float32", "dbrx/float32"]  # the first stays first
    assert merged["rows"][0]["breaks_after"] == 1 and merged["totals"]["float32"]["breaks_after"] == 1
    assert merged["totals"]["float32"]["outputs_within_eager_gap"] == 2
    assert merged["remeasured"] == [{"rows": ["mixtral/float32"], "graphmend": {"sha256": "ab"},
                                     "started": "2026-12-04T15:00:00"}]
    with pytest.raises(ValueError, match="environment torch differs"):
        suite.merge_remeasured(whole, _sweep_run([again], torch_version="2.15.0"))
    with pytest.raises(ValueError, match="rows not in the whole run: t5/float32"):
        suite.merge_remeasured(whole, _sweep_run([{**again, "row": "t5/float32"}]))


def test_merge_into_writes_every_environment_or_none(tmp_path):
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("sweep_cli", REPO / "benchmarks" / "sweep.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)

    whole_dir, part_dir = tmp_path / "whole", tmp_path / "part"
    whole_dir.mkdir()
    part_dir.mkdir()
    beyond = _moe_row_result("dbrx", outputs_within_eager_gap=False, eager_gap=0.0, fixed_gap=1.2e-7)
    within = _moe_row_result("dbrx", outputs_within_eager_gap=True, eager_gap=2e-7, fixed_gap=1e-7)
    for env in ("pins", "latest"):
        (whole_dir / f"sweep-{env}.json").write_text(json.dumps(_sweep_run([beyond], env)))
    (part_dir / "sweep-pins.json").write_text(json.dumps(_sweep_run([within])))
    before = {f.name: f.read_text() for f in whole_dir.iterdir()}
    # latest has no part: nothing is written, pins included
    assert cli.merge(("pins", "latest"), part_dir, whole_dir) == 2
    assert {f.name: f.read_text() for f in whole_dir.iterdir()} == before
    assert cli.merge(("pins",), part_dir, whole_dir) == 0
    merged = json.loads((whole_dir / "sweep-pins.json").read_text())
    assert merged["rows"][0]["outputs_within_eager_gap"] and merged["totals"]["flagged"] == {}
    page = (whole_dir / "RESULTS.md").read_text()
    assert "| dbrx |  | 12 → 0 | 6 → 0 | within gap (1e-07 ≤ 2e-07) | yes |  |  |" in page
    assert "Rows `dbrx/float32` were measured again on 2026-12-04T14:00:00" in page


def _sweep_cli():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sweep_cli", REPO / "benchmarks" / "sweep.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    return cli


def test_inputs_at_another_shape_and_the_default_made_as_before():
    import torch

    from _harness import models

    torch.manual_seed(0)
    default = sweep.inputs("switch_transformers", torch.float32)
    torch.manual_seed(0)
    old = {"input_ids": torch.randint(0, VOCAB, (1, 8)), "decoder_input_ids": torch.randint(0, VOCAB, (1, 8))}
    assert default.keys() == old.keys() and all(torch.equal(default[k], old[k]) for k in old)
    spec = get_spec("sweep:switch_transformers")
    torch.manual_seed(0)
    at = models.make_inputs(spec, torch.float32, models.input_shape(2, 16))
    assert {k: tuple(v.shape) for k, v in at.items()} == {"input_ids": (2, 16), "decoder_input_ids": (2, 16)}
    torch.manual_seed(0)
    assert tuple(models.make_inputs(get_spec("sweep:vit"), torch.float32, (3, 16))["pixel_values"].shape) == (
        3, 3, sweep.IMAGE, sweep.IMAGE)  # an image takes the batch only
    assert models.input_shape() is None and models.input_shape(tokens=16) == (1, 16)
    with pytest.raises(ValueError, match="at least 1"):
        models.input_shape(0, 8)
    with pytest.raises(ValueError, match="t5 makes its inputs at one shape only"):
        models.make_inputs(get_spec("t5"), torch.float32, (2, 16))
    with pytest.raises(ValueError, match="t5/float32"):
        suite.check_setting(suite.select_rows("reference", ["t5"]), (2, 16))
    suite.check_setting(suite.select_rows("reference", ["t5"]), None)


def test_moe_names_the_moe_rows_and_the_setting_is_recorded_and_kept_apart():
    assert [r.architecture for r in suite.select_rows("sweep", ["moe"])] == [
        a for a in sweep.ARCHS if a in sweep.MOE]
    assert len(sweep.MOE) == 11 and [r.name for r in suite.select_rows("sweep", ["moe", "gpt2"])][0] == "gpt2/float32"
    assert suite.setting_of() == {"batch": None, "tokens": None, "grad": False}
    assert suite.setting_of((2, 16), True) == {"batch": 2, "tokens": 16, "grad": True}
    whole = _sweep_run([_moe_row_result("mixtral", outputs_within_eager_gap=True, eager_gap=2e-7, fixed_gap=1e-7)])
    part = {**_sweep_run(list(whole["rows"])), "setting": suite.setting_of((2, 16))}
    with pytest.raises(ValueError, match="setting differs"):
        suite.merge_remeasured(whole, part)
    # a file without "setting" (made before it was recorded) is the sweep's input
    assert suite.merge_remeasured(whole, {**part, "setting": suite.setting_of()})["rows"]


def test_sweep_cli_keeps_another_setting_apart_from_the_whole_sweep(tmp_path, capsys):
    cli = _sweep_cli()
    results = str(cli.RESULTS)
    assert cli.json_path(tmp_path, "pins") == tmp_path / "sweep-pins.json"
    assert cli.json_path(tmp_path, "pins", "moe-b2t16") == tmp_path / "sweep-moe-b2t16-pins.json"
    args = cli.parse_args(["--rows", "moe", "--batch", "2", "--tokens", "16", "--name", "moe-b2t16"])
    assert (args.shape, args.grad, args.json_dir, args.report) == (
        (2, 16), False, cli.RESULTS, cli.REPO / "docs" / "RESULTS.md")
    assert cli.parse_args(["--rows", "moe", "--grad", "--name", "moe-grad"]).shape is None
    for argv, message in (
            (["--batch", "2"], "need --name or --json-dir"),
            (["--grad", "--json-dir", results], "need --name or --json-dir"),
            (["--rows", "moe"], "--rows needs --json-dir DIR or --name"),
            (["--rows", "moe", "--name", "x", "--merge-into", results], "--merge-into merges into the whole sweep"),
            (["--rows", "moe", "--grad", "--json-dir", str(tmp_path), "--merge-into", results],
             "--merge-into merges into the whole sweep"),
            (["--name", "../x"], "letters, digits"),
            (["--tokens", "0", "--name", "x"], "at least 1")):
        with pytest.raises(SystemExit):
            cli.parse_args(argv)
        assert message in capsys.readouterr().err, argv
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "sweep.py"), "--batch", "2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "need --name or --json-dir" in proc.stderr
