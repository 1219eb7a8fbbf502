"""Tensor ergonomics on every device here: np.asarray, shape / dtype / len, indexing and reshape as views, repr,
ctx.empty / zeros / full, and the one stride rule for NumPy arrays and Tensors (a view where the op takes the
strides, else a packed copy)."""

import numpy as np
import pytest

import trireme


def test_array_protocol(ctx, rng):
    a = rng.uniform(-2, 2, size=(3, 5)).astype(np.float32)
    t = ctx.tensor(a)
    got = np.asarray(t)
    assert got.dtype == np.float32 and got.shape == (3, 5)
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), a.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(t.T), a.T)
    if ctx.backend == "cpu":  # the tensor's own memory: a write through NumPy is seen by trireme
        got[1, 2] = 42.0
        assert t.numpy()[1, 2] == 42.0
        assert t.__array__(copy=True).ctypes.data != got.ctypes.data
    else:
        with pytest.raises(ValueError, match="copy"):
            t.__array__(copy=False)
    b = ctx.tensor(a, dtype="bfloat16")
    np.testing.assert_array_equal(np.asarray(b), trireme.from_bfloat16(trireme.to_bfloat16(a)))


def test_shape_dtype_len(ctx):
    t = ctx.empty((4, 3, 2), np.float16)
    assert t.shape == (4, 3, 2) and t.dtype == np.float16 and t.ndim == 3 and t.size == 24 and len(t) == 4
    assert t.nbytes == 48 and t.itemsize == 2 and t.device == ctx.device["spec"]
    assert ctx.empty((2,), "bfloat16").dtype == "bfloat16"
    with pytest.raises(TypeError):
        len(ctx.tensor(np.float32(1.0)))


def test_indexing_gives_views(ctx, rng):
    a = rng.uniform(-2, 2, size=(6, 7, 5)).astype(np.float32)
    t = ctx.tensor(a)
    for key in [1, -1, (2, 3), (slice(1, 5), slice(None, None, 2)), (Ellipsis, 1), (slice(None), 2, slice(1, 4)),
                (0, Ellipsis, slice(2, 3)), (slice(4, 2),), (2, 6, 4)]:
        v = t[key]
        np.testing.assert_array_equal(v.numpy(), a[key], err_msg=str(key))
        assert v.shape == a[key].shape and v._storage is t._storage  # a view: no new memory
    np.testing.assert_array_equal(np.stack([r.numpy() for r in t]), a)  # iteration, row by row
    for bad, exc in [((7,), IndexError), ((0, 0, 0, 0), IndexError), ((slice(None, None, -1),), IndexError),
                     ((Ellipsis, Ellipsis), IndexError), (("x",), TypeError)]:
        with pytest.raises(exc):
            t[bad]
    # a write through a view lands in the parent's memory, and nowhere else
    ctx.copy(np.zeros((2, 3, 5), np.float32), out=t[1:3, 2:5])
    want = a.copy()
    want[1:3, 2:5] = 0
    np.testing.assert_array_equal(t.numpy(), want)


def test_reshape_views_and_copies(ctx, rng):
    a = rng.uniform(-2, 2, size=(4, 6)).astype(np.float32)
    t = ctx.tensor(a)
    for shape in [(24,), (2, 12), (2, 2, 6), (-1, 3), (4, 1, 6, 1)]:
        r = t.reshape(shape)
        assert r._storage is t._storage
        np.testing.assert_array_equal(r.numpy(), a.reshape(shape))
    rows = t[1:3]  # rows of a packed tensor: still one run of memory
    assert rows.reshape(-1)._storage is t._storage
    cols = t[:, 1:4]  # a row stride past the row: the rows cannot merge, so this copies, as NumPy's does
    r = cols.reshape(-1)
    assert r._storage is not t._storage
    np.testing.assert_array_equal(r.numpy(), a[:, 1:4].reshape(-1))
    np.testing.assert_array_equal(cols.reshape(3, 1, 4).numpy(), a[:, 1:4].reshape(3, 1, 4))
    np.testing.assert_array_equal(t.T.reshape(2, 12).numpy(), a.T.reshape(2, 12))
    np.testing.assert_allclose(ctx.softmax(t.reshape(8, 3)).numpy().sum(axis=1), 1.0, rtol=1e-6)
    for bad in [(5, 5), (-1, -1), (7, -1), (-2, 12)]:
        with pytest.raises(trireme.ArgumentError):
            t.reshape(bad)
    assert t.contiguous() is t
    np.testing.assert_array_equal(t.T.contiguous().numpy(), a.T)


