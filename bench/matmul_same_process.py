#!/usr/bin/env python3
"""The f16 matmul of torch (cuBLAS), Triton (bench/anchors.py's kernel) and trireme's CUDA backend measured the
same way in one process: each as ~100 ms of back-to-back calls after ~25 ms of warm-up (do_bench's duty cycle, no
L2 flush: compute-bound sizes), device-timed (torch events on torch's stream; trireme's timer on its stream),
three rounds alternated.

bench/anchors.py times torch and Triton with triton.testing.do_bench (short bursts) in a process of its own, while
`trireme bench` times after a 1 s warm-up: on a GPU at its power cap the two duty cycles run at different clocks,
so their figures do not compare. This puts the three side by side under one method and checks that trireme's
output matches torch's.

    PYTHONPATH=python TRIREME_LIBRARY=build-gpu/libtrireme.so python3 bench/matmul_same_process.py

Needs torch with CUDA, Triton and a trireme built with the CUDA backend (bench/gpu_run.sh's machine)."""
import os
import statistics
import sys
import time


def skip(reason):
    print(f"matmul_same_process: skipped: {reason}")
    sys.exit(0)


try:
    import torch
except ImportError:
    skip("PyTorch is not installed")
if not torch.cuda.is_available():
    skip("torch sees no CUDA device")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import anchors  # noqa: E402  (needs Triton, as the anchors do)
import trireme  # noqa: E402

try:
    ctx = trireme.Context("cuda:0")
except trireme.TriremeError as e:
    skip(f"trireme has no cuda:0: {e}")
T = lambda t: trireme.from_dlpack(t, ctx)
g = torch.Generator(device="cuda").manual_seed(1)
for size in (4096, 8192):
    a = (torch.rand(size, size, generator=g, device="cuda") * 2 - 1).half()
    b = (torch.rand(size, size, generator=g, device="cuda") * 2 - 1).half()
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    c2 = torch.empty_like(c)
    torch.cuda.synchronize()
    ta, tb, tc = T(a), T(b), T(c2)
    flops = 2.0 * size ** 3
    def torch_events(fn, calls):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) / calls
    def trr_timer(calls):
        ctx.timer_start()
        for _ in range(calls):
            ctx.matmul(ta, tb, out=tc)
        return ctx.timer_stop() / calls
    impls = {
        "torch matmul (cuBLAS)": lambda calls: torch_events(lambda: torch.matmul(a, b, out=c), calls),
        "triton (anchors.py)": lambda calls: torch_events(lambda: anchors.triton_matmul(a, b, c), calls),
        "trireme cuda:0": trr_timer,
    }
    est_ms = flops / 600e12 * 1e3
    warm, calls = max(3, int(25 / est_ms)), max(10, int(100 / est_ms))
    res = {k: [] for k in impls}
    for r in range(3):
        for name, f in impls.items():
            f(warm)
            ms = f(calls)
            res[name].append(flops / (ms * 1e-3) / 1e12)
            time.sleep(0.2)
    torch.cuda.synchronize(); ctx.synchronize()
    err = ((c.float() - c2.float()).norm() / c.float().norm()).item()
    for name, v in res.items():
        print(f"f16 {size}^3 {name:24} " + " ".join(f"{x:7.1f}" for x in v) + f"  median {statistics.median(v):7.1f} TFLOPS ({calls} calls after {warm})")
    print(f"f16 {size}^3 trireme vs torch output: ||diff||_F/||torch||_F = {err:.2e}")
