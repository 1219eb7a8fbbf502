#!/usr/bin/env python3
"""trireme's CPU backend beside NumPy's expression of the same op, in one process, on the same inputs.

    PYTHONPATH=python TRIREME_LIBRARY=build/libtrireme.so /usr/bin/python3 tools/cpu_vs_numpy.py [--quick]
        [--only matmul,softmax,gelu,silu,attention]

Timed (each the best of --reps calls, trireme and NumPy alternated in blocks of about 0.3 s so both see the same
machine load; inputs uniform in [-4, 4), outputs preallocated, no copies inside the timed call):

  matmul f32 at 1024^3, 2048^3, 4096^3: trireme's matmul against `np.matmul(a, b, out=c)` (NumPy's BLAS);
  matmul f16 and bf16 (f32 out) at the same sizes: against trireme's own f32 matmul at that size, alternated with
    it (the goal is 0.8x of it; NumPy has no fast half-precision GEMM to compare with);
  softmax 4096 x 4096 f32: against max, exp(x - max), sum and divide along the rows;
  gelu and silu over 2^24 f32: against 0.5*x*(1 + tanh(0.7978845608*(x + 0.044715*x**3))) and x / (1 + exp(-x));
  attention f32 at S = 1024, D = 64, a batch of 8 heads: against scores by np.matmul, softmax, np.matmul (issue
    43: >= 2x NumPy).

It prints each figure, the ratio trireme / NumPy (for half matmuls trireme / trireme f32) and the goal from issue
47: matmul f32 >= 1.0x NumPy, half matmuls >= 0.8x of f32, softmax, gelu and silu >= 3x NumPy. Every trireme output
is first compared with NumPy's in float64 (a wrong result stops the script). The exit status is 0 whether or not
the goals are met: this measures, it does not judge a machine.

NumPy's OpenBLAS must choose its own kernel: the script refuses to run with OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE
set (they force another kernel and make NumPy look slower or faster than it is), and prints the BLAS NumPy loaded.
"""
import argparse
import ctypes
import ctypes.util
import os
import sys
import time

import numpy as np

import trireme

GELU_C = np.float32(0.7978845608)
GELU_A = np.float32(0.044715)


def numpy_blas():
    """The OpenBLAS NumPy runs on: its configuration string, kernel and thread count (via the same shared object)."""
    for name in ("openblas", "openblas64_", "openblasp-r0.3.21"):
        path = ctypes.util.find_library(name)
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return (f"{lib.openblas_get_config().decode()} core {lib.openblas_get_corename().decode()}, "
                    f"{lib.openblas_get_num_threads()} threads")
        except (OSError, AttributeError):
            continue
    return "unknown (no OpenBLAS found)"


def best_pair(f_trr, f_other, reps, block_s=0.3):
    """Best times (s) of the two callables over reps calls each, in alternating blocks of about block_s seconds of
    calls (after one untimed call of each, which sizes the blocks). Alternating keeps both under the same machine
    load; blocks that long keep most calls from starting while the other side's threads are still awake:
    OpenBLAS's threads spin for about 0.1 s after each call NumPy makes, sharing the cores with whatever runs
    next."""
    sides = [f_trr, f_other]
    block = []
    for f in sides:
        t = time.perf_counter()
        f()
        block.append(max(1, int(block_s / max(time.perf_counter() - t, 1e-6))))
    best = [float("inf"), float("inf")]
    done = [0, 0]
    while min(done) < reps:
        for i, f in enumerate(sides):
            for _ in range(min(block[i], reps - done[i])):
                t = time.perf_counter()
                f()
                best[i] = min(best[i], time.perf_counter() - t)
                done[i] += 1
    return best[0], best[1]


def check(name, got, want, rel):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    if not np.isfinite(got).all() or err > rel:
        sys.exit(f"cpu_vs_numpy: {name}: trireme differs from NumPy by {err:.3g} (relative, Frobenius)")