def test_repr_shows_small_tensors_values(ctx):
    t = ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    text = repr(t)
    assert text.startswith("trireme.Tensor([[0., 1., 2.],") and f"device='{ctx.device['spec']}'" in text, text
    assert "dtype=float32" in text
    big = repr(ctx.empty((100, 100)))
    assert "shape=(100, 100)" in big and "[" not in big.split("shape=")[0], big


def test_empty_zeros_full(ctx):
    z = ctx.zeros((3, 5), np.float16)
    assert z.dtype == np.float16 and (z.numpy() == 0).all()
    f = ctx.full((4, 2), 2.5)
    assert f.dtype == np.float32 and (f.numpy() == 2.5).all()
    u = ctx.full(7, 200, np.uint8)
    assert u.shape == (7,) and (u.numpy() == 200).all()
    b = ctx.full((2, 2), 1.0 / 3.0, "bfloat16")
    assert b.dtype == "bfloat16" and (b.bits() == trireme.to_bfloat16(np.float32(1.0 / 3.0))).all()
    assert ctx.empty((0, 4)).numpy().shape == (0, 4) and ctx.zeros((0,)).size == 0


def softmax_ref(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_one_stride_rule_for_arrays_and_tensors(ctx, rng):
    """Strided inputs: the op takes the view where it can (a row stride past the row), else the input is copied
    to a packed one; the same for NumPy arrays (views on the CPU) and tensors. Negative NumPy strides copy."""
    big = rng.uniform(-3, 3, size=(9, 40)).astype(np.float32)
    t = ctx.tensor(big)
    cases = [(big[1:8, 3:30], big[1:8, 3:30]), (t[1:8, 3:30], big[1:8, 3:30]),  # row stride 40: a view
             (big[1:8, 3:30:2], big[1:8, 3:30:2]), (t[1:8, 3:30:2], big[1:8, 3:30:2]),  # inner stride 2: a copy
             (big[::-1][1:8, 3:30], big[::-1][1:8, 3:30]), (big.T[3:30, 1:8].T, big[1:8, 3:30])]
    for arg, ref in cases:
        np.testing.assert_allclose(np.asarray(ctx.softmax(arg)), softmax_ref(ref), rtol=1e-5)


def test_numpy_out_is_written_in_place(ctx, rng):
    """A NumPy out= gets the result in its own elements, strided or not, and keeps every other element."""
    x = rng.uniform(-3, 3, size=(5, 4)).astype(np.float32)
    y = rng.uniform(-3, 3, size=(5, 4)).astype(np.float32)
    big = np.full((5, 9), -7.0, np.float32)
    r = ctx.add(x, y, out=big[:, 2:6])
    assert r.base is big or r is not None
    want = np.full((5, 9), -7.0, np.float32)
    want[:, 2:6] = x + y
    np.testing.assert_array_equal(big, want)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros((5, 4), np.float32)
        ro.flags.writeable = False
        ctx.add(x, y, out=ro)


def test_numpy_arrays_passed_again_are_the_same_wrap(rng):
    """CPU backend: an array passed twice reuses its wrap, and a later change to the array is seen (its memory is
    read at each call)."""
    with trireme.Context("cpu") as c:
        a = rng.uniform(-1, 1, size=100).astype(np.float32)
        out = np.empty_like(a)
        c.copy(a, out=out)
        a[:] = 3.0
        c.copy(a, out=out)
        assert (out == 3.0).all()
        a.shape = (10, 10)  # the same array in another shape: a new view, not the old one
        out2 = np.empty((10, 10), np.float32)
        c.gelu(a, out=out2)
        assert out2.shape == (10, 10) and np.isfinite(out2).all()


def test_numpy_out_of_strides_the_op_cannot_write(ctx, rng):
    """A NumPy out with an inner stride of 2: the result goes through a packed temporary, the gaps untouched."""
    x = rng.uniform(-3, 3, size=(3, 4)).astype(np.float32)
    big = np.full((3, 8), 5.0, np.float32)
    ctx.copy(x, out=big[:, ::2])
    np.testing.assert_array_equal(big[:, ::2], x)
    assert (big[:, 1::2] == 5.0).all()
