"""Record every message a piece of code emits: stdout, stderr, warnings, log records.

Use (in a fresh process, before torch or transformers are imported):

    recorder = MessageRecorder(path_mapper)
    recorder.install()          # replaces sys.stdout / sys.stderr, wraps Logger.callHandlers
    import transformers         # its StreamHandler now binds the capturing sys.stderr
    with recorder.record() as rec:
        model(...)
    rec.to_json()               # {"events": [...], "stdout": ..., "stderr": ..., ...}

What is recorded, in the order it happens (one list of events):
  * {"kind": "stdout" | "stderr", "text": str}: consecutive writes to the same stream
    are merged, so the way a line is split into write() calls does not matter;
  * {"kind": "warning", "category", "message", "filename", "lineno"}: every warning
    that the filters let through. Filters are NOT changed (`catch_warnings` copies
    them), so once-only rules apply as usual. Entering `catch_warnings` bumps the
    filter version, which clears the per-module once-registries: a lone `record()`
    block starts with fresh once-state, while the `record()` blocks inside one
    `session()` share it, as consecutive calls in a real process do;
  * {"kind": "log", "logger", "level", "message", "pathname", "lineno", "funcName"}:
    every record that passed its logger's level and filters (Logger.callHandlers
    is wrapped at class level), whether or not a handler prints it.

Messages of the compiler itself describe compilation, not the model, and change
with the number of graphs: log records of torch's own loggers ("torch", "torch.*",
e.g. torch.__trace's timed events), the text their handlers print (Dynamo's "Graph break
from `Tensor.item()`" on stderr), and warnings whose file lies in torch's compiler
packages (torch/_dynamo, _inductor, _functorch, fx, ..., e.g. Dynamo's "does not know
how to trace the builtin time.time" at a logging break). They are kept apart under
"framework" and left out of "events" and the per-stream views that arms compare.
Warnings that torch raises on behalf of model code (an op's deprecation, a
requires_grad scalar conversion) carry the caller's file and are kept.

Outside a `record()` block, the streams pass writes through to the real ones.
This module must not import torch.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
import warnings

from .paths import PathMapper


FRAMEWORK_LOGGERS = ("torch",)
# A log call Dynamo runs after a graph break, in the function it resumes, has the resume
# function's name ("torch_dynamo_resume_in_ratio_at_27"): the function of the source is "ratio".
_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")
# Files (as mapped by PathMapper with torch's folder labelled "torch") of the compiler.
FRAMEWORK_FILES = ("torch/_dynamo/", "torch/_inductor/", "torch/_functorch/", "torch/fx/",
                   "torch/_subclasses/", "torch/_guards.py", "torch/_logging/", "torch/_export/",
                   "torch/export/", "torch/_higher_order_ops/", "torch/compiler/")


def is_framework(event):
    """True for the compiler's own messages (see module docstring)."""
    if event["kind"] == "log":
        name = event["logger"]
        return any(name == p or name.startswith(p + ".") for p in FRAMEWORK_LOGGERS)
    if event["kind"] == "warning":
        return str(event["filename"]).startswith(FRAMEWORK_FILES)
    return False


class Recording:
    """The messages of one `record()` block, as an ordered list of events."""

    def __init__(self):
        self.events = []
        self.framework = []

    def add_text(self, kind, text):
        """Append stream text, merged into the previous event if same stream."""
        if not text:
            return
        if self.events and self.events[-1]["kind"] == kind:
            self.events[-1]["text"] += text
        else:
            self.events.append({"kind": kind, "text": text})

    def add(self, event):
        """Append a warning or log event (a dict with a "kind" key)."""
        (self.framework if is_framework(event) else self.events).append(event)

    def stream_text(self, kind):
        """All text written to 'stdout' or 'stderr', joined."""
        return "".join(e["text"] for e in self.events if e["kind"] == kind)

    def to_json(self):
        """A JSON-ready dict: events in order plus one view per stream."""
        return {
            "events": self.events,
            "stdout": self.stream_text("stdout"),
            "stderr": self.stream_text("stderr"),
            "warnings": [e for e in self.events if e["kind"] == "warning"],
            "logs": [e for e in self.events if e["kind"] == "log"],
            "framework": self.framework,
        }


