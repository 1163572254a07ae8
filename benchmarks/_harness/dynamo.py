"""Count the FX graphs and graph breaks of one compiled call.

    counter = GraphCounter()
    compiled = counter.compile(model)          # torch._dynamo.reset() + counters cleared
    compiled(*inputs)
    counter.graphs                             # FX graphs handed to the backend
    counter.dynamo_breaks()                    # sum of counters["graph_break"]
    counter.break_reasons()                    # {reason: count}
    counter.graph_sites                        # per graph: {"ops", "first", "last"} (user-code file:line)

DynamoLog (below) collects where each break happened and why each recompile did.
"""
from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path

import torch
import torch._dynamo
from torch._dynamo.utils import counters


class GraphCounter:
    """A counting backend: each FX graph Dynamo produces is counted and run as traced."""

    def __init__(self, paths=None):
        self.graphs = 0
        self.graph_sites = []
        self.paths = paths or (lambda p: p)

    def backend(self, gm, example_inputs):
        """torch.compile backend: count the graph, note where its code comes from, run its
        forward unchanged."""
        self.graphs += 1
        self.graph_sites.append(self._origin(gm))
        return gm.forward

    def _origin(self, gm):
        """{"ops": operations in the graph, "first"/"last": the innermost user-code file:line of
        its first and last operation (None when Dynamo recorded no stack trace), "callers": the
        two frames around "first", outermost first (who called the code the graph starts in)}."""
        ops = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
        stacks = [[f"{self.paths(f)}:{line}" for f, line in _FRAME.findall(n.meta.get("stack_trace") or "")]
                  for n in ops[:1] + ops[-1:]]
        first, last = (stacks[0], stacks[-1]) if stacks else ([], [])
        return {"ops": len(ops), "first": (first or [None])[-1], "last": (last or [None])[-1],
                "callers": first[-3:-1]}

    def compile(self, model):
        """Reset Dynamo and its counters, then compile with this backend, dynamic=False."""
        torch._dynamo.reset()
        counters.clear()
        self.graphs = 0
        self.graph_sites = []
        return torch.compile(model, backend=self.backend, dynamic=False)

    @staticmethod
    def dynamo_breaks():
        """Dynamo's own count of graph breaks (sum over counters['graph_break'])."""
        return int(sum(counters["graph_break"].values()))

    @staticmethod
    def break_reasons():
        """Dynamo's graph-break reasons with their counts."""
        return {str(k): int(v) for k, v in counters["graph_break"].items()}


