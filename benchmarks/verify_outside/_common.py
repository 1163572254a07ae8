"""Shared by the verify_outside drivers: seeding, the backend, a checksum line.

The drivers compile with torch.compile's default backend, as a user would; under
`graphmend verify` the hook's counting backend replaces it. VERIFY_OUTSIDE_BACKEND (e.g.
"eager") overrides it for the independent count (benchmarks/verify_outside.py), where only
Dynamo's graph breaks matter and Inductor's C++ builds would only cost time.
"""
import os

import torch


def seed(n=0):
    torch.manual_seed(n)


def compile(fn, **kwargs):
    backend = os.environ.get("VERIFY_OUTSIDE_BACKEND")
    if backend:
        kwargs["backend"] = backend
    return torch.compile(fn, **kwargs)


def leaves(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from leaves(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from leaves(v)
    elif hasattr(obj, "__dataclass_fields__"):
        for k in obj.__dataclass_fields__:
            yield from leaves(getattr(obj, k))


def checksum(name, obj):
    total = 0.0
    n = 0
    for t in leaves(obj):
        if t.is_floating_point():
            total += float(t.detach().double().abs().sum())
        else:
            total += float(t.detach().double().sum())
        n += 1
    print(f"{name}: {n} tensors, checksum {total:.6e}")
