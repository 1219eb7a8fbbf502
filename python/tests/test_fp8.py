"""The 8-bit floats through the Python package: the conversions against a NumPy model (the nearest of the 256
codes, ties to the even code, saturation), ctx.cast on every device here (bit-exact), and matmul of 8-bit floats
with per-tensor scales against a float64 reference with docs/ops.md's bounds."""

import numpy as np
import pytest

import trireme
from bounds import bf16, frobenius
from test_ops import unsupported_skips

FORMATS = {"f8e4m3": (3, 7, False), "f8e5m2": (2, 15, True)}  # mantissa bits, exponent bias, infinities


def code_values(name):
    """(finite codes 0..127, their values): the format's magnitudes as the OCP definition gives them."""
    mbits, bias, has_inf = FORMATS[name]
    codes, values = [], []
    for c in range(128):
        e, m = c >> mbits, c & ((1 << mbits) - 1)
        if has_inf and e == (127 >> mbits):
            continue  # infinity and NaNs
        if not has_inf and c == 127:
            continue  # e4m3's NaN
        codes.append(c)
        values.append((1 + m / 2 ** mbits) * 2.0 ** (e - bias) if e else m / 2 ** mbits * 2.0 ** (1 - bias))
    return np.array(codes), np.array(values)


def model(name, x):
    """float32 -> 8-bit float bits by search: the nearest finite value, ties to the even code, past the largest
    finite value saturating to it (finite inputs)."""
    codes, values = code_values(name)
    a = np.abs(np.asarray(x, np.float64))[:, None]
    d = np.abs(values[None, :] - a)
    best = np.min(d, axis=1, keepdims=True)
    tie = (d == best) & (codes[None, :] % 2 == 0)
    pick = np.where(tie.any(axis=1), np.argmax(tie, axis=1), np.argmin(d, axis=1))
    pick = np.where(a[:, 0] >= values.max(), np.argmax(values), pick)  # far past the top every distance is equal
    return (codes[pick] | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


@pytest.mark.parametrize("name", ["f8e4m3", "f8e5m2"])
def test_conversion_matches_the_model(rng, name):
    _, values = code_values(name)
    mids = (values[:-1] + values[1:]) / 2  # every tie between neighbours
    x = np.concatenate([values, mids, -mids, rng.standard_normal(4000) * 10.0 ** rng.integers(-4, 5, 4000),
                        [1e6, -1e6, np.finfo(np.float32).max, 0.0, -0.0]]).astype(np.float32)
    bits = trireme.to_float8(x, name)
    np.testing.assert_array_equal(bits, model(name, x))
    back = trireme.from_float8(bits, name)
    np.testing.assert_array_equal(trireme.to_float8(back, name), bits)  # every value round-trips
    top = values.max()
    assert trireme.from_float8(trireme.to_float8(np.float32(1e9), name), name) == top
    inf = trireme.to_float8(np.array([np.inf, -np.inf, np.nan], np.float32), name)
    if name == "f8e4m3":
        assert list(trireme.from_float8(inf[:2], name)) == [448.0, -448.0], "e4m3 saturates an infinity"
    else:
        assert list(trireme.from_float8(inf[:2], name)) == [np.inf, -np.inf], "e5m2 keeps infinities"
    assert np.isnan(trireme.from_float8(inf[2:], name)[0])


def specials():
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 448.0, 464.0, 480.0, 57344.0, 61440.0, 65504.0, 65520.0,
                     2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 2.0 ** -24, 2.0 ** -25, 1e-40,
                     1.0625, 1.1875, -3.3, 1e30], np.float32)


@pytest.mark.parametrize("name", ["f8e4m3", "f8e5m2"])
def test_cast_to_and_from_8bit_floats(ctx, rng, name):
    x = np.concatenate([specials(), (rng.standard_normal(997) * 50).astype(np.float32)])
    t = unsupported_skips(lambda: ctx.cast(ctx.tensor(x), name))
    assert t.dtype == name and t.bits().dtype == np.uint8
    np.testing.assert_array_equal(t.bits(), trireme.to_float8(x, name))
    back = ctx.cast(t, np.float32)
    np.testing.assert_array_equal(back.numpy().view(np.uint32)[~np.isnan(x)],
                                  trireme.from_float8(trireme.to_float8(x, name), name).view(np.uint32)[~np.isnan(x)])
    assert np.isnan(back.numpy()[0])
    # NumPy in, NumPy out: the values, as float32
    np.testing.assert_array_equal(ctx.cast(x[1:], name), trireme.from_float8(trireme.to_float8(x[1:], name), name))


