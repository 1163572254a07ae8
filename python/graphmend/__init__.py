"""graphmend: removes TorchDynamo graph breaks from PyTorch model sources.

The package holds no Python API: `pip install` puts the native `graphmend` binary into the
environment's scripts folder, and `python -m graphmend ARGS` runs it (see __main__.py).
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["find_graphmend_bin"]


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and getattr(sys, "_framework", None):
        return "osx_framework_user"
    return "posix_user"


def find_graphmend_bin() -> str:
    """The path of the installed graphmend binary.

    Looked for where pip installs scripts: the environment's scripts folder (a venv, a system
    install), then the user scheme's (`pip install --user`). Raises FileNotFoundError when it is
    in neither.
    """
    exe = "graphmend" + (sysconfig.get_config_var("EXE") or "")
    candidates = [
        os.path.join(sysconfig.get_path("scripts"), exe),
        os.path.join(sysconfig.get_path("scripts", scheme=_user_scheme()), exe),
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError("graphmend binary not found; looked for " + ", ".join(candidates))
