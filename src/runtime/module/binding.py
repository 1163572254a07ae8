# --- graphmend runtime module: the helpers bound to each importing file ---
# A file graphmend rewrote imports the helpers it uses from this module. The helpers above
# that deliver a message (print, logging, warnings, a check that raises) need the file
# that calls them: its loggers, its warning registry, its name and path, which an inline
# block takes from the file it sits in. Here each importing file gets its own copies of
# them: `from ._graphmend_runtime import _graphmend_log` asks this module for a name it
# does not hold, so Python calls __getattr__ (PEP 562) from the importing frame, which
# binds the helpers to that frame's globals and code file, once per file. The other
# helpers hold no per-file state and are shared.
import sys as _graphmend_sys


def _graphmend_bind(g, filename):
    rt = _graphmend_rt
    fid = rt.register_module(g, filename)

    def _graphmend_print(*args, **kwargs):
        rt.print_(fid, args, kwargs)

    # `line`: the call's line, or `lambda: None` written on it (see deferred_effects' helpers).
    def _graphmend_log(logger_name, method, line, func, *args, **kwargs):
        lineno = line if isinstance(line, int) else line.__code__.co_firstlineno
        rt.log(fid, logger_name, method, lineno, func, args, kwargs)

    def _graphmend_warn(line, *args, **kwargs):
        lineno = line if isinstance(line, int) else line.__code__.co_firstlineno
        rt.warn(fid, lineno, args, kwargs)

    def _graphmend_when(pred, kind, leading, thunk):
        if kind == "log" and not isinstance(leading[2], int):
            leading = leading[:2] + (leading[2].__code__.co_firstlineno,) + leading[3:]
        elif kind == "warn" and not isinstance(leading[0], int):
            leading = (leading[0].__code__.co_firstlineno,)
        rt.when(fid, pred, kind, leading, thunk)

    def _graphmend_check(pred, exc_type, thunk, from_none=False):
        rt.check(fid, pred, exc_type, thunk, from_none)

    return {f.__name__: f for f in (_graphmend_print, _graphmend_log, _graphmend_warn, _graphmend_when,
                                    _graphmend_check)}


_graphmend_rt.skip_frames(_graphmend_bind)
# The module's own copies, bound to this module, go: importing one calls __getattr__.
del _graphmend_print, _graphmend_log, _graphmend_warn, _graphmend_when, _graphmend_check
_graphmend_per_file = ("_graphmend_print", "_graphmend_log", "_graphmend_warn", "_graphmend_when", "_graphmend_check")
_graphmend_bound = {}  # id(globals of an importing file) -> (those globals, their helpers)


def __getattr__(name):
    if name not in _graphmend_per_file:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    frame = _graphmend_sys._getframe(1)
    g = frame.f_globals
    entry = _graphmend_bound.get(id(g))
    if entry is None or entry[0] is not g:
        entry = (g, _graphmend_bind(g, frame.f_code.co_filename))
        _graphmend_bound[id(g)] = entry
    return entry[1][name]
# --- end of graphmend runtime module ---
