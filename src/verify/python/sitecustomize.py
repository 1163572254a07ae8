"""graphmend verify: put first on PYTHONPATH of the runs it makes (docs/verify.md, "The hook").

Imports the hook (inert without GRAPHMEND_VERIFY_RECORD), then runs the `sitecustomize` that
this one shadows (the next one on sys.path, e.g. Debian's /etc/python3.X/sitecustomize.py), so
the site's own customisation still runs. Neither may stop the program: a failure prints one line
on stderr and the program goes on.
"""


def _graphmend_chain():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    try:
        import _graphmend_verify_hook  # noqa: F401 - installs itself on import
    except BaseException as exc:  # noqa: BLE001 - never the program's problem
        sys.stderr.write(f"graphmend verify: hook failed: {type(exc).__name__}: {exc}\n")

    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))

    def ours(entry):
        try:
            return os.path.realpath(os.path.abspath(entry or os.getcwd())) == here
        except (OSError, ValueError):
            return False

    entries = list(sys.path)
    index = next((i for i, entry in enumerate(entries) if ours(entry)), None)
    rest = entries[index + 1:] if index is not None else [e for e in entries if not ours(e)]
    try:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [e for e in rest if not ours(e)])
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module  # what the site would have had without us
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - site.py reports a failing sitecustomize alike
        sys.stderr.write(f"graphmend verify: the next sitecustomize failed: {type(exc).__name__}: {exc}\n")


_graphmend_chain()
del _graphmend_chain
