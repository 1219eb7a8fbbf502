#!/usr/bin/env python3
"""PyTorch and Triton anchors for trireme bench (the comparisons of docs/performance.md), at the quick sizes.

Runs on a CUDA machine with PyTorch and Triton (no network). Every figure is the median of
triton.testing.do_bench, which times with CUDA events and clears the L2 cache before each repetition, as
trireme bench does. The Triton kernels here are checked against PyTorch before they are timed.

usage: python3 bench/anchors.py OUT.json      (a table goes to stdout; a few minutes on a large GPU)
"""
import json
import platform
import sys
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

WARMUP_MS, REP_MS = 25, 100

# Known-good f16 configs on NVIDIA (docs/ops.md, Known-good NVIDIA configs): (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps).
SPEC_CONFIGS = [(128, 256, 64, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
                (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4), (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2)]


# ---- Triton kernels ----

@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def triton_add(x, y, z):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, eviction_policy=EVICT), mask=mask)


def triton_copy(x, y, evict=""):
    """y = x; evict "evict_first" marks x's lines the first to leave L2 once read, so the lines a copy allocates
    push them out rather than written lines that would cost a write-back (after a flush that leaves L2 dirty)."""
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096, EVICT=evict, num_warps=8)


@triton.jit
def softmax_kernel(y_ptr, x_ptr, x_row_stride, y_row_stride, n_cols, BLOCK: tl.constexpr):
    # One program per row: the whole row lives in registers, so x is read once and y written once.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * y_row_stride + cols, e / tl.sum(e, axis=0), mask=mask)


