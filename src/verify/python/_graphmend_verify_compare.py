"""Compare the saved outputs of graphmend verify's two runs (docs/verify.md, "Compare").

    python -m _graphmend_verify_compare ORIGINAL.pt FIXED.pt

prints {"calls": [{"callable", "name", "call", "status", "max_abs_diff", "gap", "detail"}]}.
status: bit-equal | within-gap | different | missing. Callables are matched by (name, index
among the callables of that name). A file that does not exist (a run that never imported
torch writes none) counts as a run with no calls.
"""
from __future__ import annotations

import json
import math
import os
import sys


def _load(path, torch):
    if not os.path.exists(path):
        return {"callables": [], "calls": []}
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:  # torch < 1.13: no weights_only
        return torch.load(path, map_location="cpu")


def _keyed(data):
    """{(name, k-th of that name, call): (callable index, call entry)}, in the run's order."""
    names = {c["index"]: c["name"] for c in data.get("callables", [])}
    nth, seen = {}, {}
    for c in data.get("callables", []):
        nth[c["index"]] = seen.get(c["name"], 0)
        seen[c["name"]] = nth[c["index"]] + 1
    out = {}
    for call in data.get("calls", []):
        index = call["callable"]
        name = names.get(index, f"#{index}")
        out[(name, nth.get(index, 0), call["call"])] = (index, call)
    return out


def _bits(t, torch):
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    try:
        return flat.view(torch.uint8)
    except (RuntimeError, TypeError):
        return flat


def _diff(a, b, torch):
    if a.numel() == 0:
        return 0.0
    try:
        x, y = a.to(torch.float64), b.to(torch.float64)
        d = (x - y).abs()
        d = torch.where(torch.isnan(x) & torch.isnan(y), torch.zeros_like(d), d)
        d = torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)
        return float(d.max())
    except Exception:  # noqa: BLE001 - complex or exotic dtypes
        return 0.0 if torch.equal(a, b) else math.inf


def compare_call(orig, fixed, torch):
    """(status, max_abs_diff, gap, detail) of one call present in both runs."""
    gaps = orig.get("gaps") or {}
    if orig.get("exception") != fixed.get("exception"):
        return "different", None, None, f"exception: {orig.get('exception')!r} vs {fixed.get('exception')!r}"
    a, b = orig.get("leaves", {}), fixed.get("leaves", {})
    if list(a) != list(b):
        only = [p for p in a if p not in b] + [p for p in b if p not in a]
        return "different", None, None, f"tensor leaves differ: {only[:4] or 'order'}"
    oa, ob = orig.get("other", {}), fixed.get("other", {})
    if oa != ob:
        path = next((p for p in list(oa) + list(ob) if oa.get(p) != ob.get(p)), "")
        return "different", None, None, f"{path or '(output)'}: {oa.get(path)!r} vs {ob.get(path)!r}"
    bit_equal, worst, gap_used, detail, within = True, 0.0, 0.0, "", True
    for path, x in a.items():
        y = b[path]
        where = path or "(output)"
        if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
            return ("different", None, None,
                    f"{where}: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}")
        if torch.equal(_bits(x, torch), _bits(y, torch)):
            continue
        bit_equal = False
        d = _diff(x, y, torch)
        worst = max(worst, d)
        g = gaps.get(path)
        if g is not None:
            gap_used = max(gap_used, g)
        if g is None or not d <= g:
            if within:
                detail = f"{where}: max abs diff {d:g}" + (f" > gap {g:g}" if g is not None else " (no gap recorded)")
            within = False
    if bit_equal:
        return "bit-equal", 0.0, max(gaps.values(), default=0.0) if gaps else None, ""
    if within:
        return "within-gap", worst, gap_used, ""
    return "different", worst, gap_used if gaps else None, detail


def compare(original, fixed, torch):
    a, b = _keyed(original), _keyed(fixed)
    rows = []
    for key in list(a) + [k for k in b if k not in a]:
        name, _, call = key
        if key not in a or key not in b:
            index = (a.get(key) or b.get(key))[0]
            rows.append({"callable": index, "name": name, "call": call, "status": "missing",
                         "max_abs_diff": None, "gap": None,
                         "detail": "only in the original run" if key in a else "only in the fixed run"})
            continue
        index, oc = a[key]
        status, diff, gap, detail = compare_call(oc, b[key][1], torch)
        rows.append({"callable": index, "name": name, "call": call, "status": status,
                     "max_abs_diff": diff, "gap": gap, "detail": detail})
    return {"calls": rows}


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python -m _graphmend_verify_compare ORIGINAL.pt FIXED.pt\n")
        return 2
    import torch

    result = compare(_load(argv[0], torch), _load(argv[1], torch), torch)
    for row in result["calls"]:
        for k in ("max_abs_diff", "gap"):
            row[k] = _json_safe(row[k])
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
