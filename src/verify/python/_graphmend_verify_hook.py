"""graphmend verify's hook: runs inside the user's process (imported by our sitecustomize.py).

Inert unless GRAPHMEND_VERIFY_RECORD is set (see docs/verify.md, "The hook"). It imports no
torch: it patches torch.compile when the program imports torch, counts the FX graphs and calls
of each compiled callable, collects Dynamo's graph-break and recompile log records, the
program's warnings and log records, the first calls' outputs, and writes record.json and
outputs.pt at exit (and on SIGTERM, complete=false). One file, stdlib only (torch once the
program has imported it).

Private torch APIs and what an older torch (2.4 ..) loses when one is missing:
  * torch._logging._internal.log_state / log_registry (2.1+): without them no graph breaks
    and no recompiles are recorded (graphs and calls still are).
  * the "GBnnnn" registry codes in graph-break messages appeared in torch 2.8: before, "gb"
    is null and `kind` comes from the reason text alone (torch 2.4.1, measured: its texts,
    e.g. "builtin: print [...]", "Logger not supported ...", are classified too).
  * torch 2.4 logs no graph_breaks record for a data-dependent branch (generic_jump) or an
    unsupported attribute store (store_attr): those come from the GraphCompileReason Dynamo
    makes for the graph the break ends (reason "generic_jump TensorVariable()", no context);
    a break in a loop, where Dynamo skips the whole frame, is not recorded at all. torch 2.4
    also logs a site once per frame compile (DuplicateWarningChecker), so `count` is lower.
  * torch._TorchCompileInductorWrapper / _TorchCompileWrapper (backend=user): without them a
    string backend is resolved with torch._dynamo.lookup_backend and mode/options are lost.
  * torch.compiler.set_stance("force_eager") (2.6+) for the eager gap: before, nothing forces
    eager: the program's own uncompiled callable runs, and a compiled callable nested inside
    it runs compiled (and may compile).
  * the `name` argument of torch.compile (2.10+) is passed through only when given.
Recorded file names are the files Python ran: a fixed run names files under the fixed root.
Modules that transformers copies into HF_MODULES_CACHE (trust_remote_code from a local
folder) are loaded from the fixed folder's copy in a redirected run and their cache file names
are mapped back to the folder they were copied from.
"""
from __future__ import annotations

import atexit
import copy
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import types
import warnings

_OWNER_VAR = "_GRAPHMEND_VERIFY_OWNER"
_HOOK_FILE = os.path.abspath(__file__)
# Warnings whose file lies in torch's compiler packages are the compiler's, not the program's.
_FRAMEWORK_FILES = tuple(f"{os.sep}torch{os.sep}{p}" for p in (
    "_dynamo", "_inductor", "_functorch", "fx", "_subclasses", "_guards.py", "_logging", "_export",
    "export", "_higher_order_ops", "compiler"))

R = None  # the _Recorder of this process, when recording


# ----------------------------------------------------------------------------------------------
# Dynamo's graph-break records (the logic of benchmarks/_harness/dynamo.py, copied)

_WRAPPERS = ("Encountered graph break when attempting to trace", "Failed to handle graph break gracefully")
_USER_CODE_AT = re.compile(r"in user code at (.+?):(\d+)\s*$", re.MULTILINE)
_FRAME = re.compile(r'File "(.+?)", line (\d+)')
_FILE_LINE = re.compile(r"(/\S+?\.py):(\d+)")
_FILE_QUOTED = re.compile(r'File "(/[^"]+)"')
_GB_CODE = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)
_CONTEXT = re.compile(r"Developer debug context:(.*)")
_OPCODE = re.compile(r"attempting to trace ([A-Z_]+)")
_ATEN_OP = re.compile(r"aten\.(\w+)(?:\.\w+)?")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def classify(reason, gb=None, context="", opcode="", text=""):
    """The cause of one graph break in a few words (benchmarks/_harness/dynamo.py classify)."""
    # Dynamo's explanation of GB0007 names `_warnings.warn` as an example for any skipped
    # builtin or C extension (scipy.integrate.quad): no evidence of a warnings.warn call.
    text = text.replace("(e.g. _warnings.warn)", "")
    everything = " ".join((reason, context, text))
    low = reason.lower()
    if (gb in ("GB0170", "GB0035") or low.startswith(("data-dependent branching", "generic_jump"))
            or "dynamic control flow is not supported" in low):  # the last two: torch 2.4's texts
        return "data-dependent branch"
    if gb in ("GB0034", "GB0171", "GB0002") or "assert" in low:
        return "data-dependent assert"
    if gb == "GB0124" or "tensor.item()" in low or low == "tensor.item":
        return ".item()"
    if gb == "GB0109" or ".tolist()" in low or "tolist" in context:
        return ".tolist()"
    if gb in ("GB0036", "GB0037") or low.startswith("dynamic shape operator"):
        op = _ATEN_OP.search(everything)
        if op and op[1] == "nonzero":
            return "boolean mask index (nonzero)" if opcode.endswith("SUBSCR") else "nonzero"
        return f"dynamic shape ({op[0]})" if op else "dynamic shape"
    if gb == "GB0033" or low.startswith("data dependent operator"):
        if "_local_scalar_dense" in everything:
            return "tensor read as a Python number"
        op = _ATEN_OP.search(everything)
        return f"data-dependent operator ({op[0]})" if op else "data-dependent operator"
    if gb == "GB0038" or "dynamic slicing" in low:
        return "dynamic shape (slice by tensor)"
    if gb in ("GB0018", "GB0246") or "unbacked" in low or "data-dependent output shape" in low:
        return "dynamic shape"
    if gb == "GB0291" or "logging.logger" in low or low.startswith("logger not supported"):
        return "logging"
    if (re.search(r"\bprint\b", context) and (gb == "GB0059" or "builtin operator" in low)
            or low.startswith("builtin: print ")):  # torch 2.4: "builtin: print [<class ...>] False"
        return "print"
    if "warnings.warn" in everything or "_warnings" in context:
        return "warnings.warn"
    if gb in ("GB0098", "GB0099") or "torch.compiler.disable" in low:
        return "torch.compiler.disable"
    if gb in ("GB0007", "GB0008", "GB0009") or "marked as skipped" in low:
        return "call to a skipped function"
    if gb == "GB0142" or "context manager" in low:
        return "unsupported context manager"
    if gb in ("GB0105", "GB0231", "GB0290", "GB0293", "GB0294") or "numpy" in low:
        return "numpy"
    if gb in ("GB0088", "GB0089") or "exception" in low:
        return "exception"
    if gb == "GB0064" or "fake tensor" in low:
        return "fake tensor propagation"
    if "c-implemented" in low or "builtin" in low:
        return "unsupported builtin"
    if gb in ("GB0147", "GB0148", "GB0156") or low.startswith("unsupported"):
        return f"unsupported: {reason}"
    return f"other: {reason}" if reason else "other"


