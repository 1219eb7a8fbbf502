"""Every op of the table through the Python package, on every device here, against float64 references with the
docs/ops.md's bounds. Inputs are random (never zero); outputs are poisoned before each run (NaN, or for u8 two
different poisons), so an element an op fails to write is caught."""

import numpy as np
import pytest

import trireme
from bounds import f16, frobenius, max_rel

SIZES = [1, 3, 17, 127, 1000]
ROW_SHAPES = [(1, 1), (3, 17), (17, 127), (5, 1000), (2, 4099)]
MATMUL_SHAPES = [(1, 781, 3), (17, 31, 127), (127, 100, 17), (64, 64, 64)]


def rand(rng, shape, dtype, lo=-4.0, hi=4.0):
    x = rng.uniform(lo, hi, size=shape)
    x[x == 0] = 0.5
    return x.astype(dtype)


def poisoned(ctx, shape, dtype, value=np.nan):
    return ctx.tensor(np.full(shape, value, dtype=dtype))


def run_into(ctx, fn, shape, dtype, *args, **kw):
    """fn(*args, out=<poisoned tensor>, **kw) -> NumPy result; u8 outputs run twice with two poisons."""
    poisons = [0, 255] if np.dtype(dtype) == np.uint8 else [np.nan]
    results = []
    for p in poisons:
        out = poisoned(ctx, shape, dtype, p)
        r = fn(*[ctx.tensor(a) if isinstance(a, np.ndarray) else a for a in args], out=out, **kw)
        assert r is out
        results.append(out.numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0], err_msg="the output depends on its poison: elements unwritten")
    return results[0]


def unsupported_skips(fn):
    """Calls fn; an op the device does not implement (UNSUPPORTED, with the library's reason) is a skip."""
    try:
        return fn()
    except trireme.TriremeError as e:
        if e.name == "TRR_ERR_UNSUPPORTED":
            pytest.skip(e.detail)
        raise


def gelu_ref(x):
    """0.5·x·(1 + tanh u) written as x / (1 + e^(-2u)): the same value without the cancellation of 1 + tanh u
    for negative x, so the reference stays accurate in the tail."""
    x = np.asarray(x, np.float64)
    u = 0.7978845608 * (x + 0.044715 * x ** 3)
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-2.0 * u))


def silu_ref(x):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-x))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8])
def test_copy_is_exact(ctx, rng, n, dtype):
    x = rand(rng, (n,), dtype, 1, 250)
    np.testing.assert_array_equal(run_into(ctx, ctx.copy, (n,), dtype, x), x)
    np.testing.assert_array_equal(ctx.copy(x), x)  # NumPy in, NumPy out


@pytest.mark.parametrize("n", SIZES)
def test_add_f32_is_bit_exact(ctx, rng, n):
    x, y = rand(rng, (n,), np.float32), rand(rng, (n,), np.float32)
    got = run_into(ctx, ctx.add, (n,), np.float32, x, y)
    np.testing.assert_array_equal(got, (x.astype(np.float64) + y).astype(np.float32))
    np.testing.assert_array_equal(ctx.add(x, y), x + y)


def test_add_f16(ctx, rng):
    x, y = rand(rng, (3, 127), np.float16), rand(rng, (3, 127), np.float16)
    f16(run_into(ctx, ctx.add, (3, 127), np.float16, x, y), x.astype(np.float64) + y)


def test_add_strided_inputs_are_copied(ctx, rng):
    big = rand(rng, (17, 40), np.float32)
    x, y = big[:, 3:31:2], big[:, 20:34]  # neither is contiguous
    np.testing.assert_array_equal(ctx.add(x, y), x + y)


@pytest.mark.parametrize("op,ref", [("gelu", gelu_ref), ("silu", silu_ref)])
@pytest.mark.parametrize("n", SIZES)
def test_activation_f32(ctx, rng, op, ref, n):
    x = rand(rng, (n,), np.float32, -8, 8)
    got = unsupported_skips(lambda: run_into(ctx, getattr(ctx, op), (n,), np.float32, x))
    max_rel(got, ref(x), 1e-5)


