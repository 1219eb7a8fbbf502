"""What the package does with the inputs it is given: ranks past the library's, 0-D arrays, Python lists and
float64, strides an op cannot take (one rule for NumPy arrays and trireme Tensors), the device from
TRIREME_DEVICE, and the exception classes per status band."""

import pathlib

import numpy as np
import pytest

import trireme
from trireme import _lib


def gelu_ref(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


# ---- rank ----

def test_a_rank_past_the_librarys_is_a_shape_error(ctx):
    r = _lib.TRR_MAX_DIMS + 1
    a = np.ones((2,) * r, np.float32)
    for fn in (lambda: ctx.gelu(a), lambda: ctx.add(a, a), lambda: ctx.tensor(a), lambda: ctx.empty((2,) * r)):
        with pytest.raises(trireme.TriremeError) as info:
            fn()
        e = info.value
        assert e.name == "TRR_ERR_SHAPE"
        assert isinstance(e, ValueError)
        assert f"rank {r} > {_lib.TRR_MAX_DIMS}" in str(e)


def test_max_rank_is_the_headers():
    """The one constant the package takes its rank limit from matches trireme.h's TRR_MAX_DIMS."""
    header = pathlib.Path(__file__).resolve().parents[2] / "include" / "trireme.h"
    if not header.is_file():
        pytest.skip("not in a checkout")
    line = next(ln for ln in header.read_text().splitlines() if ln.startswith("#define TRR_MAX_DIMS"))
    assert int(line.split()[2]) == _lib.TRR_MAX_DIMS


# ---- 0-D ----

def test_0d_inputs_keep_their_shape(ctx):
    x = np.array(2.0, np.float32)
    y = ctx.gelu(x)
    assert isinstance(y, np.ndarray) and y.shape == ()
    np.testing.assert_allclose(y, gelu_ref(2.0), rtol=1e-5)
    assert ctx.gelu(np.float32(-1.5)).shape == ()
    s = ctx.add(x, np.array(3.0, np.float32))
    assert s.shape == () and float(s) == 5.0
    t = ctx.tensor(x)
    assert t.shape == () and t.numpy().shape == () and float(t.numpy()) == 2.0
    g = ctx.gelu(t)
    assert isinstance(g, trireme.Tensor) and g.shape == () and g.numpy().shape == ()
    np.testing.assert_allclose(g.numpy(), gelu_ref(2.0), rtol=1e-5)
    b = ctx.tensor(x, dtype="bfloat16")
    assert b.shape == () and b.numpy().shape == () and b.bits().shape == () and float(b.numpy()) == 2.0


# ---- dtypes ----

def test_python_lists_and_float64_get_a_hint(ctx):
    for bad in ([1.0, 2.0, 3.0], np.ones(3), 2.5):
        with pytest.raises(trireme.TriremeError) as info:
            ctx.gelu(bad)
        e = info.value
        assert e.name == "TRR_ERR_DTYPE"
        assert isinstance(e, TypeError) and isinstance(e, ValueError)
        assert "astype(np.float32)" in str(e), str(e)
    np.testing.assert_allclose(ctx.gelu(np.asarray([1.0, 2.0], dtype=np.float32)), gelu_ref([1.0, 2.0]),
                               rtol=1e-5)


# ---- strides: one rule for NumPy arrays and Tensors ----

def test_strides_an_op_cannot_take_are_copied_for_arrays_and_tensors(ctx, rng):
    x = rng.uniform(-3, 3, size=(4, 6)).astype(np.float32)
    want = gelu_ref(x.T)
    from_numpy = ctx.gelu(x.T)  # a NumPy view with inner stride 6
    t = ctx.tensor(x)
    from_tensor = ctx.gelu(t.T)  # the same view of a trireme tensor
    assert isinstance(from_tensor, trireme.Tensor) and from_tensor.shape == (6, 4)
    np.testing.assert_allclose(from_numpy, want, rtol=1e-5)
    np.testing.assert_array_equal(from_tensor.numpy(), from_numpy)
    # two inputs, one packed and one not
    y = rng.uniform(-3, 3, size=(6, 4)).astype(np.float32)
    np.testing.assert_array_equal(ctx.add(t.T, ctx.tensor(y)).numpy(), x.T + y)
    np.testing.assert_array_equal(ctx.add(x.T, y), x.T + y)
    # the input tensor is unchanged and still a view of its storage
    np.testing.assert_array_equal(t.numpy(), x)


def test_strides_the_op_takes_are_passed_as_views(ctx, rng):
    x = rng.uniform(-1, 1, size=(4, 6)).astype(np.float32)
    t = ctx.tensor(x)
    c = ctx.matmul(t, t.T)  # a transposed matmul operand is not copied: the op takes it as it is
    np.testing.assert_allclose(c.numpy(), x.astype(np.float64) @ x.T, rtol=1e-4, atol=1e-5)


def test_an_output_of_strides_the_op_cannot_write_is_an_error(ctx):
    out = ctx.empty((6, 4), np.float32)
    with pytest.raises(trireme.TriremeError) as info:
        ctx.gelu(np.ones((4, 6), np.float32), out=out.T)
    assert info.value.name == "TRR_ERR_STRIDE"
    assert isinstance(info.value, ValueError)


# ---- TRIREME_DEVICE ----

def test_context_without_a_device_reads_trireme_device(monkeypatch):
    monkeypatch.setenv("TRIREME_DEVICE", "cpu")
    with trireme.Context() as c:
        assert c.device["spec"] == "cpu:0"
        assert "TRIREME_DEVICE" in c.selection, c.selection
    monkeypatch.setenv("TRIREME_DEVICE", "nosuch")
    with pytest.raises(trireme.TriremeError) as info:
        trireme.Context()
    assert info.value.name == "TRR_ERR_NO_DEVICE"
    monkeypatch.delenv("TRIREME_DEVICE")
    with trireme.Context() as c:
        assert c.selection.startswith("auto"), c.selection


# ---- exception classes by status band ----

def test_error_classes_follow_the_status_bands(ctx):
    f32 = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError) as info:  # 3: an argument
        ctx.add(f32, np.ones((3, 5), np.float32))
    assert isinstance(info.value, trireme.ArgumentError) and not isinstance(info.value, TypeError)
    assert info.value.name == "TRR_ERR_SHAPE"
    with pytest.raises(TypeError) as info:  # 2: a dtype, from the library
        ctx.add(f32, f32.astype(np.float16))
    assert isinstance(info.value, trireme.DtypeError) and isinstance(info.value, ValueError)
    assert info.value.name == "TRR_ERR_DTYPE"
    with pytest.raises(RuntimeError) as info:  # 21: availability
        trireme.Context("nosuch")
    assert isinstance(info.value, trireme.UnsupportedError) and not isinstance(info.value, ValueError)
    assert info.value.name == "TRR_ERR_NO_DEVICE"
    for status, cls, bases in [(1, trireme.ArgumentError, (ValueError,)), (9, trireme.ArgumentError, (ValueError,)),
                               (2, trireme.DtypeError, (ValueError, TypeError)),
                               (20, trireme.UnsupportedError, (RuntimeError,)),
                               (22, trireme.UnsupportedError, (RuntimeError,)),
                               (30, trireme.ExecutionError, (RuntimeError,)),
                               (40, trireme.ExecutionError, (RuntimeError,))]:
        e = trireme.TriremeError(status, "TRR_X", "TRR_X: detail")
        assert type(e) is cls and all(isinstance(e, b) for b in bases)
        assert isinstance(e, trireme.TriremeError) and e.name == "TRR_X" and e.status == status
