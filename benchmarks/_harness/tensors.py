"""Flatten model outputs to tensors, hash them and compare them bit for bit.

flatten(obj) -> list of (path, leaf): walks tensors, tuples/lists, dicts (including
transformers' ModelOutput), cache objects with `to_legacy_cache()`, and plain
objects with a `__dict__`; a leaf is a torch.Tensor or the repr() of anything else.

digest(leaves) -> SHA-256 hex of paths, dtypes, shapes and raw tensor bytes.
compare(a, b) -> (identical: bool, details: list[str]) on two flattened lists;
identical means the same paths and reprs, and every tensor with the same dtype,
shape and bytes (NaNs compare equal to themselves, -0.0 differs from 0.0).
"""
from __future__ import annotations

import dataclasses
import hashlib

import torch


def flatten(obj, path="out"):
    """List of (path, leaf) pairs for every tensor and scalar inside `obj`."""
    leaves = []
    _walk(obj, path, leaves, set())
    return leaves


def _walk(obj, path, leaves, seen):
    if isinstance(obj, torch.Tensor):
        leaves.append((path, obj.detach()))
        return
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, torch.dtype, torch.Size)):
        leaves.append((path, repr(obj)))
        return
    if id(obj) in seen:
        leaves.append((path, "<cycle>"))
        return
    seen = seen | {id(obj)}
    if isinstance(obj, dict):  # includes transformers.utils.ModelOutput
        for key, value in obj.items():
            _walk(value, f"{path}[{key!r}]", leaves, seen)
    elif isinstance(obj, (list, tuple)):
        leaves.append((f"{path}#type", type(obj).__name__ if not hasattr(obj, "_fields") else "namedtuple"))
        for i, value in enumerate(obj):
            _walk(value, f"{path}[{i}]", leaves, seen)
    elif callable(getattr(obj, "to_legacy_cache", None)):
        _walk(obj.to_legacy_cache(), f"{path}.to_legacy_cache()", leaves, seen)
    elif dataclasses.is_dataclass(obj):
        for field in dataclasses.fields(obj):
            _walk(getattr(obj, field.name), f"{path}.{field.name}", leaves, seen)
    elif hasattr(obj, "__dict__"):
        for key in sorted(vars(obj)):
            _walk(vars(obj)[key], f"{path}.{key}", leaves, seen)
    else:
        leaves.append((path, repr(obj)))


def tensor_bytes(t):
    """Raw bytes of a tensor's values (row-major, on CPU)."""
    flat = t.detach().cpu().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    return flat.view(torch.uint8).numpy().tobytes()


def digest(leaves):
    """SHA-256 hex digest of a flattened output (paths, dtypes, shapes, bytes)."""
    h = hashlib.sha256()
    for path, leaf in leaves:
        h.update(path.encode())
        if isinstance(leaf, torch.Tensor):
            h.update(f"{leaf.dtype}{tuple(leaf.shape)}".encode())
            h.update(tensor_bytes(leaf))
        else:
            h.update(b"=" + str(leaf).encode())
    return h.hexdigest()


def describe(leaves):
    """JSON-ready summary: path -> dtype/shape (tensors) or repr (other leaves)."""
    out = []
    for path, leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            out.append({"path": path, "dtype": str(leaf.dtype), "shape": list(leaf.shape)})
        else:
            out.append({"path": path, "value": leaf})
    return out


def compare(a, b, limit=10):
    """Compare two flattened outputs bit for bit; returns (identical, details).

    details lists the first `limit` differences in words (empty when identical);
    a tensor difference reports torch.equal and the largest absolute difference.
    """
    details = []
    if [p for p, _ in a] != [p for p, _ in b]:
        details.append(f"structure differs: {[p for p, _ in a][:8]} vs {[p for p, _ in b][:8]}")
        return False, details
    for (path, x), (_, y) in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            details.append(f"{path}: tensor vs non-tensor")
        elif not isinstance(x, torch.Tensor):
            if x != y:
                details.append(f"{path}: {x} != {y}")
        elif x.dtype != y.dtype or x.shape != y.shape:
            details.append(f"{path}: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}")
        elif tensor_bytes(x) != tensor_bytes(y):
            eq = torch.equal(x, y)
            try:
                diff = (x.double() - y.double()).abs().max().item()
            except Exception:  # integer/bool overflow or empty tensors
                diff = "n/a"
            details.append(f"{path}: bits differ (torch.equal={eq}, max abs diff={diff})")
        if len(details) >= limit:
            details.append("...")
            break
    return not details, details
