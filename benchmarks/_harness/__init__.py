"""Helpers for benchmarks/graph_breaks.py (graphmend's verification harness).

Modules:
    capture    -- record stdout, stderr, warnings and log records of a call (no torch import)
    paths      -- make file names in messages independent of where a file lives
    tensors    -- flatten model outputs, hash them, compare them bit for bit
    dynamo     -- counting backend and Dynamo's graph-break counter
    fixer      -- locate and run the graphmend binary
    expect     -- parse `# expect: KEY: VALUE` header lines
    models     -- registry of transformers models for `--model`
    model_arm  -- child process of one `--model` arm (before / after)
    model_bench-- parent side of `--model`: copy, fix, run both arms, compare
    case_arm   -- child process of one `--case` arm (original / fixed, eager / compiled)
    case_bench -- parent side of `--case`: fix, run the arms, evaluate the checks
    identity_fix -- stand-in for the graphmend binary that changes nothing
    suite      -- `--suite reference|sweep`: many rows, totals (benchmarks/sweep.py runs the sweep)
    sweep      -- the sweep's architectures and their small-config builder
    report_text-- markdown helpers of benchmarks/report.py
    sweep_report -- report.py's sweep section: tables, totals, breaks left by kind, MoE line

Child processes are started as scripts; this package must not import torch at
import time, because the capture has to be installed before torch and
transformers are imported.
"""
