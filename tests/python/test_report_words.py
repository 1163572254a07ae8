"""Reasons are written for people and name the cause: no grammar node names, the op Dynamo
breaks on, and only what is a size called a size. Through build/graphmend; the GM401 lines are
checked against Dynamo (torch 2.12.1)."""
import re

import torch

from conftest import REPO, check_sites, load_module, require_graphmend

GRAMMAR = re.compile(r"`?\b[a-z]+_(statement|expression|definition|clause|operator|pattern|list)\b`?")


check = check_sites


def test_no_reason_names_a_grammar_node():
    require_graphmend()
    sites = check(REPO / "tests" / "fixtures", REPO / "tests" / "cases")
    assert len(sites) > 300
    named = [f"{path}:{s['line']}: {s['reason']}" for path, s in sites if GRAMMAR.search(s.get("reason") or "")]
    assert not named, "\n".join(named)


def test_a_state_update_before_a_check_says_what_it_does(tmp_path):
    require_graphmend()
    model = tmp_path / "m.py"
    model.write_text("import sys\nimport torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
                     "    def forward(self, x):\n        sys.stdout.write('hi\\n')\n"
                     "        if torch.isnan(x).any():\n            raise ValueError('nan')\n        return x\n")
    (site,) = [s for _, s in check(model)]
    assert site["status"] == "refused"
    assert site["reason"].startswith("line 8 calls sys.stdout.write() before the check, a call that may have effects")


def test_sizes_are_sizes_and_bincount_is_named():
    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "data-dependent-shape" / "fill_values.py"
    sites = {s["line"]: s for _, s in check(fixture)}
    assert sorted(sites) == [15, 16]
    assert sites[15]["graph_break"] == "GB0036" and "`bincount`" in sites[15]["reason"]
    assert sites[16]["graph_break"] == "GB0124" and sites[16]["reason"].startswith("`n` is a tensor used as a size")
    module = load_module(fixture, "fill_values_orig")
    torch._dynamo.reset()
    explained = torch._dynamo.explain(module.Model())(torch.tensor([[1, 2], [3, 3]]), torch.tensor(2))
    breaks = sorted({r.user_stack[-1].lineno for r in explained.break_reasons if r.user_stack})
    assert breaks[0] == 15  # nothing breaks on lines 12-14: the fill values and linspace's ends are traced


def test_logspace_and_randint_sizes_are_reported_where_dynamo_breaks():
    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "data-dependent-shape" / "size_factories.py"
    reported = sorted(s["line"] for _, s in check(fixture))
    module = load_module(fixture, "size_factories_orig")
    breaks = []
    for name in ("LogspaceEnds", "LogspaceSteps", "RandintSize", "RandintHigh"):
        torch._dynamo.reset()
        explained = torch._dynamo.explain(getattr(module, name)())(torch.tensor([1.0, -1.0, 2.0]))
        breaks += [r.user_stack[-1].lineno for r in explained.break_reasons
                   if r.user_stack and r.reason.startswith("Data dependent operator")]
    assert reported == sorted(set(breaks)) == [19, 25, 31]


def test_nms_is_a_dynamic_shape_op_where_dynamo_breaks():
    require_graphmend()
    fixture = REPO / "tests" / "fixtures" / "data-dependent-shape" / "nms.py"
    sites = {s["line"]: s for _, s in check(fixture)}
    assert all(s["graph_break"] == "GB0036" for s in sites.values())
    module = load_module(fixture, "nms_orig")
    torch.manual_seed(0)
    boxes = torch.rand(8, 4) * 10
    boxes[:, 2:] += boxes[:, :2]
    breaks = []
    for name in ("Nms", "BatchedNms", "CustomOp"):
        torch._dynamo.reset()
        explained = torch._dynamo.explain(getattr(module, name)())(boxes, torch.randn(8), torch.tensor([0, 1] * 4))
        breaks += [r.user_stack[0].lineno for r in explained.break_reasons
                   if r.user_stack and r.user_stack[0].filename == str(fixture)
                   and r.reason.startswith("Dynamic shape operator")]
    assert sorted(sites) == sorted(set(breaks)) == [15, 21, 27]


def test_a_logger_that_is_no_logging_logger_is_refused_and_named(tmp_path):
    # accelerate's get_logger returns a LoggerAdapter, which has no makeRecord or handle: the
    # runtime's replay of a deferred record would raise. transformers' get_logger returns a
    # logging.Logger and is deferred (src/knowledge/loggers.cpp).
    require_graphmend()
    model = tmp_path / "m.py"
    model.write_text("from accelerate.logging import get_logger\nfrom transformers.utils import logging\n"
                     "from torch import nn\n\nlogger = get_logger(__name__)\nhf_logger = logging.get_logger(__name__)\n"
                     "\n\nclass Model(nn.Module):\n    def forward(self, x):\n        logger.info('a')\n"
                     "        hf_logger.info('b')\n        return x * 2\n")
    sites = {s["line"]: s for _, s in check(model)}
    assert sites[11]["status"] == "refused"
    assert "accelerate.logging, which returns no logging.Logger" in sites[11]["reason"]
    assert sites[12]["status"] == "fixable"
