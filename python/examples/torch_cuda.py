#!/usr/bin/env python3
"""Trireme and PyTorch on the same CUDA tensors: every op checked against torch, then both timed.

The torch tensors are handed to trireme with DLPack (trireme.from_dlpack -> trr_buffer_wrap): no copy, trireme
writes its results straight into torch memory. Both libraries use the device's primary CUDA context, each on
its own stream; the hand-overs follow DLPack's stream protocol, so the script calls no synchronize: importing a
torch tensor makes trireme's stream wait for torch's work on it, and torch.from_dlpack of trireme's result makes
torch's stream wait for trireme's.

    python3 python/examples/torch_cuda.py [--reps 20] [--quick]

Without torch, without a CUDA device, or with a trireme built without CUDA, it says so and exits 0.
Exit status 1 when a result is outside the bounds of docs/ops.md.
"""

import argparse
import statistics
import sys


def skip(reason):
    print(f"torch_cuda: skipped: {reason}")
    sys.exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20, help="timed repetitions per op (median reported)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = ap.parse_args()

    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    import trireme

    dev = torch.cuda.current_device()
    try:
        ctx = trireme.Context(f"cuda:{dev}")
    except trireme.TriremeError as e:
        skip(f"trireme has no cuda:{dev}: {e}")
    torch.backends.cuda.matmul.allow_tf32 = False  # docs/ops.md's f32 matmul is true f32 on both sides
    print(f"trireme {trireme.__version__} ({trireme.library_path()}) on {ctx.device['name']}; torch {torch.__version__}")

    q = args.quick
    n = 1 << (16 if q else 24)
    m_rows, n_cols = (256, 1024) if q else (4096, 4096)
    mm = 256 if q else 4096
    g = torch.Generator(device="cuda").manual_seed(1)

    def rand(*shape, dtype=torch.float32, lo=-4.0, hi=4.0):
        return (torch.rand(*shape, generator=g, device="cuda", dtype=torch.float32) * (hi - lo) + lo).to(dtype)

    T = lambda t: trireme.from_dlpack(t, ctx)  # noqa: E731  (shares the memory)

    x, y = rand(n), rand(n)
    rows = rand(m_rows, n_cols)
    a16, b16 = rand(mm, mm, dtype=torch.float16, lo=-1, hi=1), rand(mm, mm, dtype=torch.float16, lo=-1, hi=1)
    a32, b32 = rand(mm, mm, lo=-1, hi=1), rand(mm, mm, lo=-1, hi=1)
    # wrapped once (trireme's stream waits for torch's writes of them): the timed calls then cost what a trireme
    # call costs
    tx, ty, trows, ta16, tb16, ta32, tb32 = (T(t) for t in (x, y, rows, a16, b16, a32, b32))

    def f16_ok(got, ref):
        err = (got.double() - ref).norm() / ref.norm()
        return err.item() <= 2e-3, f"||err||_F/||ref||_F = {err.item():.2e}"

    def rel_ok(bound):
        def check(got, ref):
            e = ((got.double() - ref).abs() / ref.abs().clamp_min(1.1754944e-38)).max().item()
            return e <= bound, f"max rel err = {e:.2e}"
        return check

    def frob_ok(bound):
        def check(got, ref):
            e = ((got.double() - ref).norm() / ref.norm()).item()
            return e <= bound, f"||err||_F/||ref||_F = {e:.2e}"
        return check

    def rowsum_ok(got, ref_in):
        err = (got.double() - ref_in.double().sum(1)).abs()
        scale = ref_in.double().abs().sum(1)
        return bool((err <= 1e-6 * scale).all()), f"max err/sum|x| = {(err / scale).max().item():.2e}"

    def gelu64(t):
        t = t.double()
        u = 0.7978845608 * (t + 0.044715 * t ** 3)
        return t / (1 + torch.exp(-2 * u))

    def same(got, ref):
        return bool(torch.equal(got, ref.to(got.dtype))), "bit-exact" if torch.equal(got, ref.to(got.dtype)) else "differs"

    cases = [
        # name, torch fn, trireme fn(out), out, float64 reference fn, check
        ("add f32", lambda: torch.add(x, y), lambda o: ctx.add(tx, ty, out=o), torch.empty_like(x),
         lambda: x.double() + y.double(), same),
        ("gelu f32", lambda: torch.nn.functional.gelu(x, approximate="tanh"), lambda o: ctx.gelu(tx, out=o),
         torch.empty_like(x), lambda: gelu64(x), rel_ok(1e-5)),
        ("silu f32", lambda: torch.nn.functional.silu(x), lambda o: ctx.silu(tx, out=o), torch.empty_like(x),
         lambda: x.double() / (1 + torch.exp(-x.double())), rel_ok(1e-5)),
        ("softmax f32", lambda: torch.softmax(rows, dim=1), lambda o: ctx.softmax(trows, out=o),
         torch.empty_like(rows), lambda: torch.softmax(rows.double(), dim=1), rel_ok(1e-5)),
        ("row_sum f32", lambda: rows.sum(dim=1), lambda o: ctx.row_sum(trows, out=o),
         torch.empty(m_rows, device="cuda"), None, None),
        ("matmul f16", lambda: a16 @ b16, lambda o: ctx.matmul(ta16, tb16, out=o),
         torch.empty(mm, mm, device="cuda", dtype=torch.float16), lambda: a16.double() @ b16.double(), f16_ok),
        ("matmul f16 relu", lambda: torch.relu(a16 @ b16), lambda o: ctx.matmul(ta16, tb16, out=o, epilogue="relu"),
         torch.empty(mm, mm, device="cuda", dtype=torch.float16), lambda: torch.relu(a16.double() @ b16.double()),
         f16_ok),
        ("matmul f32", lambda: a32 @ b32, lambda o: ctx.matmul(ta32, tb32, out=o),
         torch.empty(mm, mm, device="cuda"), lambda: a32.double() @ b32.double(), frob_ok(1e-5)),
    ]

    failed = 0
    print(f"{'op':18} {'check':34} {'torch ms':>10} {'trireme ms':>11} {'trireme/torch':>14}")
    for name, torch_fn, trr_fn, out, ref_fn, check in cases:
        out_t = T(out)
        try:
            got = torch.from_dlpack(trr_fn(out_t))  # `out` itself, once torch's stream has waited for trireme
        except trireme.TriremeError as e:
            print(f"{name:18} trireme: {e.name}: {e.detail[:80]}")
            if e.name != "TRR_ERR_UNSUPPORTED":
                failed += 1
            continue
        if name.startswith("row_sum"):
            ok, note = rowsum_ok(got, rows)
        else:
            ok, note = check(got, ref_fn())
        failed += not ok

        def time_torch():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch_fn()
            s.record()
            for _ in range(args.reps):
                torch_fn()
            e.record()
            torch.cuda.synchronize()
            return s.elapsed_time(e) / args.reps

        def time_trireme():
            trr_fn(out_t)
            ctx.timer_start()
            for _ in range(args.reps):
                trr_fn(out_t)
            return ctx.timer_stop() / args.reps

        t_torch = statistics.median(time_torch() for _ in range(3))
        t_trr = statistics.median(time_trireme() for _ in range(3))
        print(f"{name:18} {('ok ' if ok else 'FAIL ') + note:34} {t_torch:10.4f} {t_trr:11.4f} {t_trr / t_torch:14.2f}")
    print("timing: device time per call (CUDA events on torch's stream; trireme's device timer on its stream), "
          f"mean of {args.reps} calls, median of 3 runs; trireme's figure includes Python call overhead where the "
          "GPU waits for it")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