def test_cast_between_halves_and_strided_views(ctx, rng):
    x = (rng.standard_normal((17, 40)) * 1e3).astype(np.float32)
    x[0, 3:7] = [65520.0, -1e6, np.inf, 1e-8]
    t = ctx.tensor(x)[:, 3:33]  # padded rows
    h = unsupported_skips(lambda: ctx.cast(t, np.float16))
    with np.errstate(over="ignore"):  # NumPy's own f16 rounding overflows to infinity, as the cast does
        want = x[:, 3:33].astype(np.float16)
    np.testing.assert_array_equal(h.numpy().view(np.uint16), want.view(np.uint16))
    assert np.isinf(h.numpy()[0, 0]), "f16 overflows to infinity"
    e5 = ctx.cast(h, "f8e5m2")
    np.testing.assert_array_equal(e5.bits(), trireme.to_float8(want, "f8e5m2"))
    b = ctx.cast(e5, "bfloat16")
    np.testing.assert_array_equal(b.numpy(), trireme.from_float8(e5.bits(), "f8e5m2"))


def test_dtype_names_and_views(ctx):
    t = ctx.tensor(np.array([[1.0, -2.5], [448.0, 1e5]], np.float32), dtype="f8e4m3")
    assert t.dtype == trireme.F8E4M3 and t.itemsize == 1 and t.nbytes == 4
    np.testing.assert_array_equal(t.numpy(), [[1.0, -2.5], [448.0, 448.0]])
    np.testing.assert_array_equal(t.T.numpy(), [[1.0, 448.0], [-2.5, 448.0]])
    assert "f8e4m3" in repr(t)
    z = ctx.full((3,), 3.3, dtype="f8e5m2")
    np.testing.assert_array_equal(z.numpy(), [3.5, 3.5, 3.5])
    with pytest.raises(trireme.DtypeError):
        trireme.to_float8([1.0], "bfloat16")


@pytest.mark.parametrize("a_dtype,b_dtype,out_dtype", [("f8e4m3", "f8e4m3", None), ("f8e5m2", "f8e4m3", np.float32)])
def test_matmul_of_8bit_floats(ctx, rng, a_dtype, b_dtype, out_dtype):
    m, n, k = 33, 40, 96
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    w = rng.uniform(-1, 1, (n, k)).astype(np.float32)  # B stored [N,K]: what FP8 tensor cores take
    ta, tw = ctx.tensor(a, dtype=a_dtype), ctx.tensor(w, dtype=b_dtype)
    c = unsupported_skips(lambda: ctx.matmul(ta, tw, transpose_b=True, out_dtype=out_dtype, scale_a=0.5,
                                             scale_b=3.0, epilogue="relu"))
    assert c.dtype == ("bfloat16" if out_dtype is None else np.float32)
    ref = np.maximum(ta.numpy().astype(np.float64) @ tw.numpy().astype(np.float64).T * 1.5, 0.0)
    if out_dtype is None:
        bf16(c.numpy(), ref, k)
    else:
        frobenius(c.numpy(), ref, 1e-3)  # docs/ops.md: f32 output of an 8-bit float product
    with pytest.raises(trireme.ArgumentError, match="scale_a and scale_b scale 8-bit float inputs"):
        ctx.matmul(a, w.T, scale_a=2.0)


def test_matmul_of_8bit_floats_in_every_layout(ctx, rng):
    """A stored [K,M] and B stored [K,N] too (CUDA copies them into the layout its tensor cores read), with an
    odd K whose rows are not whole 16-byte lines."""
    m, n, k = 19, 24, 45
    a = rng.uniform(-1, 1, (k, m)).astype(np.float32)  # A stored [K,M]
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)  # B stored [K,N]
    ta, tb = ctx.tensor(a, dtype="f8e4m3"), ctx.tensor(b, dtype="f8e5m2")
    c = unsupported_skips(lambda: ctx.matmul(ta.T, tb, out_dtype=np.float32, scale_b=0.25))
    ref = ta.numpy().astype(np.float64).T @ tb.numpy().astype(np.float64) * 0.25
    frobenius(c.numpy(), ref, 1e-3)  # docs/ops.md: f32 output of an 8-bit float product