class DynamoLog(logging.Handler):
    """Collect Dynamo's graph-break and recompile log records, printing nothing.

        log = DynamoLog(paths)           # paths: a PathMapper for file names
        with log:
            log.call = 1                 # optional: tags the entries below
            compiled(...)
        log.break_sites   # [{"site": "file:line", "reason": first line, "kind": cause (see classify),
                          #   "action": "break"|"skip", "gb": "GB0170" or None,
                          #   "context": Dynamo's developer context (first line, cut), "call": 1}]
        log.recompiles    # [{"message": "Recompiling function f in file:line\n - guard failure...", "call": 2}]

    Inside the block the "graph_breaks" and "recompiles" artifact loggers (what
    TORCH_LOGS=graph_breaks,recompiles turns on) log at DEBUG to this handler
    only (propagation off, so torch's own handlers print nothing); their old
    levels, propagation and torch's enabled-artifact set are restored on exit.
    One entry per record: a break inside nested calls is logged once for each
    frame it splits, every time at the same innermost user-code site.
    """

    ARTIFACTS = ("graph_breaks", "recompiles")

    def __init__(self, paths=None):
        super().__init__(logging.DEBUG)
        self.paths = paths or (lambda p: p)
        self.break_sites = []
        self.recompiles = []
        self.call = None
        self._saved = []

    def __enter__(self):
        from torch._logging._internal import log_registry, log_state

        self._saved_artifacts = set(log_state.artifact_names)
        for name in self.ARTIFACTS:  # guards.py checks the set before logging recompiles
            log_state.enable_artifact(name)
        for qname in sorted(log_registry.get_artifact_log_qnames()):
            if qname.rsplit(".__", 1)[-1] in self.ARTIFACTS:
                logger = logging.getLogger(qname)
                self._saved.append((logger, logger.level, logger.propagate))
                logger.setLevel(logging.DEBUG)
                logger.propagate = False
                logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        from torch._logging._internal import log_state

        for logger, level, propagate in self._saved:
            logger.removeHandler(self)
            logger.setLevel(level)
            logger.propagate = propagate
        self._saved = []
        log_state.artifact_names.clear()
        log_state.artifact_names.update(self._saved_artifacts)
        return False

    def emit(self, record):
        message = record.getMessage()
        if record.name.endswith(".__recompiles"):
            self.recompiles.append({"message": self._map_files(message.strip()), "call": self.call})
        else:
            self.break_sites.append({**self._break_site(message, record), "call": self.call})

    def _map_files(self, text):
        """`text` with absolute "FILE.py:LINE" and 'File "FILE"' names mapped by self.paths."""
        text = _FILE_LINE.sub(lambda m: f"{self.paths(m[1])}:{m[2]}", text)
        return _FILE_QUOTED.sub(lambda m: f'File "{self.paths(m[1])}"', text)

    def _break_site(self, message, record):
        """{"site", "reason", "kind", "action", "gb", "context"} of one record.

        action is "skip" when Dynamo gave up on the whole frame and ran it eagerly,
        else "break". The site is the innermost user-code line, so a break that
        splits several nested frames appears once per frame, at the same site.
        kind is the cause, from classify().
        """
        action = "skip" if "Skipping the function" in message or "results in a skip" in message else "break"
        at = _USER_CODE_AT.search(message)
        if at:  # "Graph break [(...)] in user code at FILE:LINE\nGraph Break Reason: ..."
            site = f"{self.paths(at[1])}:{at[2]}"
            text = message.split("Graph Break Reason:", 1)[-1].split("User code traceback:", 1)[0]
        else:  # "Graph break: ... results in a skip ... in the following user code:\n  File ..."
            frames = _FRAME.findall(message)
            site = f"{self.paths(frames[-1][0])}:{frames[-1][1]}" if frames else "?"
            text = str(record.exc_info[1]) if record.exc_info else message
        lines = [line.strip() for line in text.splitlines()]
        reasons = [line for line in lines if line and not line.startswith(_WRAPPERS)]
        reason = (reasons or lines or [""])[0]
        gb = _GB_CODE.search(text) or _GB_CODE.search(message)
        gb = gb[1].upper() if gb else None
        context = _CONTEXT.search(text)
        context = self._map_files(context[1].strip())[:200] if context else ""
        opcode = _OPCODE.search(text)
        kind = classify(reason, gb, context, opcode[1] if opcode else "", text)
        return {"site": site, "reason": reason, "kind": kind, "action": action, "gb": gb, "context": context}


# The fixed labels classify() gives; "dynamic shape (aten.OP)", "data-dependent operator
# (aten.OP)", "unsupported: <reason>" and "other: <reason>" carry the detail with them.
KINDS = (
    "data-dependent branch", "data-dependent assert", ".item()", ".tolist()", "nonzero",
    "boolean mask index (nonzero)", "dynamic shape", "dynamic shape (slice by tensor)",
    "tensor read as a Python number", "data-dependent operator", "logging", "print", "warnings.warn",
    "torch.compiler.disable", "call to a skipped function", "unsupported context manager", "numpy",
    "exception", "fake tensor propagation", "unsupported builtin",
)


def _load_hook():
    """graphmend verify's hook (src/verify/python/_graphmend_verify_hook.py), loaded by path: it
    must stand alone in the user's Python, so it holds the one classify() the harness uses too.
    Importing it installs nothing (its install() is sitecustomize's to call)."""
    path = Path(__file__).resolve().parents[2] / "src" / "verify" / "python" / "_graphmend_verify_hook.py"
    spec = importlib.util.spec_from_file_location("_graphmend_verify_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The cause of one graph break, in a few words, from Dynamo's reason: classify(reason, gb,
# context, opcode, text), with reason the first line of Dynamo's reason, gb its registry code
# ("GB0170") when the message names one, context the "Developer debug context" line, opcode the
# bytecode Dynamo was tracing, text the whole reason. Known causes get a label of KINDS; any other
# comes back as "other: <reason>" so the reason is never lost.
classify = _load_hook().classify


# Dynamo's first lines around the real reason ("...trace CALL: a function call ...:").
_WRAPPERS = ("Encountered graph break when attempting to trace", "Failed to handle graph break gracefully")
_USER_CODE_AT = re.compile(r"in user code at (.+?):(\d+)\s*$", re.MULTILINE)
_FRAME = re.compile(r'File "(.+?)", line (\d+)')
_FILE_LINE = re.compile(r"(/\S+?\.py):(\d+)")
_FILE_QUOTED = re.compile(r'File "(/[^"]+)"')
_GB_CODE = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)
_CONTEXT = re.compile(r"Developer debug context:(.*)")
_OPCODE = re.compile(r"attempting to trace ([A-Z_]+)")
