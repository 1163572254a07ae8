"""Child process of `latency.py`: one arm (original or fixed) of one repetition, timed.

    python latency_arm.py --model t5 --package-root DIR --out RESULT.json --outputs OUT.pt
                          (--save-state SD.pt | --load-state SD.pt)
                          [--device cpu|cuda] [--warmup 5] [--calls 50] [--threads N]

The parent starts it in a fresh process with fresh compile caches (TORCHINDUCTOR_CACHE_DIR
a new empty folder, TORCHINDUCTOR_FX_GRAPH_CACHE=0, TORCHINDUCTOR_AUTOGRAD_CACHE=0) and,
for the fixed arm, PYTHONPATH at the fixed copy of the package; --package-root is the
folder the package must be imported from (the arm fails if it is not).

The model is built after torch.manual_seed(0) in float32, moved to --device, its state_dict
saved (--save-state) or loaded strictly (--load-state); inputs are made after
torch.manual_seed(0). Then torch._dynamo.reset() and
torch.compile(model, backend="inductor", dynamic=False), eval mode, under torch.no_grad():

  call 1       first_call_s: wall time (time.perf_counter) of the first call; on cuda,
               after torch.cuda.synchronize() before and after;
               compile_s: the compile time inside that call, from Dynamo's own timers
               (torch._dynamo.utils.calculate_time_spent(), reset by torch._dynamo.reset()):
               "entire_frame_compile" (the whole of each frame's compile: tracing, guards,
               AOT autograd, Inductor lowering, code generation and the C++/Triton build)
               plus "gc" (the collection Dynamo runs after each frame's compile), summed
               over every frame compiled in the call;
               cold_start_s = first_call_s - compile_s: the first call with compile time
               excluded (running each graph the first time, the eager code between graphs,
               guard checks, first allocations and thread-pool start-up);
  call 2       second_call_s: the first call after compilation, timed the same way;
  --warmup     calls, not timed;
  --calls      calls timed one by one (synchronised on cuda): steady-state figures.

Dynamo's compile time is also read after the last call: recompile_s (compile time spent
after call 1; 0 unless a later call recompiled) is recorded, not subtracted anywhere.

Writes RESULT.json: versions, device, threads, package file; the timings above; steady
(median, mean, min, max, q1, q3, n of the timed calls); graphs (Dynamo's unique_graphs
counter after call 1) and dynamo_breaks (sum of its graph_break counter);
compile_phases (every phase of calculate_time_spent() after call 1, seconds);
and exception (type, message) if a call raised. OUT.pt holds the flattened outputs of
call 1 and of the last call, on the CPU, for the parent to compare.
"""
import os
import sys
import time

# Run as a script: make `_harness` importable, keep its own folder off sys.path.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--package-root", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--outputs", required=True)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--save-state")
    group.add_argument("--load-state")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave torch's default)")
    return p.parse_args(argv)


def compile_seconds(phases):
    """Compile time (s) from a calculate_time_spent() dict: entire_frame_compile + gc."""
    return phases.get("entire_frame_compile", 0.0) + phases.get("gc", 0.0)


def main(argv):
    args = parse_args(argv)
    package_root = os.path.realpath(args.package_root)

    import json

    import torch
    import torch._dynamo
    from torch._dynamo.utils import calculate_time_spent, counters

    from _harness import latency_stats, tensors
    from _harness.models import get_spec

    spec = get_spec(args.model)
    package = __import__(spec.package)
    package_file = os.path.realpath(package.__file__)
    if not package_file.startswith(package_root + os.sep):
        raise SystemExit(f"{spec.package} loaded from {package_file}, expected under {package_root}")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch.cuda.is_available() is False")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    torch.manual_seed(0)
    model = spec.build().to(torch.float32)
    if args.save_state:
        torch.save(model.state_dict(), args.save_state)
    else:
        model.load_state_dict(torch.load(args.load_state), strict=True)
    model = model.to(device).eval()
    torch.manual_seed(0)
    inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v
              for k, v in spec.inputs(torch.float32).items()}

    torch._dynamo.reset()  # also clears calculate_time_spent()'s totals
    counters.clear()
    compiled = torch.compile(model, backend="inductor", dynamic=False)

    result = {"model": spec.name, "torch": torch.__version__, spec.package: package.__version__,
              "package_file": package_file, "device": str(device),
              "device_name": torch.cuda.get_device_name(device) if cuda else None,
              "threads": torch.get_num_threads(), "warmup": args.warmup, "calls": args.calls,
              "exception": None}

    def timed_call():
        sync()
        start = time.perf_counter()
        out = compiled(**inputs)
        sync()
        return out, time.perf_counter() - start

    leaves = []
    call = 0
    try:
        with torch.no_grad():
            call = 1
            out, first = timed_call()
            phases = calculate_time_spent()
            leaves += tensors.flatten(out, "out")
            compile_s = compile_seconds(phases)
            result.update({
                "first_call_s": first, "compile_s": compile_s, "cold_start_s": first - compile_s,
                "compile_phases": phases,
                "graphs": int(counters["stats"]["unique_graphs"]),
                "dynamo_breaks": int(sum(counters["graph_break"].values())),
            })
            call = 2
            _, result["second_call_s"] = timed_call()
            for _ in range(args.warmup):
                call += 1
                timed_call()
            times = []
            for _ in range(args.calls):
                call += 1
                out, seconds = timed_call()
                times.append(seconds)
            leaves += tensors.flatten(out, "last")
            result["steady"] = latency_stats.timing_summary(times)
            result["steady_s"] = result["steady"]["median"] if times else None
            result["recompile_s"] = compile_seconds(calculate_time_spent()) - compile_s
            result["graphs_all_calls"] = int(counters["stats"]["unique_graphs"])
    except Exception as exc:  # reported by the parent
        import traceback

        result["exception"] = {"type": type(exc).__name__, "message": str(exc)[:2000], "call": call,
                               "traceback": traceback.format_exc()[-6000:]}
    leaves = [(p, x.cpu() if isinstance(x, torch.Tensor) else x) for p, x in leaves]
    torch.save(leaves, args.outputs)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0 if result["exception"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