def parse_break(message, exc_info=None):
    """(file, line, reason, kind, action, gb, context) of one graph_breaks log record."""
    action = "skip" if ("Skipping the function" in message or "results in a skip" in message
                        or message.startswith("Graph break: skip:")) else "break"  # the last: torch 2.4
    at = _USER_CODE_AT.search(message)
    if at:  # "Graph break [(...)] in user code at FILE:LINE\nGraph Break Reason: ..."
        file, line = at[1], int(at[2])
        text = message.split("Graph Break Reason:", 1)[-1].split("User code traceback:", 1)[0]
    else:  # "Graph break: ... results in a skip ... in the following user code:\n  File ..."
        frames = _FRAME.findall(message)
        file, line = (frames[-1][0], int(frames[-1][1])) if frames else (None, None)
        text = str(exc_info[1]) if exc_info and exc_info[1] is not None else message
    lines = [x.strip() for x in text.splitlines()]
    reasons = [x for x in lines if x and not x.startswith(_WRAPPERS)]
    reason = (reasons or lines or [""])[0]
    gb = _GB_CODE.search(text) or _GB_CODE.search(message)
    gb = gb[1].upper() if gb else None
    context = _CONTEXT.search(text)
    context = context[1].strip()[:200] if context else ""
    opcode = _OPCODE.search(text)
    kind = classify(reason, gb, context, opcode[1] if opcode else "", text)
    return file, line, reason, kind, action, gb, context


class _DynamoLog(logging.Handler):
    """Receives the graph_breaks and recompiles artifact records; prints nothing itself."""

    ARTIFACTS = ("graph_breaks", "recompiles")

    def __init__(self, recorder):
        super().__init__(logging.DEBUG)
        self.recorder = recorder
        self.ours = set()  # artifacts we turned on (the program did not): kept silent

    def ensure(self):
        """(Re)attach to the artifact loggers. Cheap; run at each compiled call, since torch
        creates artifact loggers lazily and torch._logging.set_logs resets them."""
        try:
            from torch._logging._internal import log_registry, log_state
        except Exception:  # torch < 2.1: no artifact loggers, nothing recorded
            return
        names = log_state.artifact_names
        for artifact in self.ARTIFACTS:
            if artifact not in names:
                log_state.enable_artifact(artifact)  # guards.py checks the set before logging
                self.ours.add(artifact)
        for qname in list(log_registry.get_artifact_log_qnames()):
            artifact = qname.rsplit(".__", 1)[-1]
            if artifact not in self.ARTIFACTS:
                continue
            logger = logging.getLogger(qname)
            if artifact in self.ours:
                if logger.propagate and logger.level == logging.DEBUG and self in logger.handlers:
                    self.ours.discard(artifact)  # set_logs(...) turned it on since: the program's
                else:
                    logger.propagate = False
            if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
                logger.setLevel(logging.DEBUG)
            if self not in logger.handlers:
                logger.addHandler(self)

    def emit(self, record):
        try:
            self.recorder.on_dynamo_record(record)
        except Exception:  # never break the compile
            pass

    def handle(self, record):  # no filters, no lock games: emit directly
        self.emit(record)
        return True


