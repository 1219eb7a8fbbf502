"""Failures raise TriremeError carrying the status name, its code and the library's detail text."""

import numpy as np
import pytest

import trireme


def raises(name, fn, text=None):
    with pytest.raises(trireme.TriremeError) as info:
        fn()
    e = info.value
    assert e.name == name, f"{e.name} ({e}) instead of {name}"
    assert isinstance(e.status, int) and e.status > 0
    assert str(e).startswith(name)
    if text:
        assert text in e.detail, e.detail
    return e


def test_unknown_device():
    raises("TRR_ERR_NO_DEVICE", lambda: trireme.Context("nosuch"), "unknown device")
    raises("TRR_ERR_NO_DEVICE", lambda: trireme.Context("cpu:7"))


def test_op_errors_name_their_status(ctx):
    f32 = np.ones((3, 4), np.float32)
    raises("TRR_ERR_SHAPE", lambda: ctx.add(f32, np.ones((3, 5), np.float32)), "shape")
    raises("TRR_ERR_DTYPE", lambda: ctx.add(f32, f32.astype(np.float16)))
    raises("TRR_ERR_DTYPE", lambda: ctx.gelu(np.ones(3, np.uint8)))
    raises("TRR_ERR_SHAPE", lambda: ctx.matmul(f32, np.ones((5, 2), np.float32)))
    raises("TRR_ERR_SHAPE", lambda: ctx.softmax(np.ones((2, 3, 4), np.float32)))
    raises("TRR_ERR_SHAPE", lambda: ctx.rgb_to_grey(np.ones((4, 5, 6), np.uint8)))


def test_python_side_errors_use_the_same_names(ctx):
    raises("TRR_ERR_DTYPE", lambda: ctx.gelu(np.ones(3)), "float64")
    raises("TRR_ERR_INVALID_ARGUMENT", lambda: ctx.run("nosuch", np.ones(3, np.float32)), "unknown op")
    raises("TRR_ERR_INVALID_ARGUMENT", lambda: ctx.run("add", np.ones(3, np.float32)), "takes 2 input")
    raises("TRR_ERR_INVALID_ARGUMENT", lambda: ctx.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                                                          epilogue="tanh"))


def test_strides_an_op_cannot_take(ctx):
    x = ctx.tensor(np.ones((4, 6), np.float32))
    out = ctx.empty((6, 4), np.float32)
    raises("TRR_ERR_STRIDE", lambda: ctx.gelu(x, out=out.T))  # an output is never copied: inner stride 4


def test_output_of_the_wrong_shape(ctx):
    out = ctx.empty((3, 3), np.float32)
    raises("TRR_ERR_SHAPE", lambda: ctx.add(np.ones((3, 4), np.float32), np.ones((3, 4), np.float32), out=out))


def test_tensor_of_another_context(ctx):
    with trireme.Context("cpu") as other:
        t = other.tensor(np.ones(4, np.float32))
        raises("TRR_ERR_WRONG_CONTEXT", lambda: ctx.gelu(t))


def test_closed_context(rng):
    c = trireme.Context("cpu")
    t = c.tensor(np.ones(4, np.float32))
    c.close()
    raises("TRR_ERR_INVALID_ARGUMENT", lambda: c.gelu(np.ones(4, np.float32)), "closed")
    del t  # its buffer went with the context; dropping it must not touch freed memory
