"""Statistics of benchmarks/latency.py: per-call timings and per-repetition ratios (no torch).

timing_summary(seconds)    -> {"median", "mean", "min", "max", "q1", "q3", "n"} of a list of seconds
spread(values)             -> {"median", "min", "max", "q1", "q3", "n", "values"} of per-repetition values
ratio(original, fixed)     -> original / fixed, or None when either is missing or fixed <= 0
rep_ratios(reps, key)      -> [original[key] / fixed[key] for each repetition where both arms ran]
geomean(values)            -> geometric mean of the positive values (None if there are none)

Quartiles use statistics.quantiles(method="inclusive") (the same as numpy's default
linear interpolation); with fewer than two values q1 == q3 == the value.
"""
from __future__ import annotations

import math
import statistics


def _quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def timing_summary(seconds):
    """Median, mean, min, max and quartiles of per-call times (seconds); None for an empty list."""
    values = [float(s) for s in seconds]
    if not values:
        return None
    q1, q3 = _quartiles(values)
    return {"median": statistics.median(values), "mean": statistics.fmean(values),
            "min": min(values), "max": max(values), "q1": q1, "q3": q3, "n": len(values)}


def spread(values):
    """Median, min/max and quartiles of per-repetition values (None entries dropped); None if empty."""
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return None
    q1, q3 = _quartiles(kept)
    return {"median": statistics.median(kept), "min": min(kept), "max": max(kept),
            "q1": q1, "q3": q3, "n": len(kept), "values": kept}


def ratio(original, fixed):
    """original / fixed; None when a value is missing or the denominator is not positive."""
    if original is None or fixed is None or fixed <= 0:
        return None
    return original / fixed


def rep_ratios(reps, key):
    """Per-repetition ratios original/fixed of metric `key`.

    reps: list of {"original": {key: seconds, ...} or None, "fixed": {...} or None}.
    A repetition where an arm failed (None) or lacks the key gives no ratio.
    """
    out = []
    for rep in reps:
        a, b = rep.get("original"), rep.get("fixed")
        if not a or not b:
            continue
        r = ratio(a.get(key), b.get(key))
        if r is not None:
            out.append(r)
    return out


def geomean(values):
    """Geometric mean of the positive values (None entries dropped); None if there are none."""
    kept = [float(v) for v in values if v is not None and v > 0]
    if not kept:
        return None
    return math.exp(statistics.fmean(math.log(v) for v in kept))