def _unlogged_breaks(torch):
    """The GraphCompileReason texts whose graph breaks this torch does not log on graph_breaks:
    torch 2.4 compiles the prefix graph of a data-dependent branch (`generic_jump ...`) and of
    an unsupported attribute store (`store_attr`) with only a `log.debug`. Empty where the code
    that makes them logs them itself (torch 2.12: `log_graph_break`), or cannot be read."""
    import inspect

    try:
        import importlib

        sc = importlib.import_module("torch._dynamo.symbolic_convert")
    except Exception:
        return ()

    def silent(fn):
        try:
            source = inspect.getsource(fn)
        except Exception:
            return False
        return "graph_break_log" not in source and "log_graph_break" not in source

    texts = []
    if silent(getattr(sc, "generic_jump", None)):
        texts.append("generic_jump")
    base = getattr(sc, "InstructionTranslatorBase", None)
    if getattr(base, "store_attr_graph_break", None) is not None and silent(getattr(base, "STORE_ATTR", None)):
        texts.append("store_attr")
    return tuple(texts)


def _watch_compile_reasons(recorder, torch):
    """Where this torch logs some graph breaks nowhere (_unlogged_breaks), hear of them from the
    GraphCompileReason Dynamo makes for the graph the break ends."""
    texts = _unlogged_breaks(torch)
    if not texts:
        return
    import importlib

    reason_cls = importlib.import_module("torch._dynamo.output_graph").GraphCompileReason
    post_init = getattr(reason_cls, "__post_init__", None)
    if post_init is None or getattr(post_init, "_graphmend_verify", False):
        return

    def __post_init__(self):
        post_init(self)
        try:
            if getattr(self, "graph_break", False) and str(self.reason).startswith(texts):
                recorder.on_compile_reason(self)
        except Exception:  # never break the compile
            pass

    __post_init__._graphmend_verify = True
    reason_cls.__post_init__ = __post_init__


# ----------------------------------------------------------------------------------------------
# outputs

def _key_path(key):
    return f"[{json.dumps(key)}]" if isinstance(key, str) else f"[{key!r}]"


def flatten(obj, torch):
    """({path: tensor (detached, CPU copy)}, {path: repr}) of everything inside obj."""
    leaves, other = {}, {}

    def walk(o, path, seen):
        if isinstance(o, torch.Tensor):
            leaves[path] = o.detach().to("cpu", copy=True)
            return
        if o is None or isinstance(o, (bool, int, float, complex, str, bytes, torch.dtype, torch.Size)):
            other[path] = repr(o)
            return
        if id(o) in seen:
            other[path] = "<cycle>"
            return
        seen = seen | {id(o)}
        import dataclasses

        if isinstance(o, dict):
            # transformers' ModelOutput is a dict of its non-None fields: `.logits`
            attr = hasattr(o, "to_tuple") or dataclasses.is_dataclass(o)
            for k, v in o.items():
                walk(v, f"{path}.{k}" if attr and isinstance(k, str) else f"{path}{_key_path(k)}", seen)
        elif isinstance(o, tuple) and hasattr(o, "_fields"):
            for k, v in zip(o._fields, o):
                walk(v, f"{path}.{k}", seen)
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                walk(v, f"{path}[{i}]", seen)
        elif dataclasses.is_dataclass(o) and not isinstance(o, type):
            for f in dataclasses.fields(o):
                walk(getattr(o, f.name), f"{path}.{f.name}", seen)
        elif callable(getattr(o, "to_legacy_cache", None)):
            try:
                walk(o.to_legacy_cache(), f"{path}.to_legacy_cache()", seen)
            except Exception:
                other[path] = _ADDRESS.sub("", repr(o))
        else:
            try:
                other[path] = _ADDRESS.sub("", repr(o))
            except Exception as exc:
                other[path] = f"<repr failed: {type(exc).__name__}>"

    walk(obj, "", set())
    return leaves, other


def _max_abs_diff(a, b, torch):
    """Largest |a - b| (NaN where both are NaN counts as 0); inf when shapes differ."""
    if a.shape != b.shape:
        return float("inf")
    if a.numel() == 0:
        return 0.0
    try:
        x, y = a.to(torch.float64), b.to(torch.float64)
        d = (x - y).abs()
        d = torch.where(torch.isnan(x) & torch.isnan(y), torch.zeros_like(d), d)
        d = torch.where(torch.isnan(d), torch.full_like(d, float("inf")), d)
        return float(d.max())
    except Exception:
        return 0.0 if torch.equal(a, b) else float("inf")


# ----------------------------------------------------------------------------------------------
# compiled callables

