"""The knowledge layer's tables (src/knowledge/) name torch ops, torch.nn classes, Dynamo's APIs,
logging and warnings APIs and Python builtins, each entry with where it is defined: a torch
function, a Tensor method, torch.nn.functional, a torch.ops custom op (`torchvision::nms`), a
dotted name, a builtin, ... build/graphmend_knowledge (tools/knowledge.cpp) prints every table,
and each entry must exist in each place it names, in the installed torch (2.12.1 with
torchvision 0.27.1 and transformers 4.52.4, requirements-verify.txt): a misspelled op, or one
torch does not have, would make a rule match nothing, or match what is not the op it means."""
import ast
import builtins
import importlib
import io
import json
import logging
import subprocess

import pytest
import torch
import torch.nn.functional as F

from conftest import REPO

TOOL = REPO / "build" / "graphmend_knowledge"

# Packages a table names that the test environment does not install: their dotted names are
# checked only for their package (accelerate's and diffusers' get_logger, src/knowledge/loggers.cpp;
# scipy's quad and the modules of Dynamo's third-party skip list, src/knowledge/untraceable.cpp,
# which test_skipped_modules_are_dynamos_skip_list checks against torch instead).
NOT_INSTALLED = {"accelerate", "diffusers", "scipy", "fx2trt_oss", "hypothesis", "networkx", "onnx", "onnx_tf",
                 "onnxruntime", "pandas", "sklearn", "tabulate", "tensorflow", "tensorrt", "torch2trt", "tree",
                 "tvm", "xarray"}


