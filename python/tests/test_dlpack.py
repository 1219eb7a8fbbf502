"""DLPack: NumPy arrays shared with the CPU backend without a copy, and trireme tensors exported back."""

import gc

import numpy as np
import pytest

import trireme


@pytest.fixture(scope="module")
def cpu():
    with trireme.Context("cpu") as c:
        yield c


def test_import_shares_the_numpy_memory(cpu, rng):
    a = rng.uniform(-2, 2, size=(6, 9)).astype(np.float32)
    t = trireme.from_dlpack(a, cpu)
    assert isinstance(t, trireme.Tensor) and t.shape == a.shape and t.dtype == np.float32
    a[2, 3] = 42.0  # a write through NumPy is seen by trireme: one memory
    assert t.numpy()[2, 3] == 42.0
    cpu.copy(np.zeros((6, 9), np.float32), out=t)  # and a write by trireme lands in the array
    assert (a == 0).all()


def test_round_trip_without_copies(cpu, rng):
    a = rng.uniform(-3, 3, size=(5, 33)).astype(np.float32)
    out = cpu.empty((5, 33), np.float32)
    cpu.add(trireme.from_dlpack(a, cpu), trireme.from_dlpack(a, cpu), out=out)
    b = np.from_dlpack(out)
    np.testing.assert_array_equal(b, a + a)
    cpu.gelu(trireme.from_dlpack(a, cpu), out=out)  # the exported array sees later results: shared memory
    x = a.astype(np.float64)
    np.testing.assert_allclose(b, x / (1 + np.exp(-2 * 0.7978845608 * (x + 0.044715 * x ** 3))), rtol=1e-5)
    assert b.ctypes.data == out._storage.native + out.offset  # the very same memory
    back = trireme.from_dlpack(b, cpu)  # read-only (NumPy marks DLPack imports so): comes back as a copy
    np.testing.assert_array_equal(back.numpy(), b)


def test_strided_views_are_passed_with_their_strides(cpu, rng):
    big = rng.uniform(-1, 1, size=(8, 20)).astype(np.float32)
    view = big[2:7, 3:15]  # row stride 20 > row length 12
    t = trireme.from_dlpack(view, cpu)
    assert t.strides == (20, 1)
    x = view.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(cpu.softmax(t).numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    odd = trireme.from_dlpack(big[:, ::2], cpu)  # inner stride 2: the op says no, so it runs on a packed copy
    assert odd.strides == (20, 2)
    np.testing.assert_array_equal(cpu.gelu(odd).numpy(), cpu.gelu(np.ascontiguousarray(big[:, ::2])))


def test_the_producer_outlives_its_owner(cpu, rng):
    a = rng.uniform(-1, 1, size=1000).astype(np.float32)
    want = a.copy()
    t = trireme.from_dlpack(a, cpu)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), want)  # the tensor keeps the array's memory alive


@pytest.mark.parametrize("dtype", [np.float16, np.uint8])
def test_other_dtypes(cpu, rng, dtype):
    a = rng.uniform(1, 200, size=(3, 5)).astype(dtype)
    t = trireme.from_dlpack(a, cpu)
    np.testing.assert_array_equal(np.from_dlpack(cpu.copy(t)), a)


def test_unknown_dtype_is_rejected(cpu):
    with pytest.raises(trireme.TriremeError) as info:
        trireme.from_dlpack(np.ones(3, np.int32), cpu)
    assert info.value.name == "TRR_ERR_DTYPE"


def test_other_devices_copy_or_refuse(ctx, rng):
    a = rng.uniform(-1, 1, size=(4, 4)).astype(np.float32)
    t = trireme.from_dlpack(a, ctx)
    np.testing.assert_array_equal(t.numpy(), a)
    if ctx.backend != "cpu":
        with pytest.raises(trireme.TriremeError) as info:
            trireme.from_dlpack(a, ctx, copy=False)
        assert info.value.name == "TRR_ERR_UNSUPPORTED"
        if ctx.backend in ("opencl", "vulkan"):
            with pytest.raises(BufferError):
                t.__dlpack__()  # an OpenCL / Vulkan buffer has no address to export
    else:
        assert t.__dlpack_device__() == (1, 0)


def test_default_context():
    a = np.arange(6, dtype=np.float32)
    t = trireme.from_dlpack(a)
    assert t.ctx.backend == "cpu"


