"""Parent side of `graph_breaks.py --case PATH`: fix one file, run it, check its expectations.

run_case(path, workdir, python, log_level, grad) -> result dict (the JSON of --json):
  1. copy PATH to workdir/original/NAME, run `graphmend fix original/NAME -o fixed/NAME`;
  2. four fresh processes (case_arm.py): original eager (draws the inputs and saves
     them with the state_dict), then side by side original compiled, fixed eager and
     fixed compiled (these load both, the state strictly). Calls run under
     torch.no_grad() unless grad; every arm has OMP_NUM_THREADS=1;
  3. evaluate the checks listed below; result["ok"] is True when all pass, and
     result["failed"] names the ones that did not.

Checks from `# expect:` lines (tests/cases/README.md) and checks that always run:
  graphmend     exit 0 and the output file written; -o leaves its input as it was
  arms          all four arms ran their calls (module loaded, Model() built)
  outputs       per input function, fixed == original bit for bit (and the same
                exception, if any), eager vs eager and compiled vs compiled
  messages      setup messages equal; per call the whole ordered event list
                (stdout, stderr, warnings, log records) of fixed eager and of fixed
                compiled equals original eager: same text, order and count per call
  state         module buffers after all calls, fixed == original, per mode
  graphs-after  N: every input function's compiled call of the fixed file makes N graphs
                (for N = 1 also Dynamo's break counter must be 0: a break before the
                first tensor op leaves an empty prefix that makes no graph)
  stdout|stderr|warnings|logs  identical: that stream alone, as for `messages`
  raises        T: M: the original eager call on other_inputs() raises T(M), and the
                fixed file does so eagerly and compiled
  untouched     true: fixed file byte-identical to the input
  refused       graphmend's summary reports a nonzero refused count; when the value
                starts with "unless", a rewritten file whose outputs and state checks
                pass is accepted too
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import expect as expect_mod
from . import fixer

ARM = Path(__file__).with_name("case_arm.py")
STREAMS = ("stdout", "stderr", "warnings", "logs")
ARMS = (("orig-eager", "original", "eager"), ("orig-compiled", "original", "compiled"),
        ("fixed-eager", "fixed", "eager"), ("fixed-compiled", "fixed", "compiled"))


class Check:
    """One named pass/fail verdict with details (strings) for the JSON and messages."""

    def __init__(self, name, source, expectation=None):
        self.name = name
        self.source = source  # "expect" or "general"
        self.expectation = expectation
        self.ok = True
        self.details = []

    def fail(self, detail):
        self.ok = False
        self.details.append(detail)

    def note(self, detail):
        self.details.append(detail)

    def to_json(self):
        return {"name": self.name, "source": self.source, "expect": self.expectation,
                "ok": self.ok, "details": self.details}


# ----------------------------------------------------------------------------- arms

def _env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


def run_arms(python, original, fixed, workdir, log_level=None, grad=False, timeout=600):
    """Run the four arms; returns {tag: arm}.

    arm = {"returncode", "stderr", "result" (JSON dict or None), "tensors" (path or None)}.
    Original eager runs first (it draws the inputs and saves the state); the other
    three then run side by side. Every arm gets OMP_NUM_THREADS=1, so reductions
    split the same way in all of them whatever the machine.
    """
    state, inputs = workdir / "state.pt", workdir / "inputs.pt"

    def run(tag, which, mode):
        path = original if which == "original" else fixed
        if not path.exists():
            return {"returncode": None, "stderr": f"{path} missing", "result": None, "tensors": None}
        out, tens = workdir / f"{tag}.json", workdir / f"{tag}.pt"
        cmd = [python, str(ARM), "--case", str(path), "--mode", mode,
               "--out", str(out), "--tensors", str(tens)]
        if tag == "orig-eager":
            cmd += ["--save-state", str(state), "--save-inputs", str(inputs)]
        else:
            cmd += ["--load-state", str(state), "--load-inputs", str(inputs)]
        if log_level:
            cmd += ["--log-level", log_level]
        if grad:
            cmd.append("--grad")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=workdir,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"returncode": "timeout", "stderr": f"timed out after {timeout}s",
                    "result": None, "tensors": None}
        return {"returncode": proc.returncode, "stderr": proc.stderr[-4000:],
                "result": json.loads(out.read_text()) if out.exists() else None,
                "tensors": str(tens) if tens.exists() and proc.returncode == 0 else None}

    arms = {"orig-eager": run(*ARMS[0])}
    if arms["orig-eager"]["returncode"] != 0:
        return arms  # nothing for the other arms to load
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        futures = {spec[0]: pool.submit(run, *spec) for spec in ARMS[1:]}
    arms.update({tag: future.result() for tag, future in futures.items()})
    return arms


def _calls(arm):
    """{input function: call dict} of an arm that ran, else {}."""
    result = arm.get("result") if arm else None
    return {c["input"]: c for c in result["calls"]} if result else {}


def _tensors(arm):
    import torch

    return torch.load(arm["tensors"]) if arm and arm.get("tensors") else None


# --------------------------------------------------------------------------- checks

def check_graphmend(fix, original_bytes, original, fixed):
    c = Check("graphmend", "general")
    if fix.returncode != 0:
        c.fail(f"graphmend exit {fix.returncode}: {fix.stderr.strip()[-800:]}")
    if not fixed.exists():
        c.fail("graphmend wrote no output file")
    if original.read_bytes() != original_bytes:
        c.fail("`fix IN -o OUT` modified IN")
    return c


def check_arms(arms):
    c = Check("arms", "general")
    for tag, _, _ in ARMS:
        arm = arms.get(tag)
        if arm is None:
            c.fail(f"{tag}: not run (orig-eager failed)")
        elif arm["returncode"] != 0:
            setup = (arm.get("result") or {}).get("setup") or {}
            exc = setup.get("exception")
            why = f"{exc['type']}: {exc['message']}" if exc else arm["stderr"].strip()[-800:]
            c.fail(f"{tag}: exit {arm['returncode']}: {why}")
    return c


def check_outputs(arms, expectation=None):
    from . import tensors

    c = Check("outputs", "expect" if expectation else "general", expectation)
    for ref_tag, new_tag in (("orig-eager", "fixed-eager"), ("orig-compiled", "fixed-compiled")):
        ref, new = _tensors(arms.get(ref_tag)), _tensors(arms.get(new_tag))
        if ref is None or new is None:
            c.fail(f"{new_tag} vs {ref_tag}: no outputs to compare")
            continue
        ref_calls, new_calls = _calls(arms[ref_tag]), _calls(arms[new_tag])
        for name, ref_out in ref["outputs"].items():
            same, diff = tensors.compare(ref_out, new["outputs"].get(name, []))
            if not same:
                c.fail(f"{name} {new_tag} vs {ref_tag}: " + "; ".join(diff))
            ref_exc = _exc_text(ref_calls.get(name))
            new_exc = _exc_text(new_calls.get(name))
            if ref_exc != new_exc:
                c.fail(f"{name} {new_tag} vs {ref_tag}: exception {new_exc} != {ref_exc}")
    return c


def _exc_text(call):
    exc = call and call.get("exception")
    return f"{exc['type']}: {exc['message']}" if exc else None


def _stream_view(messages, stream):
    """The part of a recorded message dict one check compares."""
    return messages["events"] if stream is None else messages[stream]


def check_messages(arms, stream=None, expectation=None):
    """Compare fixed eager and fixed compiled against original eager, per call.

    stream None compares the whole ordered event list (and the setup messages).
    """
    name = stream or "messages"
    c = Check(name, "expect" if expectation else "general", expectation)
    ref_arm = arms.get("orig-eager") or {}
    ref = _calls(ref_arm)
    if not ref:
        c.fail("original eager arm did not run")
        return c
    if stream is not None and not any(_stream_view(call["messages"], stream) for call in ref.values()):
        c.note(f"the original emitted nothing on {stream} (the check only shows nothing was added)")
    for tag in ("fixed-eager", "fixed-compiled"):
        new = _calls(arms.get(tag))
        if not new:
            c.fail(f"{tag}: did not run")
            continue
        if stream is None:
            a = ref_arm["result"]["setup"]["messages"]["events"]
            b = arms[tag]["result"]["setup"]["messages"]["events"]
            if a != b:
                c.fail(f"{tag}: module load / Model() messages: {first_difference(b, a)}")
        for fn, call in ref.items():
            want = _stream_view(call["messages"], stream)
            got = _stream_view(new[fn]["messages"], stream) if fn in new else None
            if got != want:
                c.fail(f"{fn} {tag} vs original eager: {first_difference(got, want)}")
    return c


def first_difference(got, want):
    """Where two message views (lists of events or stream text) first differ, in words."""
    if isinstance(got, str) and isinstance(want, str):
        got, want = got.splitlines(keepends=True), want.splitlines(keepends=True)
        unit = "line"
    else:
        got, want, unit = list(got or []), list(want or []), "event"
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"{unit} {i}: got {_short(g)}, want {_short(w)} ({len(got)} vs {len(want)} {unit}s)"
    extra, which = (got[len(want):], "extra") if len(got) > len(want) else (want[len(got):], "missing")
    return f"{len(extra)} {which} {unit}(s) after {min(len(got), len(want))}: {_short(extra[0])}"


def _short(value, limit=400):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def check_state(arms, expectation=None):
    from . import tensors

    c = Check("state", "expect" if expectation else "general", expectation)
    for ref_tag, new_tag in (("orig-eager", "fixed-eager"), ("orig-compiled", "fixed-compiled")):
        ref, new = _tensors(arms.get(ref_tag)), _tensors(arms.get(new_tag))
        if ref is None or new is None:
            c.fail(f"{new_tag} vs {ref_tag}: no buffers to compare")
            continue
        same, diff = tensors.compare(ref["buffers"], new["buffers"])
        if not same:
            c.fail(f"buffers {new_tag} vs {ref_tag}: " + "; ".join(diff))
    return c


def check_graphs_after(arms, value, expectation):
    c = Check("graphs-after", "expect", expectation)
    try:
        want = int(value)
    except ValueError:
        c.fail(f"not a number: {value!r}")
        return c
    calls = _calls(arms.get("fixed-compiled"))
    if not calls:
        c.fail("fixed compiled arm did not run")
    # `want` is the count on an input whose path reaches every break that stays; an input
    # whose path skips one (c23's first call, before anything is cached) may make fewer, never
    # none (a frame Dynamo skips makes no graph at all).
    for fn, call in calls.items():
        reasons = _reasons(call["break_reasons"])
        if not 1 <= call["graphs"] <= want:
            c.fail(f"{fn}: {_plural(call['graphs'], 'graph')}, want {want} (Dynamo break reasons: {reasons})")
        elif want == 1 and call["dynamo_breaks"]:
            # A break before the first tensor op leaves an empty prefix and no extra graph.
            c.fail(f"{fn}: 1 graph but Dynamo counted {call['dynamo_breaks']} break(s): {reasons}")
        else:
            c.note(f"{fn}: {_plural(call['graphs'], 'graph')}, {_plural(call['dynamo_breaks'], 'Dynamo break')}")
    return c


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _reasons(break_reasons):
    """'first line of reason (xN); ...' for a {reason: count} dict."""
    return "; ".join(f"{r.splitlines()[0]} (x{n})" for r, n in break_reasons.items()) or "none counted"


def check_raises(arms, value, expectation):
    c = Check("raises", "expect", expectation)
    want = "{}: {}".format(*expect_mod.parse_raises(value))
    for tag in ("orig-eager", "fixed-eager", "fixed-compiled", "orig-compiled"):
        calls = _calls(arms.get(tag))
        call = calls.get("other_inputs")
        if call is None:
            c.fail(f"{tag}: no other_inputs() call" if calls else f"{tag}: did not run")
            continue
        got = _exc_text(call)
        if tag == "orig-compiled":  # informative: the original's own compiled behaviour
            c.note(f"{tag}: raised {got}")
        elif got != want:
            c.fail(f"{tag}: raised {got}, want {want}")
    return c


def check_untouched(original_bytes, fixed, expectation):
    c = Check("untouched", "expect", expectation)
    if not fixed.exists():
        c.fail("no fixed file")
    elif fixed.read_bytes() != original_bytes:
        c.fail("fixed file differs from the input")
    return c


def check_refused(fix, value, original_bytes, fixed, outputs_ok, state_ok, expectation):
    c = Check("refused", "expect", expectation)
    count = fixer.refused_count(fix.stderr)
    changed = fixed.exists() and fixed.read_bytes() != original_bytes
    if count > 0:
        c.note(f"graphmend reports {count} refused")
        if changed and not (outputs_ok and state_ok):
            c.fail("reported refused but rewrote the file and changed its behaviour")
    elif value.lower().startswith("unless") and changed and outputs_ok and state_ok:
        c.note("not refused: rewritten with identical outputs and state (allowed by the expectation)")
    else:
        c.fail(f"graphmend's summary reports no refused site: {fix.stderr.strip()[-400:]!r}")
    return c


# ---------------------------------------------------------------------------- runner

def check_training(python, original, fixed, workdir, e, timeout=600):
    """`gradients: identical` / `training: identical`, run by _harness/train_arm.py."""
    c = Check(e.key, "expect", e.text)
    if not e.value.lower().startswith("identical"):
        c.fail(f"unsupported value {e.value!r}")
        return c
    out = workdir / f"{e.key}.json"
    cmd = [python, "-m", "_harness.train_arm", str(original), str(fixed), "--key", e.key, "--out", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=timeout,
                              cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        c.fail(f"timed out after {timeout}s")
        return c
    if proc.returncode != 0 or not out.exists():
        c.fail(f"train_arm exited {proc.returncode}: {proc.stderr[-1500:]}")
        return c
    result = json.loads(out.read_text())
    for d in result["details"]:
        c.fail(d)
    return c


def run_case(path, workdir, python=sys.executable, log_level=None, grad=False, unsafe_fixes=False):
    """Fix and run one case file (with `graphmend fix --unsafe-fixes` when unsafe_fixes);
    returns the result dict (see module docstring)."""
    path = Path(path).resolve()
    workdir = Path(workdir)
    original_bytes = path.read_bytes()
    expectations = expect_mod.parse(original_bytes.decode("utf-8"))
    original, fixed = workdir / "original" / path.name, workdir / "fixed" / path.name
    for p in (original, fixed):
        if p.parent.exists():
            shutil.rmtree(p.parent)
        p.parent.mkdir(parents=True)
    original.write_bytes(original_bytes)

    fix = fixer.run_fix([original, "-o", fixed] + (["--unsafe-fixes"] if unsafe_fixes else []))
    arms = run_arms(python, original, fixed, workdir, log_level, grad)

    checks = [check_graphmend(fix, original_bytes, original, fixed), check_arms(arms)]
    by_key = {e.key: e for e in expectations}
    outputs = check_outputs(arms, by_key.get("outputs") and by_key["outputs"].text)
    state = check_state(arms, by_key.get("state") and by_key["state"].text)
    checks += [outputs, check_messages(arms), state]
    for e in expectations:
        if e.key == "graphs-after":
            checks.append(check_graphs_after(arms, e.value, e.text))
        elif e.key in STREAMS:
            checks.append(_identical_only(check_messages, e, arms, stream=e.key, expectation=e.text))
        elif e.key == "raises":
            checks.append(check_raises(arms, e.value, e.text))
        elif e.key == "untouched":
            c = check_untouched(original_bytes, fixed, e.text)
            if e.value.lower() != "true":
                c.fail(f"unsupported value {e.value!r}")
            checks.append(c)
        elif e.key == "refused":
            checks.append(check_refused(fix, e.value, original_bytes, fixed, outputs.ok, state.ok, e.text))
        elif e.key in ("gradients", "training"):
            checks.append(check_training(python, original, fixed, workdir, e))
        elif e.key in ("outputs", "state"):
            c = outputs if e.key == "outputs" else state
            if not e.value.lower().startswith("identical"):
                c.fail(f"unsupported value {e.value!r}")
        else:
            c = Check(e.key, "expect", e.text)
            c.fail(f"unknown expectation key {e.key!r}")
            checks.append(c)

    result = _result(path, expectations, fix, arms, checks)
    result["settings"] = {"log_level": log_level, "grad": grad}
    return result


def _identical_only(func, e, arms, **kw):
    c = func(arms, **kw)
    if not e.value.lower().startswith("identical"):
        c.fail(f"unsupported value {e.value!r}")
    return c


def _graph_counts(arm):
    return {fn: call.get("graphs") for fn, call in _calls(arm).items()}


def _result(path, expectations, fix, arms, checks):
    before, after = _graph_counts(arms.get("orig-compiled")), _graph_counts(arms.get("fixed-compiled"))
    head = "example_inputs"
    failed = [c.name for c in checks if not c.ok]
    return {
        "case": path.name,
        "file": str(path),
        "expectations": [e.text for e in expectations],
        "ok": not failed,
        "failed": failed,
        "graphs_before": before.get(head),
        "graphs_after": after.get(head),
        "breaks_before": before[head] - 1 if before.get(head) else None,
        "breaks_after": after[head] - 1 if after.get(head) else None,
        "graphs_before_per_input": before,
        "graphs_after_per_input": after,
        "break_reasons_before": {fn: c.get("break_reasons") for fn, c in _calls(arms.get("orig-compiled")).items()},
        "break_reasons_after": {fn: c.get("break_reasons") for fn, c in _calls(arms.get("fixed-compiled")).items()},
        "checks": [c.to_json() for c in checks],
        "graphmend": fix.to_json(),
        "graphmend_summary": fix.stderr,
        "arms": {tag: {k: v for k, v in arm.items() if k != "tensors"} for tag, arm in arms.items()},
    }


def summary_lines(result):
    """A short human-readable summary of run_case's result."""
    lines = [f"case {result['case']}: {'ok' if result['ok'] else 'FAILED: ' + ', '.join(result['failed'])}",
             f"  graphs {result['graphs_before_per_input']} -> {result['graphs_after_per_input']}"]
    for c in result["checks"]:
        mark = "pass" if c["ok"] else "FAIL"
        label = c["expect"] or c["name"]
        lines.append(f"  [{mark}] {label}")
        if not c["ok"]:
            lines += [f"         {d}" for d in c["details"][:6]]
    return lines


def main_case(path, json_path, keep=None, log_level=None, grad=False, unsafe_fixes=False):
    """Entry for --case: run, write JSON, print the summary; returns the exit code."""
    import tempfile

    if not Path(path).is_file():
        print(f"error: no such case file: {path}", file=sys.stderr)
        return 2
    try:
        fixer.fixer_command()
    except fixer.FixerMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="graphmend-case-") as tmp:
        workdir = Path(keep) if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        result = run_case(path, workdir, sys.executable, log_level, grad, unsafe_fixes)
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    for line in summary_lines(result):
        print(line)
    return 0 if result["ok"] else 1
