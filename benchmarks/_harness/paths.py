"""Map absolute file names to stable labels so two arms compare equal.

A message's file name (a warning's filename, a log record's pathname) depends on
where the file lives: the installed package or its fixed copy, the original case
file or the fixed one. `PathMapper` rewrites such names relative to a set of roots.
"""
from __future__ import annotations

import os


class PathMapper:
    """Rewrite paths under known roots as `label + relative path`.

    roots: iterable of (path, label). A path equal to a root file maps to the
    label alone; a path inside a root folder maps to label + "/" + the relative
    path. The longest matching root wins. Other paths come back unchanged.
    """

    def __init__(self, roots=()):
        self._roots = []
        for path, label in roots:
            self.add(path, label)

    def add(self, path, label):
        """Register one root (a file or a folder)."""
        real = os.path.realpath(path)
        self._roots.append((real, label))
        self._roots.sort(key=lambda item: len(item[0]), reverse=True)

    def __call__(self, path):
        """Return the label form of `path` (a str; None and '' pass through)."""
        if not path:
            return path
        real = os.path.realpath(path) if os.path.isabs(path) else path
        for root, label in self._roots:
            if real == root:
                return label
            if real.startswith(root + os.sep):
                rel = os.path.relpath(real, root).replace(os.sep, "/")
                return f"{label}/{rel}"
        return path


def standard_roots():
    """Roots every arm registers: torch's folder as "torch", the stdlib as "python".

    Imports torch; call it after the message capture is installed.
    """
    import sysconfig

    import torch

    return [(os.path.dirname(torch.__file__), "torch"), (sysconfig.get_paths()["stdlib"], "python")]
