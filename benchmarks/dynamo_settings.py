"""What Dynamo's own settings do to the graph breaks no rewrite of graphmend removes.

One small function per kind of break that GM401 reports (src/knowledge/dynamo_settings.cpp
names the kinds), each compiled with the eager backend and called once, in a fresh process per
setting (torch/_dynamo/config.py reads TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS and
TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS at import). For each function and setting: the
graph breaks Dynamo counted (torch._dynamo.utils.counters["graph_break"]), the frames it skipped
whole, and whether the call raised: Dynamo's graph_breaks log records, collected by the harness's
DynamoLog (counters["graph_break"] misses data-dependent jumps). The help lines of `graphmend check` quote the result
(tests/python/test_knowledge.py measures it again).

    .venv/bin/python benchmarks/dynamo_settings.py [--json docs/results/dynamo-settings.json]
"""
import argparse
import json
import os
import subprocess
import sys

SETTINGS = {
    "none": {},
    "capture_scalar_outputs": {"TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS": "1"},
    "capture_dynamic_output_shape_ops": {"TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS": "1"},
}

# kind (knowledge::DataBreak) -> the functions of that kind
KINDS = {
    "ScalarRead": ["item_arith", "int_size", "tolist_int", "slice_bound", "loop_sizes"],
    "DynamicShape": ["nonzero", "mask_index", "unique", "where_one_argument", "nms"],
    "IndexRead": ["index_0d", "one_element_mask", "narrow_start"],
    "BuiltinCompare": ["builtin_max"],
    "DataLoop": ["while_loop"],
    "Cost": ["item_then_test", "nonzero_then_test"],
}

CHILD = r'''
import json, sys
import torch
import torch._dynamo as dynamo
from _harness.dynamo import DynamoLog

def item_arith(x):
    s = x.sum().item()
    return x * s

def int_size(x):
    n = int((x > 0).sum())
    return torch.zeros(n) + 1

def tolist_int(x):
    v = (x > 0).long().tolist()
    return x + v[0]

def slice_bound(x):
    t = (x > 0).sum()
    return x[t:] * 2

def loop_sizes(x):
    out = []
    for c in (x > 0).long() + 1:
        out.append(torch.zeros(c))
    return torch.cat(out)

def nonzero(x):
    return (x > 0).nonzero() + 1

def mask_index(x):
    return x[x > 0] * 2

def unique(x):
    return torch.unique(x.round()) * 2

def where_one_argument(x):
    return torch.where(x > 0)[0] + 1

def nms(x):
    import torchvision
    boxes = torch.tensor([[0., 0., 10., 10.], [1., 1., 11., 11.], [20., 20., 30., 30.]]) + x[:1]
    keep = torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8, 0.7]), 0.5)
    return boxes[keep] * 2

ALPHAS = torch.linspace(0.1, 0.9, 10)

def index_0d(x):
    return x * ALPHAS[(x > 0).sum()]

def one_element_mask(x):
    return x[(x > 0).all()] * 2

def narrow_start(x):
    counts = (x > 0).sum(0, keepdim=True)
    return x.narrow(0, counts[0], 1) * 2

def builtin_max(x, n=3):
    return x * max(x[0], n)

def while_loop(x):
    while x.sum() < 10:
        x = x * 2
    return x

def item_then_test(x):
    s = x.sum().item()
    if s > 0:
        return x * 2
    return x

def nonzero_then_test(x):
    idx = (x > 0).nonzero()
    if idx.shape[0] > 2:
        return idx + 1
    return idx

out = {}
for name in sys.argv[1:]:
    f = globals()[name]
    dynamo.reset()
    error = None
    log = DynamoLog()
    with log:
        try:
            if name == "builtin_max":  # the number a symbolic size: a second call with another one
                g = torch.compile(f, backend="eager", dynamic=True)
                for n in (3, 4):
                    g(torch.tensor([1.5, -2.0, 3.0, 0.5]), n)
            else:
                torch.compile(f, backend="eager")(torch.tensor([1.5, -2.0, 3.0, 0.5]))
        except Exception as e:  # noqa: BLE001 - recorded, not raised
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    out[name] = {"graph_breaks": len(log.break_sites), "error": error,
                 "gb": sorted({b["gb"] or "?" for b in log.break_sites}),
                 "reasons": sorted({b["reason"][:80] for b in log.break_sites})}
print(json.dumps(out))
'''


def measure(python=sys.executable):
    names = [n for ns in KINDS.values() for n in ns]
    result = {}
    for setting, env in SETTINGS.items():
        here = os.path.dirname(os.path.abspath(__file__))  # the child imports _harness from here
        pythonpath = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
        proc = subprocess.run([python, "-c", CHILD, *names], env={**os.environ, **env, "PYTHONPATH": pythonpath},
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"{setting}: {proc.stderr[-2000:]}")
        result[setting] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the measurement here")
    args = ap.parse_args()
    import torch
    result = {"torch": torch.__version__, "kinds": KINDS, "settings": measure()}
    for kind, names in KINDS.items():
        for name in names:
            row = {s: "raised" if result["settings"][s][name]["error"] else result["settings"][s][name]["graph_breaks"]
                   for s in SETTINGS}
            print(f"{kind:<14} {name:<20} " + "  ".join(f"{s}={n}" for s, n in row.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
