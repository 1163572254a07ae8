"""Parent side of `graph_breaks.py --model NAME`: graph breaks before/after graphmend.

run_model(name, python, workdir, dtype="float32", calls=1, unsafe_fixes=False, fixed=None, shape=None,
grad=False) -> result dict (the JSON written by --json); both arms convert the model to `dtype` and
call it `calls` times (on inputs of `shape` (batch, tokens) when given, sweep rows only; with
autograd enabled under `grad`, else under torch.no_grad()):
  1. arm "before": a fresh process on the installed package; saves its state_dict
     (after the dtype conversion);
  2. copy the installed package folder (without __pycache__) into workdir/site,
     run `graphmend fix workdir/site/<package>` on the copy in place (fix_package; a caller
     measuring many models may pass `fixed`, a copy it fixed once, instead);
  3. arm "after": a fresh process with PYTHONPATH=workdir/site, loading the
     first arm's state_dict strictly;
  4. compare outputs of every call (bit-equal) and messages (all four streams, in order).
Per arm (suffix _before / _after): graphs, breaks, dynamo_breaks and break_reasons
of the first call; graphs_first_call, recompiles (graphs made by calls 2..N);
break_sites ([{site "file:line", reason, kind (the cause, dynamo.classify), action, gb,
context, call}]) and recompile_reasons; graph_sites (per graph of the first call: ops, first
and last user-code file:line). model_class, model_module, config_class and config
(difference to the class defaults) describe the model the first arm built.
A model the first arm's package lacks (models.NotAvailable) gives not_available (the reason) and
error "not available at this version: <reason>", and nothing is fixed or measured.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import fixer
from .models import get_spec

ARM = Path(__file__).with_name("model_arm.py")
NOT_AVAILABLE = "not available at this version"


def installed_package_dir(python, package):
    """Folder of `package` as imported by interpreter `python` (no PYTHONPATH)."""
    env = _clean_env()
    code = f"import os, {package}; print(os.path.dirname(os.path.realpath({package}.__file__)))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True)
    return Path(out.stdout.strip())


def _clean_env(pythonpath=None):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never leave .pyc in the fixed copy or the venv
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _setting_args(shape=None, grad=False):
    """The arms' (and eager_gap.py's) options for an input shape and autograd."""
    return ((["--batch", str(shape[0]), "--tokens", str(shape[1])] if shape is not None else [])
            + (["--grad"] if grad else []))


def eager_tolerance(python, name, installed, workdir, dtype, leaves_b, leaves_a, shape=None, grad=False):
    """Whether the fixed model's outputs (call 1), when not bit-equal to the original's, are
    within the gap between the original compiled with Inductor and its eager run (eager_gap.py,
    a fresh process). Returns {"within", "eager_gap", "fixed_gap"}: the largest absolute
    difference over the tensors of each pair; all None where it could not be measured.

    Also {"as_accurate", "error_eager", "error_inductor", "error_fixed", "float64_error"}: the
    root mean square error, over every floating element, of the original's eager run, the
    original compiled with Inductor and the fixed model, each against the original run eagerly
    in float64 (benchmarks/moe_gaps.py's measure). "as_accurate" holds when the fixed model's
    error is no larger than the larger of the original's two: the fixed model is then no further
    from the float64 run than the original, eager or compiled, is. The float64 run is a
    reference, not the exact result: a model that casts to float32 inside (a softmax with
    dtype=torch.float32, rotary's .float()) rounds there in it too. None (with the reason in
    "float64_error") where the model does not run in float64."""
    import torch

    out = {"within": None, "eager_gap": None, "fixed_gap": None, "as_accurate": None,
           "error_eager": None, "error_inductor": None, "error_fixed": None, "float64_error": None}
    gap_pt = workdir / "eager-gap.pt"
    cmd = [python, str(Path(__file__).with_name("eager_gap.py")), "--model", name, "--package-root",
           str(installed), "--load-state", str(workdir / "state.pt"), "--out", str(gap_pt), "--dtype", dtype,
           *_setting_args(shape, grad)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env(None), cwd=workdir,
                              timeout=1800)
    except subprocess.TimeoutExpired:
        return out
    if proc.returncode != 0 or not gap_pt.exists():
        return out
    runs = torch.load(gap_pt)
    eager, inductor = dict(runs["eager"]), dict(runs["inductor"])
    after = dict(p_x for p_x in leaves_a if "@call" not in p_x[0])

    def gap(x, y):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or x.shape != y.shape:
            return None if x != y else 0.0
        if torch.equal(x, y):
            return 0.0
        if not (x.is_floating_point() and y.is_floating_point()):
            return float("inf")
        d = (x.double() - y.double()).abs().nan_to_num(nan=float("inf"))
        return float(d.max()) if d.numel() else 0.0

    eager_gap, fixed_gap = 0.0, 0.0
    for path, x in leaves_b:
        if "@call" in path:
            continue
        if path not in eager or path not in inductor or path not in after:
            return out
        e, f = gap(inductor[path], eager[path]), gap(x, after[path])
        if e is None or f is None:
            return out
        eager_gap, fixed_gap = max(eager_gap, e), max(fixed_gap, f)
    out.update({"within": fixed_gap <= eager_gap, "eager_gap": eager_gap, "fixed_gap": fixed_gap})
    if runs.get("float64") is None:
        out["float64_error"] = runs.get("float64_error") or "no float64 run"
        return out
    before = {path: x for path, x in leaves_b if "@call" not in path}
    out.update(accuracy_against_float64(before, eager, inductor, after, dict(runs["float64"])))
    return out


def rms_error(run, double):
    """Root mean square of run - double over every floating leaf of run ({path: leaf}); inf where
    double lacks a leaf or its shape differs."""
    import math

    import torch

    total, count = 0.0, 0
    for path, x in run.items():
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            continue
        y = double.get(path)
        if not isinstance(y, torch.Tensor) or y.shape != x.shape:
            return float("inf")
        d = x.double() - y.double()
        total += float((d * d).sum())
        count += d.numel()
    return math.sqrt(total / max(count, 1))


def accuracy_against_float64(before, eager, inductor, fixed, double):
    """{"as_accurate", "error_eager", "error_inductor", "error_fixed"} (see eager_tolerance), each
    run a {path: leaf} of call 1; an error that is not finite is None. "as_accurate" is None where
    an error is not finite; where a leaf that is not a floating tensor (token ids, a mask, a
    Python value) differs between the original arm's run (before) and the fixed model's, or the
    fixed run lacks one: RMS errors say nothing about those; and where the original arm's run is
    not as accurate as eager_gap.py's eager run: the two would then not be the same computation,
    and the errors would not compare."""
    import math

    import torch

    errors = {"error_eager": rms_error(eager, double), "error_inductor": rms_error(inductor, double),
              "error_fixed": rms_error(fixed, double)}
    out = {"as_accurate": None, **{k: v if math.isfinite(v) else None for k, v in errors.items()}}
    if not all(math.isfinite(v) for v in errors.values()) or rms_error(before, double) != errors["error_eager"]:
        return out

    def same(x, y):
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            return (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dtype == y.dtype
                    and x.shape == y.shape and torch.equal(x, y))
        return x == y

    for path, x in before.items():
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            if path not in fixed or not same(x, fixed[path]):
                return out
    out["as_accurate"] = errors["error_fixed"] <= max(errors["error_eager"], errors["error_inductor"])
    return out


def run_arm(python, name, package_root, workdir, tag, state, save, pythonpath=None, timeout=1800,
            dtype="float32", calls=1, shape=None, grad=False):
    """Run one arm (model_arm.py) in a fresh process; returns (result dict or None, process info)."""
    out_json = workdir / f"{tag}.json"
    out_pt = workdir / f"{tag}-outputs.pt"
    cmd = [python, str(ARM), "--model", name, "--package-root", str(package_root),
           "--out", str(out_json), "--outputs", str(out_pt),
           "--save-state" if save else "--load-state", str(state),
           "--dtype", dtype, "--calls", str(calls), *_setting_args(shape, grad)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env(pythonpath),
                              cwd=workdir, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, {"returncode": "timeout", "stdout": "", "stderr": f"timed out after {timeout}s"}
    info = {"returncode": proc.returncode, "stdout": proc.stdout[-4000:], "stderr": proc.stderr[-4000:]}
    if proc.returncode != 0 or not out_json.exists():
        return None, info
    return json.loads(out_json.read_text()), info


def _copy_package(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def compare_messages(before, after):
    """Per-stream and whole-sequence equality of two arms' recorded messages."""
    keys = ("stdout", "stderr", "warnings", "logs")
    per_stream = {k: before[k] == after[k] for k in keys}
    in_order = before["events"] == after["events"]
    return {"identical": all(per_stream.values()) and in_order, "in_order": in_order, **per_stream}


def fix_package(installed, site, unsafe_fixes=False):
    """Copy package folder `installed` to site/<its name> and fix the copy in place with graphmend.

    Returns (the copy's folder, fixer.FixResult). `site` is emptied first.
    With env GRAPHMEND_FIX_CACHE set to a folder, the fixed copy is made once per key (the
    fixer's bytes, the package's files, `unsafe_fixes`) under that folder and reused, and
    `site` is not used: the tests set it, so that runs of one package share one fix.
    """
    cache = os.environ.get("GRAPHMEND_FIX_CACHE")
    if cache:
        return _cached_fix(Path(cache), Path(installed), unsafe_fixes)
    site = Path(site)
    copy = site / Path(installed).name
    if site.exists():  # a kept work folder from an earlier run
        shutil.rmtree(site)
    _copy_package(installed, copy)
    return copy, fixer.run_fix([copy] + (["--unsafe-fixes"] if unsafe_fixes else []))


def _fix_key(installed, unsafe_fixes):
    """What a fixed copy depends on: the fixer (its files' bytes), the package's .py files
    (names and bytes) and the flag."""
    import hashlib

    h = hashlib.sha256()
    for part in fixer.fixer_command():
        h.update(part.encode() + b"\0")
        if Path(part).is_file():
            h.update(hashlib.sha256(Path(part).read_bytes()).digest())
    h.update(str(installed).encode() + (b"\0unsafe" if unsafe_fixes else b"\0safe"))
    for f in sorted(installed.rglob("*.py")):
        h.update(f"{f.relative_to(installed)}\0".encode() + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:24]


def _cached_fix(cache, installed, unsafe_fixes):
    """fix_package under GRAPHMEND_FIX_CACHE: make cache/<key>/site/<package> once. Under a lock
    per key, so concurrent runs (pytest-xdist's processes) wait for the first instead of fixing
    the package too; made in a temporary folder renamed into place, so an interrupted run never
    leaves half a copy behind."""
    import fcntl
    import tempfile

    entry = cache / _fix_key(installed, unsafe_fixes)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{entry.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (entry / "fix.json").is_file():
            tmp = Path(tempfile.mkdtemp(prefix="making-", dir=cache))
            _copy_package(installed, tmp / "site" / installed.name)
            fix = fixer.run_fix([tmp / "site" / installed.name] + (["--unsafe-fixes"] if unsafe_fixes else []))
            data = fix.to_json()
            # paths in the command and the fixer's output name the copy's final place
            data["cmd"] = [part.replace(str(tmp), str(entry)) for part in data["cmd"]]
            for key in ("stdout", "stderr"):
                data[key] = data[key].replace(str(tmp), str(entry))
            (tmp / "fix.json").write_text(json.dumps(data))
            tmp.rename(entry)
    data = json.loads((entry / "fix.json").read_text())
    return entry / "site" / installed.name, fixer.FixResult(**data)


def run_model(name, python, workdir, dtype="float32", calls=1, unsafe_fixes=False, fixed=None, shape=None,
              grad=False):
    """Measure model `name` in `dtype` over `calls` calls; returns the result dict (module docstring).
    shape: (batch, tokens) of the inputs (None: the spec's own); grad: the calls with autograd enabled.

    fixed: (copy, FixResult) of fix_package for this model's package and `unsafe_fixes`, to reuse;
    None fixes a fresh copy under workdir/site.
    """
    import torch  # parent-side comparison only

    from . import tensors

    spec = get_spec(name)
    workdir = Path(workdir)
    result = {"model": name, "description": spec.description, "dtype": dtype, "calls": calls,
              "unsafe_fixes": unsafe_fixes, "input_shape": list(shape) if shape else None, "grad": grad,
              "ok": False}
    arm_options = {"dtype": dtype, "calls": calls, "shape": shape, "grad": grad}
    installed = installed_package_dir(python, spec.package)

    before, info_b = run_arm(python, name, installed, workdir, "before", workdir / "state.pt", save=True,
                              **arm_options)
    result["arm_before"] = info_b
    if before is None:
        result["error"] = "arm 'before' failed"
        return result
    if "not_available" in before:  # nothing to measure: no fix, no second arm
        result.update({"torch": before["torch"], spec.package: before[spec.package],
                       "not_available": before["not_available"],
                       "error": f"{NOT_AVAILABLE}: {before['not_available']}"})
        return result

    copy, fix = fixed or fix_package(installed, workdir / "site", unsafe_fixes)
    site = copy.parent
    result["graphmend"] = fix.to_json()
    result["graphmend_summary"] = fix.stderr

    after, info_a = run_arm(python, name, copy, workdir, "after", workdir / "state.pt", save=False,
                            pythonpath=site, **arm_options)
    result["arm_after"] = info_a
    if after is None:
        result["error"] = "arm 'after' failed"
        return result

    leaves_b = torch.load(workdir / "before-outputs.pt")
    leaves_a = torch.load(workdir / "after-outputs.pt")
    identical, diff = tensors.compare(leaves_b, leaves_a)
    tensor_pairs = [(x, y) for (_, x), (_, y) in zip(leaves_b, leaves_a)
                    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)]
    torch_equal = len(leaves_b) == len(leaves_a) and all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y) for x, y in tensor_pairs)
    messages = compare_messages(before["messages"], after["messages"])
    tolerance = {"within": None, "eager_gap": None, "fixed_gap": None}
    if not (identical and torch_equal):
        tolerance = eager_tolerance(python, name, installed, workdir, dtype, leaves_b, leaves_a, shape, grad)
    outputs_identical = (identical and torch_equal
                         and before["output_sha256"] == after["output_sha256"]
                         and before["exception"] == after["exception"])
    result.update({
        "torch": before["torch"],
        spec.package: before[spec.package],
        "graphs_before": before["graphs"],
        "graphs_after": after["graphs"],
        "breaks_before": before["breaks"],
        "breaks_after": after["breaks"],
        "dynamo_breaks_before": before["dynamo_breaks"],
        "dynamo_breaks_after": after["dynamo_breaks"],
        "outputs_identical": outputs_identical,
        "outputs_torch_equal": torch_equal,
        "output_sha256_before": before["output_sha256"],
        "output_sha256_after": after["output_sha256"],
        "output_differences": diff,
        "outputs_within_eager_gap": tolerance["within"],
        "eager_gap": tolerance["eager_gap"],
        "fixed_gap": tolerance["fixed_gap"],
        "outputs_as_accurate": tolerance.get("as_accurate"),
        "float64_rms_error": ({k: tolerance.get(k) for k in ("error_eager", "error_inductor", "error_fixed")}
                              if tolerance.get("as_accurate") is not None else None),
        "float64_unavailable": tolerance.get("float64_error"),
        "output_tensors": sum(1 for _ in tensor_pairs),
        "exception_before": before["exception"],
        "exception_after": after["exception"],
        "messages_identical": messages["identical"],
        "messages_comparison": messages,
        "messages_before": before["messages"],
        "messages_after": after["messages"],
        "break_reasons_before": before["break_reasons"],
        "break_reasons_after": after["break_reasons"],
        "graphs_first_call_before": before["graphs_first_call"],
        "graphs_first_call_after": after["graphs_first_call"],
        "recompiles_before": before["recompiles"],
        "recompiles_after": after["recompiles"],
        "break_sites_before": before["break_sites"],
        "break_sites_after": after["break_sites"],
        "graph_sites_before": before["graph_sites"],
        "graph_sites_after": after["graph_sites"],
        "recompile_reasons_before": before["recompile_reasons"],
        "recompile_reasons_after": after["recompile_reasons"],
        "package_file_before": before["package_file"],
        "package_file_after": after["package_file"],
        "model_class": before.get("model_class"),
        "model_module": before.get("model_module"),
        "config_class": before.get("config_class"),
        "config": before.get("config"),
    })
    outputs_ok = outputs_identical or ((tolerance["within"] or tolerance.get("as_accurate"))
                                       and before["output_sha256"] is not None
                                       and before["exception"] == after["exception"])
    result["ok"] = bool(outputs_ok and messages["identical"] and before["exception"] is None
                        and fix.returncode in (0, 1))
    return result


