"""The error bounds of docs/ops.md, against float64 references."""

import numpy as np

F16_MIN_NORMAL = 2.0 ** -14
FLT_MIN = float(np.finfo(np.float32).tiny)


def no_spurious_nonfinite(got, ref):
    bad = ~np.isfinite(got) & np.isfinite(ref)
    assert not bad.any(), f"{bad.sum()} non-finite outputs where the reference is finite, first at {np.argwhere(bad)[0]}"


def max_rel(got, ref, bound, floor=FLT_MIN):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    no_spurious_nonfinite(got, ref)
    err = np.abs(got - ref) / np.maximum(np.abs(ref), floor)
    assert err.size == 0 or err.max() <= bound, f"max relative error {err.max():.3g} > {bound:g}"


def frobenius(got, ref, bound):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    no_spurious_nonfinite(got, ref)
    den = np.linalg.norm(ref)
    rel = np.linalg.norm(got - ref) / den if den > 0 else np.linalg.norm(got - ref)
    assert rel <= bound, f"Frobenius relative error {rel:.3g} > {bound:g}"


def _half(got, ref, k, frob_bound, rel_bound, ulp, smallest):
    """A half-precision output's two bounds: Frobenius, and largest relative error over a floor of
    max(smallest, ulp * rms(ref) * max(1, (K/4096)^1.5)) (the type's smallest normal and unit in the last place)."""
    ref = np.asarray(ref, np.float64)
    frobenius(got, ref, frob_bound)
    rms = float(np.sqrt(np.mean(ref ** 2))) if ref.size else 0.0
    max_rel(got, ref, rel_bound, max(smallest, ulp * rms * max(1.0, (k / 4096) ** 1.5)))


def f16(got, ref, k=1):
    """Any f16 output: ||err||_F / ||ref||_F <= 2e-3 and max |err| / max(|ref|, floor) <= 1e-2, floor =
    max(2^-14, 2^-10 * rms(ref) * max(1, (K/4096)^1.5))."""
    _half(got, ref, k, 2e-3, 1e-2, 2.0 ** -10, F16_MIN_NORMAL)


def bf16(got, ref, k=1):
    """Any bf16 output: ||err||_F / ||ref||_F <= 8e-3 and max |err| / max(|ref|, floor) <= 4e-2, floor =
    max(2^-126, 2^-7 * rms(ref) * max(1, (K/4096)^1.5))."""
    _half(got, ref, k, 8e-3, 4e-2, 2.0 ** -7, FLT_MIN)