class _Callable:
    def __init__(self, index, name, file, line):
        self.index, self.name, self.file, self.line = index, name, file, line
        self.graphs = 0
        self.calls = 0
        self.recompiles = 0
        self.compile_s = None
        self.times = []

    def to_json(self, paths):
        steady = None
        if len(self.times) >= 2:
            later = sorted(self.times[1:])
            n = len(later)
            steady = later[n // 2] if n % 2 else (later[n // 2 - 1] + later[n // 2]) / 2
        return {"index": self.index, "name": self.name, "file": paths(self.file), "line": self.line,
                "graphs": self.graphs, "calls": self.calls, "recompiles": self.recompiles,
                "compile_s": self.compile_s, "first_call_s": self.times[0] if self.times else None,
                "steady_s": steady}


class _Backend:
    """The backend one compiled callable gets: counts graphs; runs each as traced (count) or
    hands it to the program's backend and times that (user). Other attributes come from the
    program's backend (Dynamo asks for e.g. get_compiler_config)."""

    def __init__(self, cc, inner):
        self._cc = cc
        self._inner = inner
        self.__name__ = "graphmend_verify_count" if inner is None else getattr(
            inner, "compiler_name", getattr(inner, "__name__", "graphmend_verify_user"))

    def __call__(self, gm, example_inputs, **kwargs):
        self._cc.graphs += 1
        if self._inner is None:
            return gm.forward
        start = time.perf_counter()
        try:
            return self._inner(gm, example_inputs, **kwargs)
        finally:
            self._cc.compile_s = (self._cc.compile_s or 0.0) + time.perf_counter() - start

    def __getattr__(self, name):
        inner = self.__dict__.get("_inner")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)


def _describe(model, torch):
    """(name, file, line) of what torch.compile was given (docs/verify.md)."""
    import inspect

    fn = None
    if isinstance(model, torch.nn.Module):
        name, fn = type(model).__name__, type(model).forward
    elif isinstance(model, types.MethodType):
        owner, func = model.__self__, model.__func__
        if isinstance(owner, torch.nn.Module) and func.__name__ in ("_call_impl", "_wrapped_call_impl", "__call__"):
            name, fn = type(owner).__name__, type(owner).forward  # nn.Module.compile()
        else:
            cls = owner if isinstance(owner, type) else type(owner)
            name, fn = f"{cls.__name__}.{func.__name__}", func
    elif isinstance(model, functools.partial):
        return _describe(model.func, torch)
    elif hasattr(model, "__code__") or hasattr(model, "__wrapped__"):
        name, fn = getattr(model, "__name__", type(model).__name__), model
    else:
        name, fn = type(model).__name__, getattr(type(model), "__call__", None)
    try:
        fn = inspect.unwrap(fn)
        code = fn.__code__
        return name, os.path.abspath(code.co_filename), _def_line(code)
    except Exception:
        return name, None, None


def _def_line(code):
    """The `def` line of a function (co_firstlineno is its first decorator's line)."""
    import linecache

    line = code.co_firstlineno
    for n in range(line, line + 50):
        text = linecache.getline(code.co_filename, n).lstrip()
        if not text:
            break
        if text.startswith(("def ", "async def ")):
            return n
    return line


def _module_of(model, torch):
    if isinstance(model, torch.nn.Module):
        return model
    owner = getattr(model, "__self__", None)
    return owner if isinstance(owner, torch.nn.Module) else None


class _Silence:
    """stdout/stderr to nowhere; the recorder drops warnings and log records (no handler runs)."""

    def __init__(self, recorder):
        self.recorder = recorder

    def __enter__(self):
        self.saved = (sys.stdout, sys.stderr, self.recorder.silenced)
        sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
        self.recorder.silenced = True

    def __exit__(self, *exc):
        sys.stdout, sys.stderr, self.recorder.silenced = self.saved
        return False


# ----------------------------------------------------------------------------------------------
# the recorder

