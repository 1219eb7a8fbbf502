"""rms_norm and layer_norm through the Python package on every device here, against NumPy float64 references of
the rounded inputs with docs/ops.md's bounds: f32 |err| <= 1e-5 (|y_ref| + |w| + |b|) per element, half outputs
as every half output (bounds.py). Outputs are poisoned (NaN) before each run. On the CPU the ops must run; a
GPU backend that does not implement them yet is a skip."""

import numpy as np
import pytest

import trireme
from bounds import bf16, f16, no_spurious_nonfinite
from test_ops import rand


def rms_ref(x, w, eps):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * np.asarray(w, np.float64)


def layer_ref(x, w, b, eps):
    x = np.asarray(x, np.float64)
    d = x - x[:, :1]  # the kernels' shift: exact, so a constant row gives exactly b
    d = d - d.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(np.mean(d * d, axis=1, keepdims=True) + eps)
    return d * rstd * np.asarray(w, np.float64) + np.asarray(b, np.float64)


def rounded(x, dt):
    """The values a tensor of dtype dt holds for x, in float64."""
    if dt == "bfloat16":
        return trireme.from_bfloat16(trireme.to_bfloat16(x)).astype(np.float64)
    return np.asarray(x, dt).astype(np.float64)


def run(ctx, fn):
    """A device other than the CPU that does not implement the norms yet is a skip; the CPU must run them."""
    try:
        return fn()
    except trireme.TriremeError as e:
        if e.name == "TRR_ERR_UNSUPPORTED" and ctx.backend != "cpu":
            pytest.skip(e.detail)
        raise


def result(ctx, x, w, b, eps, dt):
    tx, tw = ctx.tensor(x, dtype=dt), ctx.tensor(w, dtype=dt)
    out = ctx.tensor(np.full(x.shape, np.nan, np.float32), dtype=dt)
    if b is None:
        run(ctx, lambda: ctx.rms_norm(tx, tw, eps=eps, out=out))
    else:
        tb = ctx.tensor(b, dtype=dt)
        run(ctx, lambda: ctx.layer_norm(tx, tw, tb, eps=eps, out=out))
    assert out.dtype == dt
    return out.numpy().astype(np.float64)


def check(got, ref, w, b, dt):
    if dt == "float32":
        no_spurious_nonfinite(got, ref)
        scale = np.abs(ref) + np.abs(w)[None, :] + (np.abs(b)[None, :] if b is not None else 0.0)
        err = np.abs(got - ref) / np.maximum(scale, np.finfo(np.float32).tiny)
        assert err.max() <= 1e-5, f"error {err.max():.3g} x (|y| + |w| + |b|) > 1e-5"
    elif dt == "float16":
        f16(got, ref)
    else:
        bf16(got, ref)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("m,n", [(1, 1), (3, 17), (17, 1000), (5, 4099)])
@pytest.mark.parametrize("op", ["rms_norm", "layer_norm"])
def test_norm(ctx, rng, op, m, n, dt):
    x, w, b = rand(rng, (m, n), np.float32), rand(rng, (n,), np.float32, -2, 2), rand(rng, (n,), np.float32, -2, 2)
    eps = 1e-6 if op == "rms_norm" else 1e-5
    xr, wr, br = rounded(x, dt), rounded(w, dt), rounded(b, dt)
    if op == "rms_norm":
        got, ref = result(ctx, x, w, None, eps, dt), rms_ref(xr, wr, eps)
        check(got, ref, wr, None, dt)
    else:
        got, ref = result(ctx, x, w, b, eps, dt), layer_ref(xr, wr, br, eps)
        check(got, ref, wr, br, dt)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_layer_norm_constant_rows_give_b(ctx, rng, dt):
    """A constant row has x − mean exactly 0 (the kernels subtract the row's first element first): y is b,
    exactly, also at N = 1; with eps = 0 it is 0/0, NaN across the row."""
    n = 1000
    x = rand(rng, (4, n), np.float32)
    x[0, :], x[2, :] = x[0, 0], 0.1
    w, b = rand(rng, (n,), np.float32), rand(rng, (n,), np.float32)
    got = result(ctx, x, w, b, 1e-5, dt)
    np.testing.assert_array_equal(got[0], rounded(b, dt))
    np.testing.assert_array_equal(got[2], rounded(b, dt))
    check(got[1::2], layer_ref(rounded(x, dt), rounded(w, dt), rounded(b, dt), 1e-5)[1::2], rounded(w, dt),
          rounded(b, dt), dt)
    one = result(ctx, x[:, :1].copy(), w[:1].copy(), b[:1].copy(), 1e-5, dt)
    np.testing.assert_array_equal(one[:, 0], np.full(4, rounded(b, dt)[0]))
    got = result(ctx, x, w, b, 0.0, dt)
    assert np.isnan(got[0]).all() and np.isnan(got[2]).all()
    assert np.isfinite(got[1]).all() and np.isfinite(got[3]).all()


def test_rms_norm_eps_and_zero_rows(ctx, rng):
    """eps reaches the kernel (a large eps shrinks the output), N = 1 gives x / sqrt(x² + eps) · w, and a zero row
    with eps = 0 is 0/0: NaN."""
    x, w = rand(rng, (3, 17), np.float32, -1, 1), rand(rng, (17,), np.float32)
    check(result(ctx, x, w, None, 4.0, "float32"), rms_ref(x, w, 4.0), w, None, "float32")
    x1, w1 = rand(rng, (5, 1), np.float32), rand(rng, (1,), np.float32)
    check(result(ctx, x1, w1, None, 0.5, "float32"), rms_ref(x1, w1, 0.5), w1, None, "float32")
    x[1] = 0.0
    got = result(ctx, x, w, None, 0.0, "float32")
    assert np.isnan(got[1]).all() and np.isfinite(got[0]).all() and np.isfinite(got[2]).all()


def test_numpy_in_numpy_out_and_bad_eps(ctx, rng):
    x, w, b = rand(rng, (3, 17), np.float32), rand(rng, (17,), np.float32), rand(rng, (17,), np.float32)
    y = run(ctx, lambda: ctx.layer_norm(x, w, b))
    assert isinstance(y, np.ndarray) and y.shape == (3, 17) and y.dtype == np.float32
    check(y.astype(np.float64), layer_ref(x, w, b, 1e-5), w, b, "float32")
    with pytest.raises(trireme.TriremeError) as e:
        ctx.rms_norm(x, w, eps=-1.0)
    assert e.value.name == "TRR_ERR_INVALID_ARGUMENT" and "eps" in e.value.detail