def summary_lines(result):
    """A short human-readable summary of run_model's result."""
    if "graphs_before" not in result:
        return [f"{result['model']}: {result.get('error', 'failed')}"]
    m = result["messages_comparison"]
    lines = [
        f"model {result['model']} ({result['dtype']}, {result['calls']} call(s)"
        + (f", inputs {result['input_shape'][0]} x {result['input_shape'][1]}" if result.get("input_shape") else "")
        + (", autograd enabled" if result.get("grad") else "") + "): "
        f"torch {result['torch']}, transformers {result.get('transformers')}",
        f"  graphs  {result['graphs_before']} -> {result['graphs_after']}   "
        f"breaks {result['breaks_before']} -> {result['breaks_after']}   "
        f"(Dynamo counter {result['dynamo_breaks_before']} -> {result['dynamo_breaks_after']})",
        f"  outputs identical: {result['outputs_identical']} "
        f"({result['output_tensors']} tensors, sha256 {result['output_sha256_before'][:16]}...)"
        + ("" if result["outputs_identical"] else
           f"; within the original's compiled-vs-eager gap: {result.get('outputs_within_eager_gap')} "
           f"(fixed gap {result.get('fixed_gap')}, eager gap {result.get('eager_gap')})"),
        f"  messages identical: {result['messages_identical']} "
        + " ".join(f"{k}={m[k]}" for k in ("stdout", "stderr", "warnings", "logs", "in_order")),
        f"  graphmend exit {result['graphmend']['returncode']} in {result['graphmend']['seconds']}s",
        f"  new graphs in calls 2..N {result['recompiles_before']} -> {result['recompiles_after']}   "
        f"(Dynamo recompiled frames {len(result['recompile_reasons_before'])} -> "
        f"{len(result['recompile_reasons_after'])})",
    ]
    for (call, site, kind, reason), n in grouped_sites(result["break_sites_after"]).items():
        lines.append(f"  left after fix: {n}x {kind} (call {call}) {site}: {reason}")
    return lines