class _CaptureStream(io.TextIOBase):
    """A text stream that records while a Recording is active, else passes through."""

    def __init__(self, recorder, kind, real):
        super().__init__()
        self._recorder = recorder
        self._kind = kind
        self._real = real

    def write(self, text):
        rec = self._recorder.active
        if rec is not None and self._recorder.handling_framework:
            rec.framework.append({"kind": self._kind, "text": str(text)})
        elif rec is not None:
            rec.add_text(self._kind, str(text))
        else:
            self._real.write(text)
        return len(text)

    def flush(self):
        if self._recorder.active is None:
            self._real.flush()

    def writable(self):
        return True

    def isatty(self):
        return False

    @property
    def encoding(self):
        return getattr(self._real, "encoding", "utf-8")

    def fileno(self):
        return self._real.fileno()


class MessageRecorder:
    """Installs the capture hooks once per process and hands out Recordings."""

    def __init__(self, path_mapper=None):
        self.paths = path_mapper or PathMapper()
        self.active = None
        self.real_stdout = sys.stdout
        self.real_stderr = sys.stderr
        self._installed = False
        self._in_session = False
        self.handling_framework = False  # inside the handlers of a compiler log record

    def install(self):
        """Replace sys.stdout/sys.stderr and wrap logging.Logger.callHandlers."""
        if self._installed:
            return
        self._installed = True
        sys.stdout = _CaptureStream(self, "stdout", self.real_stdout)
        sys.stderr = _CaptureStream(self, "stderr", self.real_stderr)
        original = logging.Logger.callHandlers
        recorder = self

        def call_handlers(logger, record):
            rec = recorder.active
            if rec is None:
                return original(logger, record)
            event = recorder._log_event(record)
            rec.add(event)
            # What the compiler's own handlers print (Dynamo's "Graph break from
            # `Tensor.item()`" warning on stderr) is theirs too: kept under "framework".
            outer, recorder.handling_framework = recorder.handling_framework, is_framework(event)
            try:
                return original(logger, record)
            finally:
                recorder.handling_framework = outer

        call_handlers.__wrapped__ = original
        logging.Logger.callHandlers = call_handlers

    def _log_event(self, record):
        try:
            message = record.getMessage()
        except Exception as exc:  # a bad %-format is itself a behaviour to compare
            message = f"<getMessage failed: {type(exc).__name__}: {exc}>"
        return {
            "kind": "log",
            "logger": record.name,
            "level": record.levelname,
            "message": message,
            "pathname": self.paths(record.pathname),
            "lineno": record.lineno,
            "funcName": _RESUME.sub(r"\1", record.funcName or ""),
        }

    def _warning_event(self, message, category, filename, lineno):
        return {
            "kind": "warning",
            "category": f"{category.__module__}.{category.__qualname__}",
            "message": str(message),
            "filename": self.paths(filename),
            "lineno": lineno,
        }

    @contextlib.contextmanager
    def session(self):
        """One warnings context for several record() blocks (a sequence of calls).

        Entering warnings.catch_warnings bumps the filters' version, which clears
        every module's once-registry. A record() inside a session does not enter
        its own, so the "default"/"module"/"once" rules carry over from one
        recorded call to the next as in a real process. Warnings shown inside the
        session but outside any record() go to the real stderr.
        """
        if not self._installed:
            raise RuntimeError("MessageRecorder.install() must run first")
        if self._in_session:
            raise RuntimeError("sessions do not nest")
        with warnings.catch_warnings(record=True):
            # record=True leaves the filters alone and resets showwarning to the
            # default; our hook replaces it (restored on exit) so that warnings
            # land in the same ordered event list as everything else.
            def show(message, category, filename, lineno, file=None, line=None):
                rec = self.active
                if rec is not None:
                    rec.add(self._warning_event(message, category, filename, lineno))
                else:
                    self.real_stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

            warnings.showwarning = show
            self._in_session = True
            try:
                yield self
            finally:
                self._in_session = False

    @contextlib.contextmanager
    def record(self):
        """Record all messages emitted inside the block; yields the Recording.

        Outside a session() the block is a session of its own (fresh once-registries).
        """
        if self.active is not None:
            raise RuntimeError("record() blocks do not nest")
        if not self._in_session:
            with self.session(), self.record() as rec:
                yield rec
            return
        rec = Recording()
        self.active = rec
        try:
            yield rec
        finally:
            self.active = None
