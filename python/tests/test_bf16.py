"""bfloat16 through the Python package: the conversions against a NumPy model of round-to-nearest-even, and the
ops that take bf16 on every device here, against float64 references of the rounded inputs with docs/ops.md's bf16
bounds. Outputs are poisoned (NaN) before each run."""

import numpy as np
import pytest

import trireme
from bounds import bf16, frobenius
from test_ops import gelu_ref, rand, silu_ref, unsupported_skips


def rne_model(x):
    """float32 -> bfloat16 bits by integer arithmetic: round to nearest, ties to even; NaN stays a quiet NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def test_conversion_matches_round_to_nearest_even(rng):
    # ties both ways, a subnormal, the largest finite float32 (overflows to inf), infinities, signed zeros
    special = np.array([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -(1.0 + 2 ** -8), 1e-40, np.finfo(np.float32).max,
                        np.inf, -np.inf, 0.0, -0.0], np.float32)
    x = np.concatenate([special, rng.standard_normal(10000).astype(np.float32) * 100])
    bits = trireme.to_bfloat16(x)
    np.testing.assert_array_equal(bits, rne_model(x))
    assert bits[0] == 0x3F80 and bits[1] == 0x3F82, "ties go to the even neighbour"
    assert bits[4] == 0x7F80, "the largest float32 rounds up to infinity"
    back = trireme.from_bfloat16(bits)
    np.testing.assert_array_equal(back.view(np.uint32), bits.astype(np.uint32) << 16)
    nan = trireme.to_bfloat16(np.array([np.nan], np.float32))
    assert np.isnan(trireme.from_bfloat16(nan)[0])


def rounded(x):
    """The values a bf16 tensor of x holds, in float64."""
    return trireme.from_bfloat16(trireme.to_bfloat16(x)).astype(np.float64)


def poisoned(ctx, shape):
    return ctx.tensor(np.full(shape, np.nan, np.float32), dtype=trireme.BFLOAT16)


@pytest.mark.parametrize("n", [1, 17, 1000])
def test_copy_and_add(ctx, rng, n):
    x, y = rand(rng, (n,), np.float32), rand(rng, (n,), np.float32)
    tx, ty = ctx.tensor(x, dtype="bfloat16"), ctx.tensor(y, dtype="bfloat16")
    assert tx.dtype == "bfloat16"
    out = poisoned(ctx, (n,))
    unsupported_skips(lambda: ctx.copy(tx, out=out))
    np.testing.assert_array_equal(out.bits(), trireme.to_bfloat16(x))
    out = poisoned(ctx, (n,))
    ctx.add(tx, ty, out=out)
    np.testing.assert_array_equal(out.bits(), trireme.to_bfloat16((rounded(x) + rounded(y)).astype(np.float32)))


@pytest.mark.parametrize("op,ref", [("gelu", gelu_ref), ("silu", silu_ref)])
def test_activations(ctx, rng, op, ref):
    x = rand(rng, (3, 257), np.float32)
    out = poisoned(ctx, x.shape)
    unsupported_skips(lambda: getattr(ctx, op)(ctx.tensor(x, dtype="bfloat16"), out=out))
    bf16(out.numpy(), ref(rounded(x)))


def test_softmax_and_row_sum(ctx, rng):
    x = rand(rng, (5, 1000), np.float32)
    tx = ctx.tensor(x, dtype="bfloat16")
    out = poisoned(ctx, x.shape)
    unsupported_skips(lambda: ctx.softmax(tx, out=out))
    r = rounded(x)
    e = np.exp(r - r.max(axis=1, keepdims=True))
    bf16(out.numpy(), e / e.sum(axis=1, keepdims=True))
    s = ctx.row_sum(tx)
    got = s.numpy() if isinstance(s, trireme.Tensor) else s
    assert got.dtype == np.float32
    frobenius(got, r.sum(axis=1), 1e-5)


@pytest.mark.parametrize("out_dtype", ["bfloat16", np.float32])
def test_matmul(ctx, rng, out_dtype):
    m, n, k = 33, 70, 129
    a, b = rand(rng, (m, k), np.float32, -1, 1), rand(rng, (k, n), np.float32, -1, 1)
    ta, tb = ctx.tensor(a, dtype="bfloat16"), ctx.tensor(b, dtype="bfloat16")
    got = unsupported_skips(lambda: ctx.matmul(ta, tb, out_dtype=out_dtype))
    ref = rounded(a) @ rounded(b)
    if out_dtype == "bfloat16":
        assert got.dtype == "bfloat16"
        bf16(got.numpy(), ref, k)
    else:
        assert got.dtype == np.float32
        frobenius(got.numpy(), ref, 1e-5)


def test_bits_refuses_other_dtypes(ctx):
    with pytest.raises(trireme.TriremeError) as e:
        ctx.tensor(np.ones(3, np.float32)).bits()
    assert e.value.name == "TRR_ERR_DTYPE"