@pytest.mark.parametrize("op,ref", [("gelu", gelu_ref), ("silu", silu_ref)])
def test_activation_f16(ctx, rng, op, ref):
    x = rand(rng, (17, 127), np.float16)
    got = unsupported_skips(lambda: run_into(ctx, getattr(ctx, op), x.shape, np.float16, x))
    f16(got, ref(x))


@pytest.mark.parametrize("op,ref", [("gelu", gelu_ref), ("silu", silu_ref)])
def test_activation_special_values(ctx, op, ref):
    x = np.array([np.nan, 0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0, 80.0, -80.0], np.float32)
    got = unsupported_skips(lambda: getattr(ctx, op)(x))
    assert np.isnan(got[0]), "NaN propagates"
    max_rel(got[1:], ref(x[1:]), 1e-5)


@pytest.mark.parametrize("m,n", ROW_SHAPES)
def test_softmax_f32(ctx, rng, m, n):
    x = rand(rng, (m, n), np.float32, -10, 10)
    got = run_into(ctx, ctx.softmax, (m, n), np.float32, x)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    max_rel(got, ref, 1e-5)
    assert np.abs(got - ref).max() <= 1e-6


def test_softmax_f16(ctx, rng):
    x = rand(rng, (17, 300), np.float16)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    f16(run_into(ctx, ctx.softmax, x.shape, np.float16, x), e / e.sum(axis=1, keepdims=True))


def test_softmax_special_values(ctx, rng):
    x = rand(rng, (4, 300), np.float32)
    x[0, 10:200] = -np.inf  # a long masked stretch: exactly 0 there
    x[1, :] = -np.inf  # masked everywhere: NaN everywhere
    x[2, 7] = np.nan  # NaN: that row only
    got = ctx.softmax(x)
    assert (got[0, 10:200] == 0).all()
    assert np.isnan(got[1]).all()
    assert np.isnan(got[2]).all()
    xd = x[3].astype(np.float64)
    e = np.exp(xd - xd.max())
    max_rel(got[3], e / e.sum(), 1e-5)
    keep = np.r_[0:10, 200:300]
    e0 = np.exp(x[0, keep].astype(np.float64) - x[0, keep].max())
    max_rel(got[0, keep], e0 / e0.sum(), 1e-5)