class _Recorder:
    def __init__(self, record_path, outputs_path, backend_mode, n_calls, eager_gap):
        self.record_path = record_path
        self.outputs_path = outputs_path
        self.backend_mode = backend_mode
        self.n_calls = n_calls
        self.eager_gap = eager_gap
        self.pid = os.getpid()
        self.torch = None
        self.callables = []
        self.breaks = {}
        self.messages = []
        self.calls = []  # outputs.pt "calls"
        self.stack = []
        self.silenced = False
        self.in_gap = False
        self.path_map = {}  # HF_MODULES_CACHE folder -> the folder transformers copied it from
        self.dynamo_log = _DynamoLog(self)
        self.reasons_watched = False
        self.written = False
        self.lock = threading.RLock()

    # -- paths
    def paths(self, path):
        if not path:
            return path
        for cache, source in self.path_map.items():
            if path == cache or path.startswith(cache + os.sep):
                return source + path[len(cache):]
        return path

    # -- messages
    def on_warning(self, msg):
        if self.silenced or self.written:
            return
        filename = str(getattr(msg, "filename", "") or "")
        if any(p in filename for p in _FRAMEWORK_FILES):
            return
        category = getattr(msg, "category", None)
        self.messages.append({"stream": "warning", "source": getattr(category, "__name__", str(category)),
                              "text": str(msg.message)})

    def on_log(self, name, levelname, text):
        if self.silenced or self.written or name == "torch" or name.startswith("torch."):
            return
        self.messages.append({"stream": "log", "source": name, "level": levelname, "text": text})

    # -- Dynamo's records
    def on_dynamo_record(self, record):
        if self.in_gap:
            return
        cc = self.stack[-1] if self.stack else None
        if record.name.endswith(".__recompiles"):
            if cc is not None:
                cc.recompiles += 1
            return
        if not record.name.endswith(".__graph_breaks"):
            return
        message = record.getMessage()
        file, line, reason, kind, action, gb, context = parse_break(message, record.exc_info)
        index = cc.index if cc is not None else None
        key = (index, gb, file, line, reason, action)
        entry = self.breaks.get(key)
        if entry is None:
            # The user-code frames, outermost first: the join finds in them the innermost line of
            # the project when Dynamo's own site lies in a library (logging, transformers).
            traceback = message.split("User code traceback:", 1)[1] if "User code traceback:" in message else message
            stack = [[f, int(n)] for f, n in _FRAME.findall(traceback)]
            self.breaks[key] = {"callable": index, "gb": gb, "reason": reason, "kind": kind, "action": action,
                                "file": file, "line": line, "context": context, "count": 1, "stack": stack}
        else:
            entry["count"] += 1

    def on_compile_reason(self, reason):
        """A graph break this torch does not log (_watch_compile_reasons): Dynamo's reason text
        and the user frames it names; no gb code, no context."""
        if self.in_gap:
            return
        cc = self.stack[-1] if self.stack else None
        stack = [[os.path.abspath(f.filename), int(f.lineno)] for f in (reason.user_stack or [])]
        file, line = stack[-1] if stack else (None, None)
        text = str(reason.reason)
        index = cc.index if cc is not None else None
        key = (index, None, file, line, text, "break")
        entry = self.breaks.get(key)
        if entry is None:
            self.breaks[key] = {"callable": index, "gb": None, "reason": text, "kind": classify(text),
                                "action": "break", "file": file, "line": line, "context": "", "count": 1,
                                "stack": stack}
        else:
            entry["count"] += 1

    # -- torch
    def on_torch(self, torch):
        if self.torch is not None or getattr(torch, "_graphmend_verify_patched", False):
            return
        self.torch = torch
        original = torch.compile
        recorder = self

        @functools.wraps(original)
        def compile(model=None, *args, **kwargs):
            try:
                return recorder.compile(original, model, args, kwargs)
            except _PassThrough:
                return original(model, *args, **kwargs)

        compile.__wrapped__ = original
        torch.compile = compile
        torch._graphmend_verify_patched = True

    def compile(self, original, model, args, kwargs):
        torch = self.torch
        if model is None or args or kwargs.get("disable"):
            raise _PassThrough  # decorator form (its inner call comes back here) or a no-op
        name, file, line = _describe(model, torch)
        cc = _Callable(len(self.callables), name, file, line)
        user_backend = kwargs.pop("backend", "inductor")
        mode = kwargs.pop("mode", None)
        options = kwargs.pop("options", None)
        options = dict(options) if isinstance(options, dict) else options
        guard_filter_fn = options.pop("guard_filter_fn", None) if isinstance(options, dict) else None
        inner = None
        if self.backend_mode == "user":
            inner = _resolve_backend(torch, user_backend, mode, options, kwargs.get("dynamic"), kwargs.get("name"))
        backend = _Backend(cc, inner)
        if guard_filter_fn is not None:
            kwargs["options"] = {"guard_filter_fn": guard_filter_fn}
        compiled = original(model, backend=backend, **kwargs)
        self.callables.append(cc)
        if not self.reasons_watched:
            self.reasons_watched = True
            try:
                _watch_compile_reasons(self, torch)
            except Exception:
                pass
        try:
            self.dynamo_log.ensure()
        except Exception:
            pass
        if isinstance(compiled, torch.nn.Module) and compiled is not model and "forward" in vars(compiled):
            compiled.forward = self.wrap_call(cc, compiled.forward, model)
            return compiled
        if compiled is model:
            return compiled
        return self.wrap_call(cc, compiled, model)

    def wrap_call(self, cc, fn, eager):
        recorder = self

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if recorder.in_gap or os.getpid() != recorder.pid:
                return fn(*args, **kwargs)
            return recorder.call(cc, fn, eager, args, kwargs)

        return call

    def call(self, cc, fn, eager, args, kwargs):
        torch = self.torch
        cc.calls += 1
        k = cc.calls
        save = k <= self.n_calls
        gap = save and self.eager_gap
        before = _snapshot(torch, eager, owner=True) if gap else None
        try:
            self.dynamo_log.ensure()
        except Exception:
            pass
        self.stack.append(cc)
        start = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except BaseException as exc:
            cc.times.append(time.perf_counter() - start)
            self.stack.pop()
            if save:
                self.calls.append({"callable": cc.index, "call": k, "leaves": {}, "other": {}, "gaps": {},
                                   "exception": _exc_text(exc)})
            raise
        cc.times.append(time.perf_counter() - start)
        self.stack.pop()
        if save:
            try:
                leaves, other = flatten(out, torch)
            except Exception as exc:
                leaves, other = {}, {"": f"<outputs not saved: {_exc_text(exc)}>"}
            entry = {"callable": cc.index, "call": k, "leaves": leaves, "other": other, "gaps": {}, "exception": None}
            self.calls.append(entry)
            if gap:
                try:
                    entry["gaps"] = self.eager_gap_of(eager, args, kwargs, before, leaves)
                except Exception as exc:  # the gap is best effort; the program goes on
                    entry["gap_error"] = _exc_text(exc)
        return out

    def eager_gap_of(self, eager, args, kwargs, before, leaves):
        torch = self.torch
        if before.get("owner_error"):
            # The callable's object keeps Python state a call changes (a diffusers scheduler's
            # step index and past outputs) that could not be copied: an eager call would run
            # from the wrong state and leave the program's object a step ahead.
            raise RuntimeError(f"state of {before['owner_error']}")
        after = _snapshot(torch, eager)
        _restore(torch, before)
        owner, owner_after = before.get("owner"), None
        if owner is not None:  # the eager call runs on the copy of the state before the call
            owner_after = dict(vars(owner[0]))
            vars(owner[0]).clear()
            vars(owner[0]).update(owner[1])
        self.in_gap = True
        try:
            with _Silence(self), _force_eager(torch):
                try:
                    out = eager(*args, **kwargs)
                    ref, _ = flatten(out, torch)
                except Exception:
                    ref = {}
        finally:
            self.in_gap = False
            _restore(torch, after)
            if owner is not None:  # the program's own state after its call, untouched
                vars(owner[0]).clear()
                vars(owner[0]).update(owner_after)
        return {path: (_max_abs_diff(t, ref[path], torch) if path in ref else float("inf"))
                for path, t in leaves.items()}

    # -- writing
    def to_json(self, complete):
        import platform

        torch_version = None
        if self.torch is not None:
            torch_version = str(getattr(self.torch, "__version__", None))
        breaks = []
        for entry in self.breaks.values():
            entry = dict(entry)
            entry["file"] = self.paths(entry["file"])
            entry["stack"] = [[self.paths(f), n] for f, n in entry.get("stack", [])]
            entry["context"] = _FILE_LINE.sub(lambda m: f"{self.paths(m[1])}:{m[2]}", entry["context"])
            breaks.append(entry)
        outputs = [{"callable": c["callable"], "call": c["call"], "leaves": len(c["leaves"]) + len(c["other"]),
                    "exception": c["exception"]} for c in self.calls]
        return {"schema": 1, "torch": torch_version, "python": platform.python_version(), "executable": sys.executable,
                "complete": complete, "callables": [c.to_json(self.paths) for c in self.callables],
                "breaks": breaks, "messages": list(self.messages), "outputs": outputs}

    def write(self, complete=True):
        with self.lock:
            if self.written or os.getpid() != self.pid:
                return
            self.written = True  # what comes after (other atexit handlers) is not recorded
            record = self.to_json(complete)
            _atomic_write(self.record_path, json.dumps(record, indent=1, default=str).encode())
            if self.outputs_path and self.torch is not None:
                data = {"callables": [{"index": c.index, "name": c.name} for c in self.callables],
                        "calls": self.calls}
                tmp = f"{self.outputs_path}.tmp{os.getpid()}"
                self.torch.save(data, tmp)
                os.replace(tmp, self.outputs_path)