# ---- export: every tensor a consumer can address, the newer protocol, copies on request ----

class Asking:
    """A consumer's request: calls the producer's __dlpack__ with the keywords of the newer protocol (NumPy 1.x,
    which this machine may have, passes only stream)."""

    def __init__(self, t, **kw):
        self.t, self.kw = t, kw

    def __dlpack__(self, stream=None):
        kw = dict(self.kw)
        kw.setdefault("stream", stream)
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        dev = self.kw.get("dl_device")
        return dev if dev is not None else self.t.__dlpack_device__()


def test_dlpack_device_names_the_backend(ctx):
    t = ctx.tensor(np.ones(3, np.float32))
    want = {"cpu": 1, "cuda": 2, "opencl": 4, "vulkan": 7}[ctx.backend]
    assert t.__dlpack_device__() == (want, ctx.device["index"])


def test_opencl_and_vulkan_tensors_say_why_or_copy(ctx, rng):
    a = rng.uniform(-1, 1, size=(5, 7)).astype(np.float32)
    t = ctx.tensor(a)[1:4, 2:6]  # a view: the copy is of the view's elements
    if ctx.backend in ("opencl", "vulkan"):
        with pytest.raises(BufferError, match="copy=True"):
            t.__dlpack__()
        with pytest.raises(BufferError):
            t.__dlpack__(copy=False, dl_device=(1, 0))
    requests = [{"dl_device": (1, 0)}, {"dl_device": (1, 0), "copy": True}]
    if ctx.backend != "cuda":  # a CUDA tensor's copy=True alone is a device copy, which NumPy cannot take
        requests.append({"copy": True})
    for kw in requests:
        got = np.from_dlpack(Asking(t, **kw))
        np.testing.assert_array_equal(got, a[1:4, 2:6])
        if ctx.backend == "cpu":  # a copy only when asked for one: CPU memory is what dl_device=(1, 0) names
            same = got.ctypes.data == t._storage.address() + t.offset
            assert same != bool(kw.get("copy")), kw


def test_versioned_capsule_round_trip(cpu, rng):
    """max_version (1, 0) gets a 'dltensor_versioned' capsule; trireme's own import reads it (it asks for it)."""
    from trireme import dlpack

    t = cpu.tensor(rng.uniform(-1, 1, size=(3, 8)).astype(np.float32))
    cap = t.__dlpack__(max_version=(1, 0))
    assert dlpack._get_name(cap) == b"dltensor_versioned"
    legacy = t.__dlpack__(max_version=(0, 8))
    assert dlpack._get_name(legacy) == b"dltensor"
    del cap, legacy  # never consumed: the capsules' destructors free them
    back = trireme.from_dlpack(t, cpu)  # versioned on the way: the same memory
    assert back._storage.address() + back.offset == t._storage.address() + t.offset
    copied = t.__dlpack__(max_version=(1, 0), copy=True)
    m = dlpack.DLManagedTensorVersioned.from_address(dlpack._get_pointer(copied, b"dltensor_versioned"))
    assert m.flags & dlpack.FLAG_IS_COPIED and m.dl_tensor.data != t._storage.address()


def test_exported_memory_outlives_the_context(rng):
    a = rng.uniform(-1, 1, size=100).astype(np.float32)
    c = trireme.Context("cpu")
    t = c.tensor(a)
    b = np.from_dlpack(t)
    del t
    c.close()
    gc.collect()
    np.testing.assert_array_equal(b, a)  # the consumer's memory was left to it
    del b
    gc.collect()


def test_streams_exist_only_on_cuda(ctx):
    """Ordering with another library's stream is CUDA's: elsewhere the library says why (a CPU op has finished
    when its call returns; OpenCL and Vulkan queues are not CUDA streams)."""
    if ctx.backend == "cuda":
        pytest.skip("test_torch_cuda.py covers CUDA streams")
    for call in (ctx._stream, lambda: ctx.wait_stream(1), lambda: ctx.stream_wait(1)):
        with pytest.raises(trireme.UnsupportedError) as info:
            call()
        assert info.value.name == "TRR_ERR_UNSUPPORTED" and ctx.backend in str(info.value)
    t = ctx.tensor(np.ones(4, np.float32))
    if ctx.backend == "cpu":  # a CPU consumer passes no stream (None), or -1
        for s in (None, -1):
            np.testing.assert_array_equal(np.from_dlpack(Asking(t, stream=s)), 1)