@pytest.mark.parametrize("m,n", ROW_SHAPES + [(3, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_row_sum(ctx, rng, m, n, dtype):
    x = rand(rng, (m, n), dtype)
    got = run_into(ctx, ctx.row_sum, (m,), np.float32, x)
    assert got.dtype == np.float32
    xd = x.astype(np.float64)
    err = np.abs(got - xd.sum(axis=1))
    assert (err <= 1e-6 * np.abs(xd).sum(axis=1)).all(), f"row_sum error {err.max():.3g}"
    if n == 0:
        assert (got == 0).all(), "an empty row sums to 0"


@pytest.mark.parametrize("h,w", [(1, 1), (3, 17), (17, 127), (31, 1000)])
def test_rgb_to_grey(ctx, rng, h, w):
    img = rng.integers(0, 256, size=(3, h, w), dtype=np.uint8)
    r, g, b = (img[i].astype(np.float32) for i in range(3))
    # docs/ops.md's f32 expression, each step rounded to f32
    v = (np.float32(0.2989) * r + np.float32(0.5870) * g) + np.float32(0.1140) * b
    exact = 0.2989 * r.astype(np.float64) + 0.5870 * g + 0.1140 * b
    got_f32 = run_into(ctx, ctx.rgb_to_grey, (h, w), np.float32, img)
    max_rel(got_f32, exact, 1e-5)
    got_u8 = run_into(ctx, ctx.rgb_to_grey, (h, w), np.uint8, img)
    want = np.clip(np.floor(v.astype(np.float64) + 0.5), 0, 255)
    near_tie = np.abs(exact - np.floor(exact) - 0.5) < 1e-4
    ok = (got_u8 == want) | (near_tie & (np.abs(got_u8.astype(np.float64) - exact) <= 0.5 + 1e-4))
    assert ok.all(), f"{(~ok).sum()} grey values differ, first at {np.argwhere(~ok)[0]}"
    np.testing.assert_array_equal(ctx.rgb_to_grey(img), got_u8)


def matmul_ref(a, b, epilogue="none", alpha=0.01):
    c = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue == "relu":
        c = np.maximum(c, 0)
    elif epilogue == "leaky_relu":
        c = np.where(c >= 0, c, alpha * c)
    elif epilogue == "gelu":
        c = gelu_ref(c)
    return c


@pytest.mark.parametrize("m,n,k", MATMUL_SHAPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_f32_layouts(ctx, rng, m, n, k, ta, tb):
    a, b = rand(rng, (m, k), np.float32, -1, 1), rand(rng, (k, n), np.float32, -1, 1)
    sa = np.ascontiguousarray(a.T) if ta else a  # storage as [K,M] / [N,K]
    sb = np.ascontiguousarray(b.T) if tb else b
    got = run_into(ctx, ctx.matmul, (m, n), np.float32, sa, sb, transpose_a=ta, transpose_b=tb)
    frobenius(got, matmul_ref(a, b), 1e-5)


def test_matmul_fortran_ordered_operand_is_a_transposed_view(ctx, rng):
    a, b = rand(rng, (17, 33), np.float32), rand(rng, (33, 9), np.float32)
    bf = np.asfortranarray(b)
    frobenius(ctx.matmul(a, bf), matmul_ref(a, b), 1e-5)


@pytest.mark.parametrize("epilogue", ["none", "relu", "leaky_relu", "gelu"])
def test_matmul_epilogues(ctx, rng, epilogue):
    a, b = rand(rng, (31, 45), np.float32, -1, 1), rand(rng, (45, 77), np.float32, -1, 1)
    got = run_into(ctx, ctx.matmul, (31, 77), np.float32, a, b, epilogue=epilogue, alpha=0.2)
    frobenius(got, matmul_ref(a, b, epilogue, 0.2), 1e-5)


@pytest.mark.parametrize("out_dtype", [np.float16, np.float32])
def test_matmul_f16(ctx, rng, out_dtype):
    m, n, k = 33, 70, 129
    a, b = rand(rng, (m, k), np.float16, -1, 1), rand(rng, (k, n), np.float16, -1, 1)
    got = unsupported_skips(lambda: run_into(ctx, ctx.matmul, (m, n), out_dtype, a, b))
    assert got.dtype == out_dtype
    ref = matmul_ref(a, b)
    if out_dtype == np.float16:
        f16(got, ref, k)
    else:
        frobenius(got, ref, 1e-5)
    assert ctx.matmul(a, b).dtype == np.float16  # f16 in -> f16 out unless asked


def test_matmul_empty_k_writes_zero(ctx):
    a, b = np.zeros((5, 0), np.float32), np.zeros((0, 7), np.float32)
    got = run_into(ctx, ctx.matmul, (5, 7), np.float32, a, b, epilogue="gelu")
    assert (got == 0).all()


def test_generic_run_matches_named_ops(ctx, rng):
    x, y = rand(rng, (4, 9), np.float32), rand(rng, (4, 9), np.float32)
    np.testing.assert_array_equal(ctx.run("add", x, y), ctx.add(x, y))
    np.testing.assert_array_equal(ctx.run("matmul", x, y.T, epilogue="relu"), ctx.matmul(x, y.T, epilogue="relu"))
    out = np.full((4,), np.nan, np.float32)
    assert ctx.run("row_sum", x, out=out) is out
    assert np.isfinite(out).all()


def test_tensors_stay_on_the_device(ctx, rng):
    x = rand(rng, (8, 16), np.float32)
    t = ctx.tensor(x)
    g = ctx.gelu(t)
    assert isinstance(g, trireme.Tensor)
    s = ctx.softmax(g)
    assert isinstance(s, trireme.Tensor) and s.shape == (8, 16)
    e = np.exp(gelu_ref(x) - gelu_ref(x).max(axis=1, keepdims=True))
    max_rel(s.numpy(), e / e.sum(axis=1, keepdims=True), 1e-4)  # two ops chained: two roundings
    c = ctx.matmul(t, t.T)
    frobenius(c.numpy(), matmul_ref(x, x.T), 1e-5)


def test_device_and_selection(ctx):
    assert ctx.device["spec"] in {d["spec"] for d in trireme.devices()}
    assert ctx.device["spec"].split(":")[0] in ctx.selection