def row(name, size, figure, unit, other, other_name, ratio, goal):
    met = "yes" if ratio >= goal else "NO"
    print(f"{name:<12} {size:<12} {figure:>10.2f} {unit:<7} {other:>10.2f} {other_name:<14} {ratio:>6.2f}x "
          f"{goal:>5.1f}x  {met}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=0, help="timed calls per case (default: by size)")
    ap.add_argument("--quick", action="store_true", help="matmul at 1024^3 only, the streaming ops at 2^22")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="matmul,softmax,gelu,silu,attention",
                    help="comma-separated cases to run (default: all)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    unknown = only - {"matmul", "softmax", "gelu", "silu", "attention"}
    if unknown:
        sys.exit(f"cpu_vs_numpy: unknown case(s) {', '.join(sorted(unknown))}")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if os.environ.get(var):
            sys.exit(f"cpu_vs_numpy: {var} is set: it forces OpenBLAS's kernel, so NumPy would not run its own; "
                     "unset it")

    ctx = trireme.Context("cpu")
    rng = np.random.default_rng(args.seed)
    print(f"trireme {trireme.library_path()} on {ctx.device['name']} ({ctx.device['capabilities']})")
    print(f"NumPy {np.__version__} on {numpy_blas()}; {os.cpu_count()} CPUs; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC")
    print(f"{'case':<12} {'size':<12} {'trireme':>10} {'unit':<7} {'other':>10} {'(other is)':<14} "
          f"{'ratio':>7} {'goal':>6}  met")

    sizes = (1024,) if args.quick else (1024, 2048, 4096)
    for n in sizes if "matmul" in only else ():
        reps = args.reps or (40 if n <= 1024 else 12 if n <= 2048 else 4)
        a = rng.uniform(-4, 4, (n, n)).astype(np.float32)
        b = rng.uniform(-4, 4, (n, n)).astype(np.float32)
        c_np = np.empty((n, n), np.float32)
        ta, tb, tc = ctx.tensor(a), ctx.tensor(b), ctx.empty((n, n), np.float32)
        ctx.matmul(ta, tb, out=tc)
        check(f"matmul f32 {n}", tc.numpy(), a.astype(np.float64) @ b.astype(np.float64), 1e-5)
        t_trr, t_np = best_pair(lambda: ctx.matmul(ta, tb, out=tc), lambda: np.matmul(a, b, out=c_np), reps)
        flops = 2.0 * n ** 3
        row("matmul f32", f"{n}^3", flops / t_trr * 1e-9, "GFLOPS", flops / t_np * 1e-9, "NumPy", t_np / t_trr, 1.0)
        for dt, label in ((np.float16, "f16"), ("bfloat16", "bf16")):
            ha, hb = ctx.tensor(a, dtype=dt), ctx.tensor(b, dtype=dt)
            hc = ctx.empty((n, n), np.float32)
            ctx.matmul(ha, hb, out=hc)
            check(f"matmul {label} {n}", hc.numpy(), ha.numpy().astype(np.float64) @ hb.numpy().astype(np.float64),
                  1e-5)
            # alternated with the f32 call, so the two figures share the machine's load
            t_half, t_f32 = best_pair(lambda: ctx.matmul(ha, hb, out=hc), lambda: ctx.matmul(ta, tb, out=tc), reps)
            row(f"matmul {label}", f"{n}^3", flops / t_half * 1e-9, "GFLOPS", flops / t_f32 * 1e-9, "trireme f32",
                t_f32 / t_half, 0.8)

    reps = args.reps or 12
    rows = 1024 if args.quick else 4096
    x = rng.uniform(-4, 4, (rows, 4096)).astype(np.float32)
    tx, ty = ctx.tensor(x), ctx.empty(x.shape, np.float32)

    def np_softmax():
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        return e / e.sum(axis=1, keepdims=True)

    if "softmax" in only:
        ctx.softmax(tx, out=ty)
        check("softmax", ty.numpy(), np_softmax(), 1e-5)
        t_trr, t_np = best_pair(lambda: ctx.softmax(tx, out=ty), np_softmax, reps)
        gbs = 8.0 * x.size
        row("softmax f32", f"{rows}x4096", gbs / t_trr * 1e-9, "GB/s", gbs / t_np * 1e-9, "NumPy", t_np / t_trr,
            3.0)

    n = 1 << (22 if args.quick else 24)
    v = rng.uniform(-4, 4, n).astype(np.float32)
    tv, tw = ctx.tensor(v), ctx.empty((n,), np.float32)
    exprs = {"gelu": lambda: np.float32(0.5) * v * (np.float32(1) + np.tanh(GELU_C * (v + GELU_A * v ** 3))),
             "silu": lambda: v / (np.float32(1) + np.exp(-v))}
    for name, np_f in exprs.items():
        if name not in only:
            continue
        op = getattr(ctx, name)
        op(tv, out=tw)
        check(name, tw.numpy(), np_f(), 1e-5)
        t_trr, t_np = best_pair(lambda: op(tv, out=tw), np_f, reps)
        gbs = 8.0 * n
        row(f"{name} f32", f"2^{n.bit_length() - 1}", gbs / t_trr * 1e-9, "GB/s", gbs / t_np * 1e-9, "NumPy",
            t_np / t_trr, 3.0)

    heads, s, d = 8, 1024, 64
    q, k, v = (rng.uniform(-1, 1, (heads, 1, s, d)).astype(np.float32) for _ in range(3))
    tq, tk, tv, to = ctx.tensor(q), ctx.tensor(k), ctx.tensor(v), ctx.empty(q.shape, np.float32)
    scale = np.float32(1 / np.sqrt(d))

    def np_attention():
        sc = np.matmul(q, k.transpose(0, 1, 3, 2))
        sc *= scale
        sc -= sc.max(axis=-1, keepdims=True)
        np.exp(sc, out=sc)
        sc /= sc.sum(axis=-1, keepdims=True)
        return np.matmul(sc, v)

    if "attention" not in only:
        return 0
    ctx.attention(tq, tk, tv, out=to)
    check("attention", to.numpy(), np_attention(), 1e-5)
    t_trr, t_np = best_pair(lambda: ctx.attention(tq, tk, tv, out=to), np_attention, args.reps or 8)
    flops = 4.0 * heads * s * s * d
    row("attention", f"8x{s}x{d}", flops / t_trr * 1e-9, "GFLOPS", flops / t_np * 1e-9, "NumPy", t_np / t_trr, 2.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
