"""DLPack import (from_dlpack) and export (Tensor.__dlpack__), without a copy where the memory can be shared.

Import wraps the producer's memory with trr_buffer_wrap: a NumPy (or any CPU) array on the CPU backend, a
CUDA tensor (PyTorch, CuPy, JAX) on a CUDA context of the same device. The producer's memory stays alive, and
stays the producer's, until the last trireme view of it is gone; trireme then calls the DLPack deleter.

Streams: trireme runs on its own stream (CUDA) or queue, so neither side waits for the other on its own.
Before handing a producer's tensor to trireme, finish the producer's work on it (torch.cuda.synchronize());
export synchronizes the trireme context before it returns, so the consumer sees finished results.
"""

import ctypes

import numpy as np

from . import _lib
from .core import Context, Tensor, _error

# DLDeviceType
CPU, CUDA, CUDA_HOST, OPENCL, VULKAN = 1, 2, 3, 4, 7
_BACKEND_DEVICE = {"cpu": CPU, "cuda": CUDA, "opencl": OPENCL, "vulkan": VULKAN}

# (code, bits) of DLDataType <-> trr_dtype; code 0 int, 1 uint, 2 float, 4 bfloat
_DL_TO_TRR = {(2, 32): _lib.F32, (2, 16): _lib.F16, (1, 8): _lib.U8, (4, 16): _lib.BF16}
_TRR_TO_DL = {v: k for k, v in _DL_TO_TRR.items()}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


def _capi(name, restype, argtypes):
    fn = ctypes.pythonapi[name]  # a fresh function object: argtypes here do not clash with other users
    fn.restype, fn.argtypes = restype, argtypes
    return fn


_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p])
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, [ctypes.py_object, ctypes.c_char_p])
_is_valid_raw = _capi("PyCapsule_IsValid", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p])
_get_pointer_raw = _capi("PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p])
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = _capi("PyCapsule_New", ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, _Destructor])

_NAME = b"dltensor"
_USED = b"used_dltensor"


class _Producer:
    """Holds an imported DLManagedTensor; calls its deleter when the last trireme view is gone."""

    def __init__(self, address):
        self.address = address

    def __del__(self):
        if self.address:
            managed = DLManagedTensor.from_address(self.address)
            if managed.deleter:
                managed.deleter(ctypes.cast(self.address, ctypes.POINTER(DLManagedTensor)))
            self.address = 0


_default_contexts = {}


def _default_context(dev_type, dev_id):
    spec = f"cuda:{dev_id}" if dev_type == CUDA else "cpu"
    if spec not in _default_contexts:
        _default_contexts[spec] = Context(spec)
    return _default_contexts[spec]


def from_dlpack(x, ctx=None, copy=None):
    """A trireme Tensor over the memory of `x`, any object with __dlpack__ and __dlpack_device__.

    ctx: the Context to use; None takes one shared context per producer device (cpu, or cuda:N for a CUDA
    tensor on device N), made on first use.

    Shared without a copy (trr_buffer_wrap) when the memory is the context's kind: host memory on the CPU
    backend, CUDA memory of the context's device on a CUDA context. Otherwise, with copy=None or True, a CPU
    array is copied to the device; copy=False then raises. Strides are passed as they are, so the op decides
    whether it takes the layout (a row stride longer than the row, a transposed matmul operand); an input
    it cannot take is copied to a packed tensor first (core.py's stride rule)."""
    dev_type, dev_id = (int(v) for v in x.__dlpack_device__())
    if ctx is None:
        ctx = _default_context(dev_type, dev_id)
    backend = ctx.backend
    shared = (dev_type == CPU and backend == "cpu") or (
        dev_type == CUDA and backend == "cuda" and dev_id == ctx.device["index"])
    if not shared or copy is True:
        if dev_type == CPU and copy is not False:
            return ctx.tensor(np.from_dlpack(x))
        raise _error(20, f"DLPack device ({dev_type}, {dev_id}) cannot be shared with {ctx.device['spec']}"
                         + (" without a copy" if dev_type == CPU else ""))
    try:
        capsule = x.__dlpack__()
    except BufferError:  # NumPy will not export a read-only array (DLPack cannot say "read-only")
        if dev_type == CPU and copy is not False:
            return ctx.tensor(np.asarray(x))
        raise
    address = _get_pointer(capsule, _NAME)
    if not address:
        raise _error(1, "__dlpack__ did not return a 'dltensor' capsule")
    _set_name(capsule, _USED)  # the capsule's own destructor now leaves the tensor to us
    owner = _Producer(address)
    dl = DLManagedTensor.from_address(address).dl_tensor
    key = (dl.dtype.code, dl.dtype.bits)
    if key not in _DL_TO_TRR or dl.dtype.lanes != 1:
        raise _error(2, f"DLPack dtype (code {dl.dtype.code}, {dl.dtype.bits} bits, {dl.dtype.lanes} lanes) has "
                        "no trireme dtype")
    dtype = _DL_TO_TRR[key]
    shape = [dl.shape[i] for i in range(dl.ndim)]
    if dl.strides:
        strides = [dl.strides[i] for i in range(dl.ndim)]
    else:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
    if any(s < 0 for s in strides):
        raise _error(4, f"negative strides {strides} cannot be wrapped")
    itemsize = dl.dtype.bits // 8
    extent = 0 if any(s == 0 for s in shape) else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    if extent == 0:
        return Tensor(ctx.empty((4,), np.uint8)._storage, shape, dtype, strides)
    storage, off = ctx._wrap(dl.data + dl.byte_offset, extent * itemsize, keepalive=owner)
    return Tensor(storage, shape, dtype, strides, offset=off)


def device_of(t):
    """(DLDeviceType, device id) of a trireme tensor."""
    return (_BACKEND_DEVICE.get(t.ctx.backend, 0), int(t.ctx.device["index"]))


# Exported tensors alive in a consumer: address of the DLManagedTensor -> what it points into.
_exported = {}


@_Deleter
def _delete_exported(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


@_Destructor
def _destroy_capsule(capsule):
    # A capsule never consumed still owns its tensor; a consumed one was renamed and is the consumer's.
    if _is_valid_raw(capsule, _NAME):
        _exported.pop(_get_pointer_raw(capsule, _NAME), None)


def export(t, stream=None):
    """The DLPack capsule of a trireme tensor (Tensor.__dlpack__). Its memory's address must be known: every
    tensor of the CPU backend, and tensors imported with from_dlpack (on the CPU or CUDA backend)."""
    backend = t.ctx.backend
    if backend not in ("cpu", "cuda") or t._storage.native is None:
        raise BufferError(f"this {backend} tensor's memory has no address DLPack can carry: export works for "
                          "CPU tensors and for CUDA tensors imported with from_dlpack")
    if t.trr_dtype not in _TRR_TO_DL:
        raise BufferError("no DLPack dtype for this tensor")
    t.ctx.synchronize()  # the consumer reads without waiting on trireme's queue
    n = t.ndim
    shape = (ctypes.c_int64 * max(n, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(n, 1))(*t.strides)
    managed = DLManagedTensor()
    dl = managed.dl_tensor
    dl.data = t._storage.native
    dl.byte_offset = t.offset
    dl.device = DLDevice(*device_of(t))
    dl.ndim = n
    code, bits = _TRR_TO_DL[t.trr_dtype]
    dl.dtype = DLDataType(code, bits, 1)
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    managed.deleter = _delete_exported
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, strides, t)
    return _capsule_new(address, _NAME, _destroy_capsule)