class _PassThrough(Exception):
    pass


def _exc_text(exc):
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _atomic_write(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _resolve_backend(torch, backend, mode, options, dynamic, name):
    """The backend torch.compile itself would build from (backend, mode, options)."""
    if mode is None and options is None:
        mode = "default"
    if backend == "inductor":
        cls = getattr(torch, "_TorchCompileInductorWrapper", None)
        if cls is not None:
            try:
                return cls(mode, options, dynamic, name)
            except TypeError:  # torch < 2.10: no name
                return cls(mode, options, dynamic)
    cls = getattr(torch, "_TorchCompileWrapper", None)
    if cls is not None:
        return cls(backend, mode, options, dynamic)
    if isinstance(backend, str):
        import torch._dynamo

        return torch._dynamo.lookup_backend(backend)
    return backend


def _snapshot(torch, eager, owner=False):
    """What the eager gap run must not change: RNG states and the module's tensors; with owner,
    also a deep copy of the attributes of the object a compiled bound method belongs to when it
    is not a module (a diffusers scheduler's `step` advances `_step_index`, appends to lists):
    the eager call runs on that copy, and the program's object keeps what its own call left."""
    state = {"cpu": torch.get_rng_state(), "cuda": None, "tensors": []}
    self_ = getattr(eager, "__self__", None)
    if owner and self_ is not None and not isinstance(self_, (torch.nn.Module, type, types.ModuleType)):
        try:
            state["owner"] = (self_, copy.deepcopy(vars(self_)))
        except Exception as exc:
            state["owner_error"] = f"{type(self_).__name__} not copied: {_exc_text(exc)}"
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
    except Exception:
        pass
    module = _module_of(eager, torch)
    if module is not None:
        seen = set()
        for t in list(module.parameters()) + list(module.buffers()):
            if id(t) not in seen:
                seen.add(id(t))
                state["tensors"].append((t, t.detach().clone()))
    return state


def _restore(torch, state):
    torch.set_rng_state(state["cpu"])
    if state["cuda"] is not None:
        try:
            torch.cuda.set_rng_state_all(state["cuda"])
        except Exception:
            pass
    with torch.no_grad():
        for t, saved in state["tensors"]:
            if t.shape == saved.shape and t.dtype == saved.dtype:
                t.copy_(saved)


class _force_eager:
    """Dynamo off for the block, nested compiled callables included where torch can."""

    def __init__(self, torch):
        self.torch = torch
        self.ctx = None

    def __enter__(self):
        compiler = getattr(self.torch, "compiler", None)
        set_stance = getattr(compiler, "set_stance", None)
        if set_stance is not None:
            self.ctx = set_stance("force_eager")
            self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)
        return False


