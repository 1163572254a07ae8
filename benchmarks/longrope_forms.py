#!/usr/bin/env python3
"""Forms of transformers' longrope update (modeling_rope_utils.py:50, Phi-3) against the original.

    .venv/bin/python benchmarks/longrope_forms.py [--backends eager,aot_eager,inductor]

The evidence behind docs/rules/GM201.md, section "Phi-3 longrope". Each form replaces

    if seq_len > original_max_position_embeddings:
        if not hasattr(self, "long_inv_freq"):
            self.long_inv_freq, _ = self.rope_init_fn(...)
        self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
    else:
        self.original_inv_freq = self.original_inv_freq.to(device)
        self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)

in the real Phi3RotaryEmbedding (the harness's phi3 config: original max 16, max 64). Forms:
  select    what `graphmend fix --unsafe-fixes` writes (the file fixed by build/graphmend,
            or $GRAPHMEND_BIN): the buffer rebound to torch.where of the two candidates;
  inplace   the selected values copied into the buffer object it has;
  cond      torch.cond returning the candidate tensor, then rebound;
  op        an effectful custom op that makes the branch's stores when the graph runs and
            returns the tensor the branch binds (a prototype, not graphmend's runtime).
Check 1 calls each form compiled (Dynamo with the given backends) with position_ids of
length 24, 8, 24, 30 (beyond original max 16, within, beyond, beyond) next to the original
compiled with the same backend, and lists every difference after each call: outputs,
inv_freq's values, which object inv_freq is (long_inv_freq, original_inv_freq, the buffer
registered at construction), whether long_inv_freq exists, the values of the construction
buffer, inv_freq's persistent flag, state_dict keys; and graph breaks and graphs made over
the four calls, original -> form.
Check 2 gives the module a maker (rope_init_fn) with a Python effect (a call counter) and a
random draw, and calls it 3 times with position_ids within original max 16 (the test is
false, so the original never calls the maker): maker calls and whether the global RNG moved.
Check 3 asks whether torch can confine such a maker to the calls where the test holds: a maker
with a Python effect, one with a random draw and one with an in-place write, each under
torch.cond and under torch._higher_order_ops.wrap: an error, a graph break, or traced.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch._dynamo
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parents[1]
SEQS = (24, 8, 24, 30)


def fixed_rope_utils(workdir):
    """transformers' modeling_rope_utils.py fixed with --unsafe-fixes, imported as a module."""
    import transformers.modeling_rope_utils as rope

    pkg = Path(workdir) / "pkg"
    pkg.mkdir()
    (pkg / "modeling_rope_utils.py").write_text(Path(rope.__file__).read_text())
    (pkg / "rotary.py").write_text(  # a forward that calls the update, so the site is in compiled scope
        "from torch import nn\nfrom .modeling_rope_utils import dynamic_rope_update\n\n\n"
        "class Rotary(nn.Module):\n    @dynamic_rope_update\n    def forward(self, x, position_ids):\n"
        "        return self.inv_freq\n")
    binary = os.environ.get("GRAPHMEND_BIN", str(REPO / "build/graphmend"))
    subprocess.run([binary, "fix", str(pkg), "--unsafe-fixes", "--runtime", "inline", "--isolated"],
                   check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("transformers._graphmend_rope_select", pkg / "modeling_rope_utils.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------- the op prototype
_specs = []


def _intern(spec):
    _specs.append(spec)
    return len(_specs) - 1


_intern_c = torch._dynamo.assume_constant_result(_intern)


def _run(key: int, pred: torch.Tensor, values: list[torch.Tensor]) -> list[torch.Tensor]:
    """Graph run time: the stores of the branch the test picks, on the module itself."""
    okey, acts_true, acts_false, names, _ = _specs[key]
    obj = _specs[okey]
    for act in acts_true if bool(pred) else acts_false:
        if act[0] == "cache" and not hasattr(obj, act[1]):
            setattr(obj, act[1], values[act[2]].clone())
        elif act[0] == "buffer":
            obj.register_buffer(act[1], getattr(obj, act[2]), persistent=act[3])
    return [obj._buffers[n] for n in names]


_op = torch.library.custom_op("graphmend_demo::state", _run, mutates_args=())
_op.register_fake(lambda key, pred, values: [torch.empty(s, dtype=getattr(torch, d)) for s, d in _specs[key][4]])
from torch._library.effects import EffectType  # noqa: E402

_op.register_effect(EffectType.ORDERED)


def op_update(self, position_ids, device):
    seq_len = torch.max(position_ids) + 1
    omax = self.config.original_max_position_embeddings
    if not torch.compiler.is_compiling():
        return original_update(self, position_ids, device)
    # Traced: each branch's stores, as actions; the maker runs in the graph (its value goes to the op).
    values, cached = [], hasattr(self, "long_inv_freq")
    if not cached:
        values.append(self.rope_init_fn(self.config, device, seq_len=omax + 1)[0])
    long_acts = (() if cached else (("cache", "long_inv_freq", 0),)) + (("buffer", "inv_freq", "long_inv_freq", False),)
    short_acts = (("buffer", "inv_freq", "original_inv_freq", False),)
    meta = ((tuple(self.original_inv_freq.shape), str(self.original_inv_freq.dtype).split(".")[1]),)
    key = _intern_c((_intern_c(self), long_acts, short_acts, ("inv_freq",), meta))
    self._buffers["inv_freq"] = torch.ops.graphmend_demo.state(key, seq_len > omax, values)[0]


def original_update(self, position_ids, device):
    seq_len = torch.max(position_ids) + 1
    omax = self.config.original_max_position_embeddings
    if seq_len > omax:
        if not hasattr(self, "long_inv_freq"):
            self.long_inv_freq, _ = self.rope_init_fn(self.config, device, seq_len=omax + 1)
        self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
    else:
        self.original_inv_freq = self.original_inv_freq.to(device)
        self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)


def inplace_update(self, position_ids, device):
    seq_len = torch.max(position_ids) + 1
    omax = self.config.original_max_position_embeddings
    if not hasattr(self, "long_inv_freq"):
        self.long_inv_freq, _ = self.rope_init_fn(self.config, device, seq_len=omax + 1)
    self.inv_freq.copy_(torch.where(seq_len > omax, self.long_inv_freq, self.original_inv_freq))


def cond_update(self, position_ids, device):
    seq_len = torch.max(position_ids) + 1
    omax = self.config.original_max_position_embeddings
    if not hasattr(self, "long_inv_freq"):
        self.long_inv_freq, _ = self.rope_init_fn(self.config, device, seq_len=omax + 1)
    chosen = torch.cond(seq_len > omax, lambda: self.long_inv_freq, lambda: self.original_inv_freq, ())
    self.register_buffer("inv_freq", chosen, persistent=False)


# ----------------------------------------------------------------- modules and checks
def make_rope(form, config, select_module):
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

    if form == "original":
        return Phi3RotaryEmbedding(config)
    body = Phi3RotaryEmbedding.forward.__wrapped__.__wrapped__  # under no_grad and the update decorator
    if form == "select":
        forward = select_module.dynamic_rope_update(body)
    else:
        update = {"inplace": inplace_update, "cond": cond_update, "op": op_update}[form]

        def forward(self, x, position_ids):
            update(self, position_ids, x.device)
            return body(self, x, position_ids)
    cls = type(f"Rope_{form}", (Phi3RotaryEmbedding,), {"forward": forward})
    return cls(config)


def state(m):
    long = m.__dict__.get("long_inv_freq")
    return {"inv_freq": m.inv_freq.clone(), "inv_freq is long_inv_freq": long is not None and m.inv_freq is long,
            "inv_freq is original_inv_freq": m.inv_freq is m.original_inv_freq,
            "inv_freq is the construction buffer": m.inv_freq is m._demo_first,
            "construction buffer values": m._demo_first.clone(), "long_inv_freq exists": long is not None,
            "inv_freq persistent": "inv_freq" not in m._non_persistent_buffers_set,
            "state_dict keys": sorted(m.state_dict())}


def differences(want, got):
    out = []
    for k in want:
        a, b = want[k], got[k]
        same = torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
        if not same:
            out.append(k if isinstance(a, torch.Tensor) else f"{k}: original {a}, form {b}")
    return out


def counters():
    c = torch._dynamo.utils.counters
    return sum(c["graph_break"].values()), c["stats"]["unique_graphs"]


def check_state(form, backend, config, select_module):
    torch._dynamo.reset()
    ref, m = make_rope("original", config, None), make_rope(form, config, select_module)
    for r in (ref, m):
        r._demo_first = r.inv_freq
    ref_c, m_c = torch.compile(ref, backend=backend), torch.compile(m, backend=backend)
    x, lines, breaks, graphs = torch.randn(1, 4, 64), [], [0, 0], [0, 0]
    with torch.no_grad():
        for i, n in enumerate(SEQS):
            pos = torch.arange(n)[None]
            b0, g0 = counters()
            want = ref_c(x, pos)
            b1, g1 = counters()
            breaks[0], graphs[0] = breaks[0] + b1 - b0, graphs[0] + g1 - g0
            b0, g0 = counters()
            try:
                got = m_c(x, pos)
            except Exception as exc:  # noqa: BLE001 - a form the compiler rejects is a finding
                lines.append(f"call {i + 1}: {type(exc).__name__}: {' '.join(str(exc).split())[:150]}")
                break
            b1, g1 = counters()
            breaks[1], graphs[1] = breaks[1] + b1 - b0, graphs[1] + g1 - g0
            diff = ([] if all(torch.equal(a, b) for a, b in zip(want, got)) else ["outputs"]) + \
                differences(state(ref), state(m))
            lines += [f"call {i + 1} (length {n}): {d}" for d in diff]
    return breaks, graphs, lines


def check_maker(form, config, select_module, backend):
    """3 calls within original max 16: how often the maker ran, whether the global RNG moved."""
    torch._dynamo.reset()
    m = make_rope(form, config, select_module)
    base, calls = m.rope_init_fn, [0]

    def maker(cfg, device, seq_len=None):
        calls[0] += 1
        inv, factor = base(cfg, device, seq_len=seq_len)
        return inv + 0 * torch.rand(()), factor

    m.rope_init_fn = maker
    compiled = torch.compile(m, backend=backend)
    x = torch.randn(1, 4, 64)
    before = torch.get_rng_state()
    with torch.no_grad():
        for _ in range(3):
            compiled(x, torch.arange(8)[None])
    return calls[0], not torch.equal(before, torch.get_rng_state())


def check_hop(hop, kind):
    """A maker with one kind of effect under torch.cond or wrap: 'error', 'graph break' or 'traced'."""
    from torch._higher_order_ops.wrap import wrap

    box, seen = torch.zeros(3), []

    def maker():
        if kind == "Python effect":
            seen.append(1)
        if kind == "in-place write":
            box.add_(1)
        return torch.arange(3.0) * (torch.rand(()) if kind == "random draw" else 1)

    def fn(x):
        if hop == "cond":
            return torch.cond(x.sum() > 0, lambda: maker() + x, lambda: x.clone(), ())
        return wrap(lambda: maker() + x)

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    try:
        torch.compile(fn, backend="eager")(torch.ones(3))
    except Exception as exc:  # noqa: BLE001 - the finding
        return f"error ({type(exc).__name__})"
    return "graph break" if counters()[0] else "traced, no break"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backends", default="eager,aot_eager,inductor")
    p.add_argument("--forms", default="select,inplace,cond,op")
    args = p.parse_args(argv)
    from _harness.models import MODELS

    config = MODELS["phi3"].build().config
    print(f"torch {torch.__version__}; Phi3RotaryEmbedding, original max {config.original_max_position_embeddings}; "
          f"position_ids lengths {', '.join(map(str, SEQS))}")
    with tempfile.TemporaryDirectory() as tmp:
        select_module = fixed_rope_utils(tmp)
        print("\nCheck 1: state after every call, against the original compiled with the same backend")
        for form in args.forms.split(","):
            for backend in args.backends.split(","):
                breaks, graphs, lines = check_state(form, backend, config, select_module)
                print(f"  {form:8s} {backend:9s} breaks {breaks[0]} -> {breaks[1]}, graphs {graphs[0]} -> {graphs[1]}: "
                      f"{'no difference' if not lines else f'{len(lines)} difference(s)'}")
                for line in lines[:6]:
                    print(f"      {line}")
                if len(lines) > 6:
                    print(f"      ... {len(lines) - 6} more")
        print("\nCheck 2: a maker with a call counter and a random draw, 3 calls within original max 16 "
              "(Dynamo backend 'eager': the FX graph run as traced)")
        for form in ["original"] + [f for f in args.forms.split(",") if f in ("select", "op")]:
            n, moved = check_maker(form, config, select_module, "eager")
            print(f"  {form:8s} maker calls {n}, global RNG moved: {moved}")
        print("\nCheck 3: a maker with an effect under torch.cond and under torch._higher_order_ops.wrap")
        for kind in ("Python effect", "random draw", "in-place write"):
            print(f"  {kind:15s} cond: {check_hop('cond', kind)}; wrap: {check_hop('wrap', kind)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
