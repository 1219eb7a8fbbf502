#!/usr/bin/env python3
"""A PyTorch script as a user writes one: trireme ops on torch's CUDA tensors, each result handed straight to
torch (torch.from_dlpack) and compared with torch's own, with no synchronize anywhere.

    python3 python/examples/torch_seed_check.py [--device cuda:0]

  softmax of torch.randn(1823, 781)        vs torch.softmax           torch.testing.assert_close
  matmul 512 x 512 f16, leaky_relu epilogue vs leaky_relu(a @ b)       torch.allclose(atol=1e-2)
  add of 98432 elements                    vs x + y                   exact (torch.equal)

The matmul's inputs are randn scaled by 0.1: the two libraries accumulate in different orders and may round a
value to neighbouring f16s, whose distance at randn's own scale (outputs near 30, ulp 0.016) is past atol 1e-2.
Without torch, a CUDA device or trireme's CUDA backend it says so and exits 0; exit status 1 on a mismatch.
"""

import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_seed_check: skipped: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("torch_seed_check: skipped: torch sees no CUDA device")
        return 0
    import trireme

    try:
        ctx = trireme.Context(args.device)
    except trireme.TriremeError as e:
        print(f"torch_seed_check: skipped: trireme has no {args.device}: {e}")
        return 0
    dev = torch.device(args.device)
    torch.manual_seed(1)

    def T(t):  # noqa: N802  (a torch tensor as a trireme one: the same memory)
        return trireme.from_dlpack(t, ctx)

    failures = []

    x = torch.randn(1823, 781, device=dev)
    y = torch.from_dlpack(ctx.softmax(T(x)))
    try:
        torch.testing.assert_close(y, torch.softmax(x, dim=1))
        print("softmax 1823x781 f32: assert_close ok")
    except AssertionError as e:
        failures.append(f"softmax: {e}")

    a = torch.randn(512, 512, device=dev, dtype=torch.float16) * 0.1
    b = torch.randn(512, 512, device=dev, dtype=torch.float16) * 0.1
    c = torch.from_dlpack(ctx.matmul(T(a), T(b), epilogue="leaky_relu", alpha=0.01))
    ref = torch.nn.functional.leaky_relu(a @ b, 0.01)
    if c.dtype == torch.float16 and torch.allclose(c, ref, atol=1e-2):
        print(f"matmul 512x512 f16 leaky_relu: allclose(atol=1e-2) ok (max diff {(c - ref).abs().max().item():.1e})")
    else:
        failures.append(f"matmul: dtype {c.dtype}, max diff {(c.float() - ref.float()).abs().max().item():.3e}")

    u = torch.randn(98432, device=dev)
    v = torch.randn(98432, device=dev)
    w = torch.from_dlpack(ctx.add(T(u), T(v)))
    if torch.equal(w, u + v):
        print("add 98432 f32: exact")
    else:
        failures.append(f"add: {(w != u + v).sum().item()} elements differ")

    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