# ----------------------------------------------------------------------------------------------
# import machinery: the redirect and the post-import patches

class _Redirect:
    def __init__(self, pairs):
        self.pairs = []
        for original, fixed in pairs:
            for o in {os.path.abspath(original), os.path.realpath(original)}:
                self.pairs.append((o.rstrip(os.sep), os.path.abspath(fixed).rstrip(os.sep)))

    def fixed_path(self, path):
        """The fixed counterpart of path (a file or folder) when it lies under an original root
        and exists; else None."""
        if not path:
            return None
        for candidate in {os.path.abspath(path), os.path.realpath(path)}:
            for original, fixed in self.pairs:
                if candidate == original or candidate.startswith(original + os.sep):
                    target = fixed + candidate[len(original):]
                    if os.path.exists(target):
                        return target
        return None


class _Finder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: asks the finders after it, then (a) loads a module whose file lies
    under an original root from the fixed root, (b) runs a patch after torch (or transformers'
    dynamic_module_utils) has executed."""

    def __init__(self, redirect, recorder):
        self.redirect = redirect
        self.recorder = recorder
        self.local = threading.local()

    def _others(self, fullname, path, target):
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, _Finder):
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def find_spec(self, fullname, path=None, target=None):
        if getattr(self.local, "busy", False):
            return None
        patch = self._patch_for(fullname)
        if self.redirect is None and patch is None:
            return None
        self.local.busy = True
        try:
            spec = self._others(fullname, path, target)
        finally:
            self.local.busy = False
        if spec is None:
            return self._only_fixed(fullname, path)
        if self.redirect is not None and spec.origin and spec.has_location:
            fixed = self.redirect.fixed_path(spec.origin)
            if fixed is not None and fixed != spec.origin and fixed.endswith(".py"):
                loader = importlib.machinery.SourceFileLoader(fullname, fixed)
                spec = importlib.util.spec_from_file_location(
                    fullname, fixed, loader=loader,
                    submodule_search_locations=spec.submodule_search_locations)
        if patch is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader, patch)
        return spec

    def _only_fixed(self, fullname, path):
        """A module only the fixed copy has (graphmend's `_graphmend_runtime.py`), looked for in
        the fixed counterparts of the folders the import searches; else None."""
        if self.redirect is None:
            return None
        name = fullname.rpartition(".")[2]
        for entry in (path if path is not None else sys.path):
            folder = self.redirect.fixed_path(os.path.abspath(entry or os.curdir))
            if folder is None or not os.path.isdir(folder):
                continue
            candidate = os.path.join(folder, name + ".py")
            if os.path.isfile(candidate):
                loader = importlib.machinery.SourceFileLoader(fullname, candidate)
                return importlib.util.spec_from_file_location(fullname, candidate, loader=loader)
        return None

    def _patch_for(self, fullname):
        if self.recorder is not None and fullname == "torch":
            return self.recorder.on_torch
        if fullname == "transformers.dynamic_module_utils":
            return functools.partial(_patch_dynamic_modules, self.redirect, self.recorder)
        return None


class _PatchingLoader(importlib.abc.Loader):
    """Runs `patch(module)` after the real loader executed the module; then steps aside."""

    def __init__(self, loader, patch):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self.loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.loader
        self.loader.exec_module(module)
        try:
            self.patch(module)
        except Exception as exc:
            _complain(exc)

    def __getattr__(self, name):
        return getattr(self.__dict__["loader"], name)


def _patch_dynamic_modules(redirect, recorder, module):
    """transformers copies a local folder's remote code into HF_MODULES_CACHE/transformers_modules/
    <folder name>/ and imports the copy by file, past sys.meta_path. In a redirected run the copies
    are replaced by the fixed folder's files (same module names, `transformers_modules.delta...`,
    in both runs); recorded file names under that cache folder are mapped back to the folder the
    code came from (the original folder, or the fixed one in a redirected run)."""
    original = getattr(module, "get_cached_module_file", None)
    if original is None:
        return

    @functools.wraps(original)
    def get_cached_module_file(pretrained_model_name_or_path, module_file, *args, **kwargs):
        result = original(pretrained_model_name_or_path, module_file, *args, **kwargs)
        source = pretrained_model_name_or_path
        cache = getattr(module, "HF_MODULES_CACHE", None)
        if not (isinstance(source, (str, os.PathLike)) and os.path.isdir(source) and cache
                and isinstance(result, str) and result.endswith(module_file)):
            return result
        source = os.path.abspath(os.fspath(source))
        folder = os.path.abspath(os.path.join(cache, result[: -len(module_file)])).rstrip(os.sep)
        fixed = redirect.fixed_path(source) if redirect is not None else None
        if fixed is not None and os.path.isdir(fixed):
            import shutil

            for root, _, files in os.walk(folder):
                for name in files:
                    if not name.endswith(".py"):
                        continue
                    copy = os.path.join(root, name)
                    counterpart = os.path.join(fixed, os.path.relpath(copy, folder))
                    if os.path.isfile(counterpart):
                        shutil.copyfile(counterpart, copy)
                        try:  # a stale .pyc of the original must not be used
                            os.remove(importlib.util.cache_from_source(copy))
                        except OSError:
                            pass
            # Modules only the fixed copy has (the runtime module graphmend adds, which the fixed
            # files import relatively): transformers resolves the cache copy's relative imports
            # inside the cache folder, so they go there too.
            for root, _, files in os.walk(fixed):
                for name in files:
                    rel = os.path.relpath(os.path.join(root, name), fixed)
                    if (name.endswith(".py") and not os.path.exists(os.path.join(source, rel))
                            and not os.path.exists(os.path.join(folder, rel))):
                        os.makedirs(os.path.dirname(os.path.join(folder, rel)), exist_ok=True)
                        shutil.copyfile(os.path.join(root, name), os.path.join(folder, rel))
            source = fixed
        if recorder is not None:
            recorder.path_map[folder] = source
        return result

    module.get_cached_module_file = get_cached_module_file


class _RunMainFromFixed:
    """`python SCRIPT` with SCRIPT under an original root: run the fixed copy as __main__
    (audit event cpython.run_file comes after sys.path[0] is set, before the file runs)."""

    def __init__(self, redirect):
        self.redirect = redirect
        self.done = False

    def __call__(self, event, args):
        if event != "cpython.run_file" or self.done:
            return
        self.done = True
        fixed = self.redirect.fixed_path(os.fsdecode(args[0])) if args else None
        if fixed is None or not fixed.endswith(".py"):
            return
        main = sys.modules["__main__"]
        with open(fixed, "rb") as f:
            code = compile(f.read(), fixed, "exec")
        main.__file__ = fixed
        main.__cached__ = None
        try:
            exec(code, main.__dict__)
        except SystemExit:
            raise
        except BaseException as exc:  # the traceback the program's own run prints, less our frame
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
            sys.excepthook(type(exc), exc.with_traceback(tb), tb)
            raise SystemExit(1) from None
        raise SystemExit(0)


# ----------------------------------------------------------------------------------------------
# messages: warnings and log records

def _install_messages(recorder):
    show = warnings._showwarnmsg

    def _showwarnmsg(msg):
        if recorder.silenced:
            return None
        try:
            recorder.on_warning(msg)
        except Exception:
            pass
        return show(msg)

    warnings._showwarnmsg = _showwarnmsg

    call_handlers = logging.Logger.callHandlers

    def callHandlers(self, record):
        if recorder.silenced:
            return None
        try:
            recorder.on_log(record.name, record.levelname, record.getMessage())
        except Exception as exc:
            recorder.on_log(record.name, record.levelname, f"<getMessage failed: {type(exc).__name__}>")
        return call_handlers(self, record)

    callHandlers.__wrapped__ = call_handlers
    logging.Logger.callHandlers = callHandlers


# ----------------------------------------------------------------------------------------------

def _complain(exc):
    try:
        sys.__stderr__.write(f"graphmend verify: hook failed: {type(exc).__name__}: {exc}\n")
    except Exception:
        pass


def _on_sigterm(signum, frame):
    try:
        if R is not None:
            R.write(complete=False)
    except Exception as exc:
        _complain(exc)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _at_exit():
    try:
        if R is not None:
            R.write(complete=True)
    except Exception as exc:
        _complain(exc)


def install(environ=None):
    """Set the hook up from the environment; nothing without GRAPHMEND_VERIFY_RECORD."""
    global R
    env = os.environ if environ is None else environ
    record = env.get("GRAPHMEND_VERIFY_RECORD")
    if not record:
        return None
    redirect = None
    if env.get("GRAPHMEND_VERIFY_REDIRECT"):
        redirect = _Redirect(json.loads(env["GRAPHMEND_VERIFY_REDIRECT"]))
    owner = env.get(_OWNER_VAR)
    recorder = None
    if not owner or owner == str(os.getpid()):
        # The process the record is for; its child processes (Inductor's compile workers, spawned
        # data loaders) inherit the variables and load fixed code, but record nothing.
        os.environ[_OWNER_VAR] = str(os.getpid())
        recorder = _Recorder(
            os.path.abspath(record),
            os.path.abspath(env["GRAPHMEND_VERIFY_OUTPUTS"]) if env.get("GRAPHMEND_VERIFY_OUTPUTS") else None,
            "user" if env.get("GRAPHMEND_VERIFY_BACKEND", "count").strip().lower() == "user" else "count",
            int(env.get("GRAPHMEND_VERIFY_CALLS") or 3),
            env.get("GRAPHMEND_VERIFY_EAGER_GAP", "") == "1")
        R = recorder
        _install_messages(recorder)
        atexit.register(_at_exit)
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _on_sigterm)
        except (ValueError, OSError):  # not the main thread
            pass
    sys.meta_path.insert(0, _Finder(redirect, recorder))
    if redirect is not None:
        sys.addaudithook(_RunMainFromFixed(redirect))
    if recorder is not None and "torch" in sys.modules:
        recorder.on_torch(sys.modules["torch"])
    return recorder


try:
    install()
except Exception as _exc:  # never the program's problem
    _complain(_exc)