def grouped_sites(sites):
    """{(call, site, kind, reason): count} of a break_sites list, in first-seen order."""
    groups = {}
    for s in sites:
        key = (s["call"], s["site"], s["kind"], s["reason"])
        groups[key] = groups.get(key, 0) + 1
    return groups


def main_model(name, json_path, keep=None, dtype="float32", calls=1, unsafe_fixes=False, shape=None, grad=False):
    """Entry for --model: run, write JSON, print the summary; returns the exit code."""
    import tempfile

    try:
        spec = get_spec(name)
    except KeyError:
        from .models import MODELS

        print(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}, or sweep:ARCH "
              "(graph_breaks.py --suite sweep --list)", file=sys.stderr)
        return 2
    if shape is not None and spec.inputs_at is None:
        print(f"error: {name} makes its inputs at one shape only: --batch and --tokens apply to the sweep's "
              "rows (sweep:ARCH)", file=sys.stderr)
        return 2
    try:
        fixer.fixer_command()
    except fixer.FixerMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # No ':' (sweep:gpt2) in the folder: PYTHONPATH=<it>/site would split there.
    with tempfile.TemporaryDirectory(prefix=f"graphmend-{name.replace(':', '-')}-") as tmp:
        workdir = Path(keep) if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        result = run_model(name, sys.executable, workdir, dtype, calls, unsafe_fixes, shape=shape, grad=grad)
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1))
    for line in summary_lines(result):
        print(line)
    if "not_available" in result:
        return 2
    if "error" in result:
        for key in ("arm_before", "arm_after"):
            if key in result and result[key]["returncode"] != 0:
                print(f"--- {key} stderr:\n{result[key]['stderr']}", file=sys.stderr)
    return 0 if result["ok"] else 1
