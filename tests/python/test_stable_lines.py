"""Nothing in a fixed file goes stale when its code moves (issue 32).

A deferred warning or log record carries the original call's line. The fixed file no longer
writes it as a number: `lambda: None` on the call's line gives it to the runtime, also for a
message deferred with the data-dependent `if` around it (`_graphmend_when`). So a fixed file
edited above the call (a licence header, an import) still reports the line the edited original
reports, eager and compiled. And code copied between files (transformers' `# Copied from`,
which utils/check_copies.py enforces) gets the same rewrite wherever it sits: MT5's copies of
T5's code are still copies after the fix.
"""
import ast
import logging
import re
import shutil
import warnings

import pytest
import torch

from conftest import BINARY, fix_copy, load_module, require_graphmend

MODEL = '''import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger("stable_lines")


class Model(nn.Module):
    def forward(self, x):
        warnings.warn("legacy scaling", FutureWarning)
        logger.warning("input norm %.2f", x.norm())
        if x.sum() > 0:
            warnings.warn("positive input", UserWarning)
        return x * 2
'''

HEADER = "# Copyright the authors.\n# Licensed under the Apache License, Version 2.0.\n\n"


def run(module, compiled):
    """The (line, category) of each warning and the line of each log record, one forward."""
    torch._dynamo.reset()
    model = module.Model()
    fn = torch.compile(model, backend="eager", dynamic=False) if compiled else model
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("stable_lines")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn(torch.ones(3))
    finally:
        logger.removeHandler(handler)
    return [(w.lineno, w.category) for w in caught if w.filename == module.__file__], [r.lineno for r in records]


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_an_edit_above_a_deferred_message_keeps_its_line(tmp_path, compiled):
    require_graphmend()
    original = tmp_path / "model.py"
    original.write_text(MODEL)
    fixed = fix_copy(original, tmp_path, "--isolated", "--runtime", "inline")
    text = fixed.read_text()
    assert "_graphmend_warn(lambda: None" in text and "_graphmend_log(" in text, text
    assert '"warn", (lambda: None,)' in text, text  # the one under the data-dependent `if`
    assert not re.search(r"_graphmend_(warn|log|when)\([^\n]*\b1[2-5]\b", text), "a line written as a number"
    # The same edit above the call in both files.
    edited_original = tmp_path / "edited_model.py"
    edited_original.write_text(HEADER + MODEL)
    edited_fixed = tmp_path / "edited_model_fixed.py"
    edited_fixed.write_text(HEADER + text)
    want = run(load_module(edited_original, f"stable_orig_{compiled}"), compiled)
    got = run(load_module(edited_fixed, f"stable_fixed_{compiled}"), compiled)
    assert want == ([(15, FutureWarning), (18, UserWarning)], [16]), want  # the edit moved the calls 3 lines down
    assert got == want
    if compiled:  # and the line costs no break: Dynamo reads it from the lambda while tracing
        torch._dynamo.reset()
        explained = torch._dynamo.explain(load_module(edited_fixed, "stable_explained").Model())(torch.ones(3))
        assert explained.graph_break_count == 0 and explained.graph_count == 1, explained.break_reasons


def copies(module_text, prefix):
    """{name: source} of the top-level classes and functions whose `# Copied from` comment names
    transformers.models.t5.modeling_t5, with each `with A->B` replacement undone (B -> A)."""
    lines = module_text.splitlines(keepends=True)
    out = {}
    for node in ast.parse(module_text).body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            continue
        comment = lines[node.lineno - 2] if node.lineno >= 2 else ""
        m = re.match(r"#\s*Copied from transformers\.models\.t5\.modeling_t5\.(\S+)(?: with (.*))?", comment.strip())
        if not m:
            continue
        source = "".join(lines[node.lineno - 1:node.end_lineno])
        for pair in (m[2] or "").split(","):
            if "->" in pair:
                a, b = (p.strip() for p in pair.split("->", 1))
                source = source.replace(b, a)
        out[m[1]] = source
    return out


@pytest.mark.slow
def test_copied_code_gets_the_same_rewrite(tmp_path):
    """transformers 4.52.4's MT5 copies T5's attention and layers (`# Copied from ... with
    T5->MT5`); fixed, each copy is still T5's fixed code with the names replaced."""
    require_graphmend()
    import transformers

    models = __import__("pathlib").Path(transformers.__file__).parent / "models"
    for name in ("t5", "mt5"):
        shutil.copytree(models / name, tmp_path / "in" / name)
    import subprocess

    subprocess.run([str(BINARY), "fix", str(tmp_path / "in"), "--isolated", "--runtime", "inline"], check=True,
                   capture_output=True)
    t5 = (tmp_path / "in" / "t5" / "modeling_t5.py").read_text()
    mt5 = (tmp_path / "in" / "mt5" / "modeling_mt5.py").read_text()
    assert "_graphmend_" in t5 and "_graphmend_" in mt5, "nothing was fixed"
    t5_objects = {}
    for node in ast.parse(t5).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            t5_objects[node.name] = "".join(t5.splitlines(keepends=True)[node.lineno - 1:node.end_lineno])
    copied = copies(mt5, "MT5")
    assert copied, "no `# Copied from` in modeling_mt5.py"
    rewritten = [name for name in copied if "_graphmend_" in copied[name]]
    assert rewritten, "no copied object holds a rewrite"
    for name, source in copied.items():
        assert source == t5_objects[name.split(".")[0]], name
