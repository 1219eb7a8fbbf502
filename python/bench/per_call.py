#!/usr/bin/env python3
"""Per-call cost of a 1-element add from Python: trireme beside NumPy (CPU) and PyTorch (CUDA), in one process.

    python3 python/bench/per_call.py                     # the CPU backend with NumPy inputs, and CUDA where here
    python3 python/bench/per_call.py --device cuda:0 --calls 5000 --repeat 7

Each case runs `calls` calls back to back, then waits for the device once (torch.cuda.synchronize,
ctx.synchronize), and reports microseconds per call (wall clock; --clock thread for the calling thread's CPU
time, steadier where other work shares the cores): the minimum over `repeat` runs (the figure least
disturbed by other work on the machine) and the median. Every case gives `out=`, so no call allocates. Cases:
  cpu   numpy.add(x, y, out=z) (the floor of any Python call on these arrays); trireme with NumPy arrays
        (ctx.add(x, y, out=z): the arrays' own memory); trireme with trireme tensors
  cuda  torch.add(x, y, out=z); trireme with trireme tensors (ctx.add(tx, ty, out=tz)); trireme with torch's
        tensors imported once (from_dlpack), the way a mixed script passes them; and torch.add(x, y) beside
        trireme.torch's custom op torch.ops.trireme.add(x, y) (both allocate their result; the custom op is
        ordered with torch's stream), where torch.library is new enough
The goal (issue 46): the CPU backend's NumPy case under 10 µs, and trireme's CUDA cases at or below torch's.
Exit status 0 unless a result is wrong (each case's output is checked after timing).
"""

import argparse
import json
import statistics
import sys
import time


CLOCK = time.perf_counter  # --clock thread: time.thread_time, the calling thread's CPU time


def timed(fn, wait, calls, repeat):
    """(min, median) µs per call of `calls` calls and one wait, over `repeat` runs after a warm-up run."""
    fn()
    wait()
    runs = []
    for _ in range(repeat + 1):
        t0 = CLOCK()
        for _ in range(calls):
            fn()
        wait()
        runs.append((CLOCK() - t0) / calls * 1e6)
    runs = runs[1:]
    return min(runs), statistics.median(runs)


def report(rows, name, fig, note=""):
    rows.append({"case": name, "min_us": round(fig[0], 3), "median_us": round(fig[1], 3), "note": note})
    print(f"  {name:44} {fig[0]:8.2f} {fig[1]:10.2f}  {note}")


def cpu_cases(trireme, np, args, rows):
    ctx = trireme.Context("cpu")
    x, y, z = (np.full(1, v, np.float32) for v in (1.5, 2.25, np.nan))
    tx, ty, tz = ctx.tensor(x), ctx.tensor(y), ctx.empty((1,))
    print(f"cpu ({ctx.device['name']}): µs per call, min and median of {args.repeat} runs of {args.calls} calls")
    nothing = lambda: None  # noqa: E731
    report(rows, "numpy.add(x, y, out=z)", timed(lambda: np.add(x, y, out=z), nothing, args.calls, args.repeat))
    z[:] = np.nan
    fig = timed(lambda: ctx.add(x, y, out=z), nothing, args.calls, args.repeat)
    ok = z[0] == np.float32(3.75)
    report(rows, "trireme ctx.add(x, y, out=z), NumPy arrays", fig, "goal < 10 µs" + ("" if ok else "; WRONG RESULT"))
    fig = timed(lambda: ctx.add(tx, ty, out=tz), nothing, args.calls, args.repeat)
    ok &= tz.numpy()[0] == np.float32(3.75)
    report(rows, "trireme ctx.add(tx, ty, out=tz), tensors", fig)
    ctx.close()
    return ok


def cuda_cases(trireme, torch, args, rows):
    dev = torch.device(args.device)
    ctx = trireme.Context(args.device)
    x = torch.full((1,), 1.5, device=dev)
    y = torch.full((1,), 2.25, device=dev)
    z = torch.full((1,), float("nan"), device=dev)
    tx, ty = ctx.tensor(x.cpu().numpy()), ctx.tensor(y.cpu().numpy())
    tz = ctx.empty((1,))
    ix, iy, iz = (trireme.from_dlpack(t, ctx) for t in (x, y, z))
    print(f"{args.device} ({ctx.device['name']}; torch {torch.__version__}): µs per call, min and median of "
          f"{args.repeat} runs of {args.calls} calls")
    tsync = torch.cuda.synchronize
    report(rows, "torch.add(x, y, out=z)", timed(lambda: torch.add(x, y, out=z), tsync, args.calls, args.repeat))
    ok = z.item() == 3.75
    fig = timed(lambda: ctx.add(tx, ty, out=tz), ctx.synchronize, args.calls, args.repeat)
    ok &= tz.numpy()[0] == 3.75
    report(rows, "trireme ctx.add(tx, ty, out=tz), tensors", fig, "goal <= torch")
    z.fill_(float("nan"))
    fig = timed(lambda: ctx.add(ix, iy, out=iz), ctx.synchronize, args.calls, args.repeat)
    ok &= z.item() == 3.75
    report(rows, "trireme ctx.add(...) on torch's tensors", fig, "imported once with from_dlpack")
    try:
        import trireme.torch  # noqa: F401  (registers torch.ops.trireme)
        op = torch.ops.trireme.add
    except (ImportError, AttributeError, RuntimeError) as e:
        print(f"  torch.ops.trireme.add: not measured ({e})")
    else:
        report(rows, "torch.add(x, y)", timed(lambda: torch.add(x, y), tsync, args.calls, args.repeat),
               "allocates its result")
        fig = timed(lambda: op(x, y), tsync, args.calls, args.repeat)
        ok &= op(x, y).item() == 3.75
        report(rows, "torch.ops.trireme.add(x, y)", fig, "a custom op: allocates, ordered with torch's stream")
    ctx.close()
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="cpu, or cuda:N (default: cpu, and cuda:0 where torch sees it)")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--clock", choices=("wall", "thread"), default="wall",
                    help="wall clock (default), or the calling thread's CPU time: on a machine whose cores other "
                         "work shares, the time the calls themselves took (it leaves out waits for the device)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == "thread" else time.perf_counter
    import numpy as np
    import trireme

    rows, ok = [], True
    if args.device in (None, "cpu"):
        ok &= cpu_cases(trireme, np, args, rows)
    if args.device is None or args.device.startswith("cuda"):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is None or not torch.cuda.is_available():
            print("cuda: skipped: " + ("PyTorch is not installed" if torch is None else "torch sees no CUDA device"))
            if args.device:
                return 1
        else:
            args.device = args.device or "cuda:0"
            ok &= cuda_cases(trireme, torch, args, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"calls": args.calls, "repeat": args.repeat, "clock": args.clock, "cases": rows}, f, indent=1)
    if not ok:
        print("a result was wrong")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