def tables():
    if not TOOL.is_file():
        pytest.fail(f"{TOOL} does not exist: build the tests (it is built with them) first", pytrace=False)
    out = subprocess.run([str(TOOL)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tables"]


def resolve(dotted):
    """(True, obj) when the dotted name resolves; (False, why) otherwise."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for j, part in enumerate(parts[i:], start=i):
            if not hasattr(obj, part):
                return False, f"{'.'.join(parts[:j])} has no {part}"
            obj = getattr(obj, part)
        return True, obj
    return False, f"no module {parts[0]}"


def custom_op(name):
    namespace, op = name.split("::")
    if namespace == "torchvision":
        importlib.import_module("torchvision")  # registers torch.ops.torchvision
    return hasattr(getattr(torch.ops, namespace), op)


def is_module_class(name):
    cls = getattr(torch.nn, name, None)
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module)


def is_operator(name):
    try:
        return isinstance(ast.parse(f"a {name} b", mode="eval").body, ast.BinOp)
    except SyntaxError:
        return False


def logger_has(name):
    importlib.import_module("transformers.utils.logging")  # adds logging.Logger.warning_once
    return hasattr(logging.Logger, name)


PLACES = {
    "torch": lambda n: hasattr(torch, n),
    "torch.Tensor": lambda n: hasattr(torch.Tensor, n),
    "torch.nn.functional": lambda n: hasattr(F, n),
    "torch.linalg": lambda n: hasattr(torch.linalg, n),
    "torch.nn": is_module_class,
    "torch.nn.Module": lambda n: hasattr(torch.nn.Module, n),
    "torch.ops": custom_op,
    "builtins": lambda n: hasattr(builtins, n),
    "list": lambda n: hasattr(list, n),
    "dict": lambda n: hasattr(dict, n),
    "set": lambda n: hasattr(set, n),
    "file": lambda n: hasattr(io.TextIOBase, n),
    "logging.Logger": logger_has,
    "operator": is_operator,
}


def missing(name, where):
    """Why an entry `name` that says it is defined in each of `where` is not, or None."""
    if not where:
        return "names no place"
    problems = []
    for place in where:
        if place == "older_torch":
            continue  # with "dotted", below
        if place == "dotted":
            if name.split(".")[0] in NOT_INSTALLED:
                continue
            found, why = resolve(name)
            if "older_torch" in where:
                # A spelling an older torch had: its module is there, the name is gone.
                parent, _, _ = name.rpartition(".")
                if found:
                    problems.append(f"{name} exists in torch {torch.__version__}: drop older_torch")
                elif not resolve(parent)[0]:
                    problems.append(f"no {parent}")
            elif not found:
                problems.append(why)
        elif place not in PLACES:
            problems.append(f"unknown place {place}")
        elif not PLACES[place](name):
            problems.append(f"not in {place}")
    return "; ".join(problems) or None


def test_every_entry_exists_where_it_says():
    problems = []
    for table in tables():
        assert table["entries"], f"{table['name']} is empty"
        for entry in table["entries"]:
            why = missing(entry["name"], entry["where"])
            if why:
                problems.append(f"{table['name']}: {entry['name']} ({', '.join(entry['where'])}): {why}")
    assert not problems, f"torch {torch.__version__}:\n" + "\n".join(problems)


def test_the_check_finds_what_torch_does_not_have():
    # What a misspelled or invented entry looks like to the check.
    assert missing("nonzero", ["torch", "torch.Tensor"]) is None
    assert missing("nonzeros", ["torch"]) == "not in torch"
    assert missing("gelu", ["torch.Tensor"]) == "not in torch.Tensor"
    assert missing("gelu_new", ["torch.nn.functional"]) == "not in torch.nn.functional"
    assert missing("torchvision::nms", ["torch.ops"]) is None
    assert missing("torchvision::nmss", ["torch.ops"]) == "not in torch.ops"
    assert missing("Linear", ["torch.nn"]) is None and missing("linear", ["torch.nn"]) == "not in torch.nn"
    assert missing("torch.compiler.disable", ["dotted"]) is None
    assert missing("torch.compiler.disabled", ["dotted"]) == "torch.compiler has no disabled"
    assert missing("transformer.utils.logging.get_logger", ["dotted"]) == "no module transformer"
    assert missing("torch._dynamo.eval_frame.disable", ["dotted", "older_torch"]) is None
    assert missing("torch._dynamo.disable", ["dotted", "older_torch"]).endswith("drop older_torch")
    assert missing("warning_once", ["logging.Logger"]) is None
    assert missing("//", ["operator"]) is None and missing("///", ["operator"]) == "not in operator"
    assert missing("abs", []) == "names no place"


def test_the_tables_have_names_and_sources():
    names = [t["name"] for t in tables()]
    assert len(names) == len(set(names))
    assert all(t["source"] for t in tables())
    assert {"size_arguments", "dynamic_shape_ops", "value_raising_ops", "logger_methods"} <= set(names)


def test_skipped_modules_are_dynamos_skip_list():
    """GM402's modules are THIRDPARTY_SKIPLIST of the torch installed, less numpy (traced
    through torch._numpy)."""
    from torch._dynamo import trace_rules

    listed = {t["name"]: [e["name"] for e in t["entries"]] for t in tables()}
    assert set(listed["skipped_modules"]) == set(trace_rules.THIRDPARTY_SKIPLIST) - {"numpy"}


@pytest.fixture(scope="module")
def settings_measured():
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import dynamo_settings
    finally:
        sys.path.pop(0)
    return dynamo_settings.KINDS, dynamo_settings.measure()


@pytest.mark.slow
def test_dynamo_settings_do_what_the_help_lines_say(settings_measured, tmp_path):
    """knowledge::setting_for (src/knowledge/dynamo_settings.cpp) against the torch installed,
    measured by benchmarks/dynamo_settings.py: each kind breaks without a setting; the setting
    GM401's help line names removes every break of its kind, the other does not; the kinds with
    no setting break under both; and a Python test on a captured value or size still breaks (the
    cost the help line states)."""
    kinds, m = settings_measured
    # A call that raises counts as not removed (torch 2.12.1: narrow with a captured start makes
    # Dynamo raise InternalTorchDynamoError).
    removed = {s: {n: r["graph_breaks"] == 0 and not r["error"] for n, r in rows.items()} for s, rows in m.items()}
    errors = [(s, n, r["error"]) for s, rows in m.items() for n, r in rows.items()
              if r["error"] and not (s == "capture_scalar_outputs" and n == "narrow_start")]
    assert not errors, errors
    removes = {"ScalarRead": "capture_scalar_outputs", "DynamicShape": "capture_dynamic_output_shape_ops"}
    for kind, names in kinds.items():
        for name in names:
            assert not removed["none"][name], (kind, name)
            for setting in ("capture_scalar_outputs", "capture_dynamic_output_shape_ops"):
                assert removed[setting][name] == (removes.get(kind) == setting), (kind, name, setting, m)
    # The help lines name those settings, and none for the other kinds.
    src = tmp_path / "m.py"
    src.write_text(
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        s = x.sum().item()\n        idx = x.nonzero()\n        while x.sum() < 10:\n"
        "            x = x * 2\n        return x * s, idx\n")
    out = subprocess.run([str(REPO / "build" / "graphmend"), "check", str(src)], capture_output=True, text=True)
    helps = [line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip().startswith("help:")]
    assert len(helps) == 3, out.stdout + out.stderr
    assert "capture_scalar_outputs = True" in helps[0] and "still breaks" in helps[0], helps
    assert "capture_dynamic_output_shape_ops = True" in helps[1] and "still breaks" in helps[1], helps
    assert "no Dynamo setting removes it" in helps[2], helps
