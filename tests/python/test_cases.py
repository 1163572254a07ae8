"""graphmend meets the `# expect:` lines of the handed cases and of the demo model, on real torch.

Each entry runs benchmarks/graph_breaks.py --case, which fixes the file with
build/graphmend and runs original and fixed, eager and compiled, checking every
expectation (see benchmarks/_harness/case_bench.py). Add a case, or a variant with
extra harness arguments, to CASES below.
"""
import pytest

from conftest import REPO, failed_checks, require_graphmend, run_harness

# (file relative to the repository root, extra arguments of graph_breaks.py)
CASES = [
    ("tests/cases/c01_defer_print_fstring.py", []),
    ("tests/cases/c02_defer_logger.py", []),
    # Root logger at DEBUG: the logger.info site is recorded too.
    ("tests/cases/c02_defer_logger.py", ["--log-level", "DEBUG"]),
    ("tests/cases/c03_defer_warnings.py", []),
    ("tests/cases/c04_where_if_else.py", []),
    ("tests/cases/c05_where_else_less.py", []),
    ("tests/cases/c06_where_both_return.py", []),
    ("tests/cases/c07_trap_raise.py", []),
    ("tests/cases/c08_trap_equal.py", []),
    ("tests/cases/c09_mixed_static_and_data.py", []),
    ("tests/cases/c10_refuse_stateful_branch.py", []),
    ("tests/cases/c11_untouched_outside_forward.py", []),
    ("tests/cases/c12_format_preserved.py", []),
    ("tests/cases/c13_where_arith_derived_predicate.py", []),
    ("tests/cases/c14_refuse_none_or_tensor.py", []),
    ("tests/cases/c15_where_helper_predicate.py", []),
    ("tests/cases/c16_refuse_tolist_sizes_reported.py", []),
    ("tests/cases/c17_item_local_predicate.py", []),
    ("tests/cases/c18_training_untaken_param.py", []),
    ("tests/cases/c19_check_inside_branch.py", []),
    ("tests/cases/c20_where_predicate_from_callable_arg.py", []),
    ("tests/cases/c21_where_item_guard_inplace_fresh_local.py", []),
    ("tests/cases/c22_refuse_tensor_slice_bound_reported.py", []),
    ("tests/cases/c23_defer_after_unavoidable_break.py", []),
    ("tests/cases/c23_defer_after_unavoidable_break.py", ["--log-level", "INFO"]),
    ("tests/cases/c24_where_common_effect_hoisted.py", []),
    ("tests/cases/c25_loop_continue_guard_masked_store.py", []),
    ("tests/cases/c26_refuse_value_raising_untaken_branch.py", []),
    ("models/demo_model.py", []),
    # Golden fixtures of the deferred-side-effect rule that carry `# expect:` lines.
    ("tests/fixtures/deferred-side-effect/message_forms.py", ["--log-level", "DEBUG"]),
    ("tests/fixtures/deferred-side-effect/fstring_edges.py", []),
    ("tests/fixtures/deferred-side-effect/lone_effects.py", ["--log-level", "INFO"]),
    ("tests/fixtures/deferred-side-effect/logger_adapter.py", []),
    ("tests/fixtures/predicated-control-flow/forms.py", []),
    ("tests/fixtures/predicated-control-flow/effects.py", ["--log-level", "DEBUG"]),
    ("tests/fixtures/predicated-control-flow/returns.py", []),
    ("tests/fixtures/predicated-control-flow/costly.py", []),
    ("tests/fixtures/predicated-validation/forms.py", []),
    ("tests/fixtures/predicated-validation/helpers.py", []),
    ("tests/fixtures/predicated-control-flow/values.py", []),
    ("tests/fixtures/predicated-control-flow/nested.py", []),
    ("tests/fixtures/predicated-control-flow/early_return_nested.py", []),
    ("tests/fixtures/predicated-control-flow/truth_constants.py", []),
    ("tests/fixtures/predicated-control-flow/branch_reads.py", []),
    ("tests/fixtures/predicated-control-flow/inner_select.py", []),
    ("tests/fixtures/predicated-control-flow/loop_skip.py", []),
    ("tests/fixtures/predicated-control-flow/loop_break.py", []),
    ("tests/fixtures/static-expert-dispatch/dispatch.py", []),
    ("tests/fixtures/static-expert-dispatch/masks.py", []),
    ("tests/fixtures/static-expert-dispatch/hit_rows_unsafe.py", ["--unsafe-fixes"]),
    ("tests/fixtures/static-row-subset/subsets.py", []),
    ("tests/fixtures/host-int-values/levels.py", []),
]


def _id(entry):
    path, extra = entry
    return path.rsplit("/", 1)[-1].split("_")[0] + "".join(a.lower().lstrip("-") for a in extra)


@pytest.mark.slow
@pytest.mark.parametrize("path,extra", CASES, ids=[_id(e) for e in CASES])
def test_case_meets_expectations(path, extra, tmp_path):
    require_graphmend()
    code, result, output = run_harness(["--case", REPO / path, *extra], tmp_path)
    assert result["ok"], f"{path} failed checks:\n{failed_checks(result)}"
    assert code == 0, output