def triton_softmax(x, y):
    m, n = x.shape
    block = triton.next_power_of_2(n)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    softmax_kernel[(m,)](y, x, x.stride(0), y.stride(0), n, BLOCK=block, num_warps=warps)


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g}, num_stages=s, num_warps=w)
             for (bm, bn, bk, g, s, w) in SPEC_CONFIGS],
    key=["M", "N", "K", "ACT"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn, ACT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped block order (docs/ops.md, Grouped ordering): GROUP_M block rows share each block column while it is in L2.
    pid = tl.program_id(0)
    npm, npn = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    width = GROUP_M * npn
    first_m = (pid // width) * GROUP_M
    gsize = tl.minimum(npm - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % gsize
    pid_n = (pid % width) // gsize
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M  # wrapped rows are computed and never stored
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak
    b = b_ptr + rk[:, None] * s_bk + rn[None, :] * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        acc = tl.dot(tl.load(a, mask=rk[None, :] < left, other=0.0), tl.load(b, mask=rk[:, None] < left, other=0.0),
                     acc)
        a += BLOCK_K * s_ak
        b += BLOCK_K * s_bk
    if ACT == 1:
        acc = tl.maximum(acc, 0.0)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * s_cm + cn[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


def triton_matmul(a, b, c, act=0):
    m, k = a.shape
    n = b.shape[1]
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), ACT=act)


# ---- measuring ----

RESULTS = []


def record(name, impl, size, ms, work, unit):
    scale = 1e-12 if unit == "TFLOPS" else 1e-9
    fig = work / (ms * 1e-3) * scale
    RESULTS.append({"bench": name, "impl": impl, "size": size, "median_ms": ms, "figure": fig, "unit": unit})
    print(f"{name:<18} {impl:<28} {size:<14} {fig:>10.1f} {unit:<6} {ms * 1e3:>10.1f} us", flush=True)


def bench(fn):
    return do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")


def check(name, got, want, rtol, atol):
    if not torch.allclose(got.float(), want.float(), rtol=rtol, atol=atol):
        err = (got.float() - want.float()).abs().max().item()
        raise SystemExit(f"{name}: Triton result differs from PyTorch (max abs error {err:g})")


def rand(*shape, dtype=torch.float32):
    return torch.rand(*shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)


def norm_anchors():
    """torch's F.rms_norm and F.layer_norm at trireme bench's norm sizes (M = 4096), eps at trireme's defaults; the
    bytes counted as trr_bench_case_work counts them: x and y [M,N], w (and b) [N], each once."""
    m = 4096
    for dtype, dn in ((torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")):
        e = torch.finfo(dtype).bits // 8
        for n in (1024, 4096, 8192, 16384):
            x, w, b = rand(m, n, dtype=dtype), rand(n, dtype=dtype), rand(n, dtype=dtype)
            record(f"rms_norm_{dn}", "torch F.rms_norm", f"{m}x{n}",
                   bench(lambda: torch.nn.functional.rms_norm(x, (n,), w, eps=1e-6)), (2 * m * n + n) * e, "GB/s")
            record(f"layer_norm_{dn}", "torch F.layer_norm", f"{m}x{n}",
                   bench(lambda: torch.nn.functional.layer_norm(x, (n,), w, b, eps=1e-5)), (2 * m * n + 2 * n) * e,
                   "GB/s")
            del x, w, b


def fp8_anchors():
    """matmul_fp8: e4m3 x e4m3 -> bf16 through torch._scaled_mm (cuBLASLt), B stored [N,K] as trireme's bench
    stores it (_scaled_mm takes B column-major: the transpose of a row-major [N,K]), per-tensor scales of 1."""
    if not hasattr(torch, "float8_e4m3fn") or torch.cuda.get_device_capability(0) < (8, 9):
        print("matmul_fp8: skipped (needs torch with float8_e4m3fn and compute capability 8.9 or later)")
        return
    one = torch.ones((), device="cuda")
    for size in (2048, 4096, 8192):
        a = rand(size, size).to(torch.float8_e4m3fn)
        w = rand(size, size).to(torch.float8_e4m3fn)  # [N,K]
        out = torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        want = a.float() @ w.float().t()
        rel = ((out.float() - want).norm() / want.norm()).item()  # docs/ops.md's bf16 bound, Frobenius
        if rel > 8e-3:
            raise SystemExit(f"matmul fp8: torch._scaled_mm is off the float reference by {rel:g} (Frobenius)")
        record("matmul_fp8", "torch._scaled_mm (cuBLASLt)", f"{size}^3",
               bench(lambda: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
               2 * size ** 3, "TFLOPS")
        del a, w, out, want


def attention_anchors():
    """torch's scaled_dot_product_attention at trireme bench's attention sizes (docs/ops.md, Benchmarks), through
    the cuDNN and the flash (FlashAttention-2) backends, each forced with torch.nn.attention.sdpa_kernel; the work
    counted as trr_bench_case_work counts it: 4·B·H·S²·D FLOP (halved when causal), and for decode (Sq = 1,
    grouped-query: enable_gqa) the bytes of k and v. A backend that refuses a case is reported and skipped."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = ((SDPBackend.CUDNN_ATTENTION, "torch SDPA cuDNN"), (SDPBackend.FLASH_ATTENTION, "torch SDPA flash"))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def timed(name, label, size, fn, work, unit):
        try:
            record(name, label, size, bench(fn), work, unit)
        except RuntimeError as err:  # the backend does not take this case
            print(f"{name:<18} {label:<28} {size:<14} not run: {str(err).splitlines()[0]}", flush=True)

    for dtype, dn in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        for d in (64, 128):
            for s in (1024, 4096, 16384):
                b, h = 16384 // s, 2048 // d
                q, k, v = (rand(b, h, s, d, dtype=dtype) for _ in range(3))
                for causal in (False, True):
                    size = f"B{b} H{h} S{s} D{d}" + (" causal" if causal else "")
                    flops = 4 * b * h * s * s * d / (2 if causal else 1)
                    for backend, label in backends:
                        with sdpa_kernel(backend):
                            timed(f"attention_{dn}", label, size, lambda: sdpa(q, k, v, is_causal=causal), flops,
                                  "TFLOPS")
                del q, k, v
        b, hq, hkv, d = 32, 32, 8, 128
        for skv in (4096, 32768):
            q = rand(b, hq, 1, d, dtype=dtype)
            k, v = rand(b, hkv, skv, d, dtype=dtype), rand(b, hkv, skv, d, dtype=dtype)
            size = f"B{b} H{hq}/{hkv} Skv{skv} D{d}"
            for backend, label in backends:
                with sdpa_kernel(backend):
                    timed(f"attention_decode_{dn}", label, size, lambda: sdpa(q, k, v, enable_gqa=True),
                          2 * b * hkv * skv * d * 2, "GB/s")
            del q, k, v


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    t0 = time.time()
    torch.manual_seed(0)
    dev = torch.cuda.get_device_properties(0)
    print(f"{dev.name}, torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}")
    print(f"{'bench':<18} {'impl':<28} {'size':<14} {'figure':>10} {'unit':<6} {'median':>13}")

    # the memory ceiling: a 1 GiB device-to-device copy, bytes read + written
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").fill_(7)
    dst = torch.empty_like(src)
    record("copy", "torch copy_", "1 GiB", bench(lambda: dst.copy_(src)), 2 * src.numel(), "GB/s")
    del src, dst

    for e in (20, 24, 27):
        n = 1 << e
        x, y = rand(n), rand(n)
        z = torch.empty_like(x)
        triton_add(x, y, z)
        check("add", z, x + y, 0, 0)
        record("add_f32", "torch add", f"n=2^{e}", bench(lambda: torch.add(x, y, out=z)), 12 * n, "GB/s")
        record("add_f32", "triton add", f"n=2^{e}", bench(lambda: triton_add(x, y, z)), 12 * n, "GB/s")
        del x, y, z
    # launch cost: a 1-element add
    x, y = rand(1), rand(1)
    z = torch.empty_like(x)
    for impl, fn in (("torch add", lambda: torch.add(x, y, out=z)), ("triton add", lambda: triton_add(x, y, z))):
        ms = bench(fn)
        RESULTS.append({"bench": "add_f32_tiny", "impl": impl, "size": "n=1", "median_ms": ms, "figure": ms * 1e3,
                        "unit": "us"})
        print(f"{'add_f32_tiny':<18} {impl:<28} {'n=1':<14} {ms * 1e3:>10.2f} {'us':<6}")

    n = 1 << 24
    x = rand(n)
    y = torch.empty_like(x)
    record("gelu_f32", "torch gelu (tanh)", "n=2^24",
           bench(lambda: torch.ops.aten.gelu.out(x, approximate="tanh", out=y)), 8 * n, "GB/s")
    del x, y

    m = 4096
    for n in (256, 1024, 4096, 12288):
        x = rand(m, n)
        y = torch.empty_like(x)
        triton_softmax(x, y)
        check("softmax", y, torch.softmax(x, dim=1), 1e-5, 1e-6)
        record("softmax_f32", "torch softmax", f"{m}x{n}", bench(lambda: torch.softmax(x, dim=1)), 8 * m * n,
               "GB/s")
        record("softmax_f32", "triton fused softmax", f"{m}x{n}", bench(lambda: triton_softmax(x, y)), 8 * m * n,
               "GB/s")
        del x, y

    x = rand(4096, 8192)
    s = torch.empty(4096, device="cuda")
    record("row_sum_f32", "torch sum dim=1", "4096x8192", bench(lambda: torch.sum(x, dim=1, out=s)),
           4 * x.numel(), "GB/s")
    del x, s

    norm_anchors()
    attention_anchors()

    size = 4096
    flops = 2 * size ** 3
    a, b = rand(size, size, dtype=torch.float16), rand(size, size, dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    record("matmul_f16", "torch matmul (cuBLAS)", f"{size}^3", bench(lambda: torch.matmul(a, b, out=c)), flops,
           "TFLOPS")
    triton_matmul(a, b, c)  # autotunes
    check("matmul f16", c, a @ b, 2e-2, 2e-2)
    record("matmul_f16", "triton grouped (autotuned)", f"{size}^3", bench(lambda: triton_matmul(a, b, c)), flops,
           "TFLOPS")
    triton_matmul(a, b, c, act=1)
    check("matmul f16 relu", c, torch.relu(a @ b), 2e-2, 2e-2)
    record("matmul_f16_relu", "torch matmul then relu_", f"{size}^3",
           bench(lambda: torch.relu_(torch.matmul(a, b, out=c))), flops, "TFLOPS")
    record("matmul_f16_relu", "triton grouped + relu", f"{size}^3", bench(lambda: triton_matmul(a, b, c, act=1)),
           flops, "TFLOPS")
    del a, b, c

    a, b = rand(size, size), rand(size, size)
    c = torch.empty(size, size, device="cuda")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        record("matmul_f32", "torch matmul" + (" TF32" if tf32 else " (no TF32)"), f"{size}^3",
               bench(lambda: torch.matmul(a, b, out=c)), flops, "TFLOPS")
    torch.backends.cuda.matmul.allow_tf32 = False
    del a, b, c

    fp8_anchors()

    doc = {"tool": "trireme bench/anchors.py", "device": dev.name, "torch": torch.__version__,
           "triton": triton.__version__, "cuda": torch.version.cuda, "host": platform.node(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "do_bench": {"warmup_ms": WARMUP_MS,
                                                                                   "rep_ms": REP_MS,
                                                                                   "return_mode": "median"},
           "seconds": time.time() - t0, "results": RESULTS}
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {sys.argv[1]} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
