"""DLPack import (from_dlpack) and export (Tensor.__dlpack__), without a copy where the memory can be shared.

Import wraps the producer's memory with trr_buffer_wrap: a NumPy (or any CPU) array on the CPU backend, a
CUDA tensor (PyTorch, CuPy, JAX) on a CUDA context of the same device. The producer's memory stays alive, and
stays the producer's, until the last trireme view of it is gone; trireme then calls the DLPack deleter.

Export hands out the address of a tensor's memory: a CPU tensor's host address, a CUDA tensor's CUdeviceptr
(trr_buffer_native), whether trireme allocated the memory or wrapped it. OpenCL and Vulkan memory has no such
address: those tensors raise BufferError, or export a host copy when the consumer asks for a copy (copy=True,
or dl_device=CPU).

Streams, as the DLPack protocol has them: the consumer passes its stream to __dlpack__(stream=...), and the
producer makes that stream wait for its work on the tensor. Export makes the consumer's CUDA stream wait for
trireme's work (trr_native_wait_stream: an event, the host does not wait); import passes trireme's own stream
(trr_context_stream) to the producer, which makes it wait for the producer's work. So neither side calls a
synchronize at a hand-over. What the protocol does not order is later work on shared memory outside a
hand-over: when trireme writes into memory it imported (out=), hand the result over again
(torch.from_dlpack(out_tensor)) before the producer reads it.
"""

import ctypes

import numpy as np

from . import _lib
from .core import Context, Tensor, _check, _error

# DLDeviceType
CPU, CUDA, CUDA_HOST, OPENCL, VULKAN = 1, 2, 3, 4, 7
_BACKEND_DEVICE = {"cpu": CPU, "cuda": CUDA, "opencl": OPENCL, "vulkan": VULKAN}

# (code, bits) of DLDataType <-> trr_dtype; code 0 int, 1 uint, 2 float, 4 bfloat, 10 float8_e4m3fn (OCP e4m3),
# 12 float8_e5m2
_DL_TO_TRR = {(2, 32): _lib.F32, (2, 16): _lib.F16, (1, 8): _lib.U8, (4, 16): _lib.BF16, (10, 8): _lib.F8E4M3,
              (12, 8): _lib.F8E5M2}
_TRR_TO_DL = {v: k for k, v in _DL_TO_TRR.items()}

# The DLPack version this module writes (DLManagedTensorVersioned), and its flags
VERSION = (1, 0)
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2


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


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def _capi(name, restype, argtypes):
    fn = ctypes.pythonapi[name]  # a fresh function object: argtypes here do not clash with other users
    fn.restype, fn.argtypes = restype, argtypes
    return fn


_get_pointer = _capi("PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p])
_get_name = _capi("PyCapsule_GetName", ctypes.c_char_p, [ctypes.py_object])
_set_name = _capi("PyCapsule_SetName", ctypes.c_int, [ctypes.py_object, ctypes.c_char_p])
_is_valid_raw = _capi("PyCapsule_IsValid", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p])
_get_pointer_raw = _capi("PyCapsule_GetPointer", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p])
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = _capi("PyCapsule_New", ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, _Destructor])

_NAME, _USED = b"dltensor", b"used_dltensor"
_NAME_V, _USED_V = b"dltensor_versioned", b"used_dltensor_versioned"


class _Producer:
    """Holds an imported DLManagedTensor (or its versioned kind); calls its deleter when the last trireme view is
    gone."""

    def __init__(self, address, versioned):
        self.address, self.versioned = address, versioned

    def __del__(self):
        if self.address:
            kind = DLManagedTensorVersioned if self.versioned else DLManagedTensor
            managed = kind.from_address(self.address)
            if managed.deleter:
                managed.deleter(self.address)
            self.address = 0


_default_contexts = {}


def _default_context(dev_type, dev_id):
    spec = f"cuda:{dev_id}" if dev_type == CUDA else "cpu"
    if spec not in _default_contexts:
        _default_contexts[spec] = Context(spec)
    return _default_contexts[spec]


def _call_producer(x, stream):
    """x.__dlpack__ as the newest protocol the producer speaks: versioned first, then the old signature."""
    kw = {} if stream is None else {"stream": stream}
    try:
        return x.__dlpack__(max_version=VERSION, **kw)
    except TypeError:  # a producer of the first protocol (NumPy < 2.1, older torch) takes no max_version
        return x.__dlpack__(**kw)


def from_dlpack(x, ctx=None, copy=None):
    """A trireme Tensor over the memory of `x`, any object with __dlpack__ and __dlpack_device__.

    ctx: the Context to use; None takes one shared context per producer device (cpu, or cuda:N for a CUDA
    tensor on device N), made on first use.

    Shared without a copy (trr_buffer_wrap) when the memory is the context's kind: host memory on the CPU
    backend, CUDA memory of the context's device on a CUDA context. Otherwise, with copy=None or True, a CPU
    array is copied to the device; copy=False then raises. On CUDA the producer is given trireme's stream, as
    the protocol has it, and makes it wait for the producer's work on x: no synchronize is needed. Strides are
    passed as they are, so the op decides whether it takes the layout (a row stride longer than the row, a
    transposed matmul operand); an input it cannot take is copied to a packed tensor first (core.py's rule)."""
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
        capsule = _call_producer(x, ctx._stream() if dev_type == CUDA else None)
    except BufferError:  # NumPy will not export a read-only array through the first protocol
        if dev_type == CPU and copy is not False:
            return ctx.tensor(np.asarray(x))
        raise
    name = _get_name(capsule)
    versioned = name == _NAME_V
    if name not in (_NAME, _NAME_V):
        raise _error(1, f"__dlpack__ returned a capsule named {name!r}, not 'dltensor' or 'dltensor_versioned'")
    address = _get_pointer(capsule, name)
    _set_name(capsule, _USED_V if versioned else _USED)  # the capsule's own destructor now leaves it to us
    owner = _Producer(address, versioned)
    if versioned:
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major != VERSION[0]:
            raise _error(1, f"DLPack {managed.version.major}.{managed.version.minor} is not a version this "
                            f"package reads ({VERSION[0]}.x)")
        if managed.flags & FLAG_READ_ONLY:
            if dev_type == CPU and copy is not False:
                return ctx.tensor(np.asarray(x))
            raise _error(1, "the producer exported read-only memory: trireme cannot promise not to write it "
                            "(pass copy=None for a copy)")
        dl = managed.dl_tensor
    else:
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


# Exported tensors alive in a consumer: address of the managed struct -> what it points into.
_exported = {}


@_Deleter
def _delete_exported(address):
    try:
        entry = _exported.pop(address, None)
        if entry is not None:
            entry[-1]._storage.pins -= 1
    except Exception:  # noqa: BLE001  at interpreter exit the module's globals may already be gone
        pass


@_Destructor
def _destroy_capsule(capsule):
    # A capsule never consumed still owns its tensor; a consumed one was renamed and is the consumer's.
    try:
        for name in (_NAME, _NAME_V):
            if _is_valid_raw(capsule, name):
                _delete_exported(_get_pointer_raw(capsule, name))
    except Exception:  # noqa: BLE001  interpreter exit
        pass


def export(t, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of a trireme tensor (Tensor.__dlpack__), by the protocol of the array API standard
    (2023.12): a versioned capsule when the consumer's max_version allows one, the first protocol's otherwise.

    CPU and CUDA tensors are exported without a copy (copy=True asks for one: a host copy for a CPU tensor, a
    device copy for a CUDA tensor); dl_device=(kDLCPU, 0) with copy not False exports a host copy of a tensor on
    any device. OpenCL and Vulkan tensors raise BufferError unless a copy is allowed by copy=True or by
    dl_device=(kDLCPU, 0). stream: the consumer's (DLPack's numbering: None or 1 the legacy default stream, 2
    the per-thread one, -1 none), made to wait for trireme's work on the tensor."""
    backend = t.ctx.backend
    own = device_of(t)
    if t.trr_dtype not in _TRR_TO_DL:
        raise BufferError("no DLPack dtype for this tensor")
    want = own if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
    host_copy = False
    if want != own:
        if want[0] != CPU or copy is False:
            raise BufferError(f"this {backend} tensor cannot be exported to DLPack device {want}"
                              + (" without a copy (copy=False)" if want[0] == CPU else
                                 f": it lives on {t.ctx.device['spec']}, exported as device {own}"))
        host_copy = True
    elif backend in ("opencl", "vulkan"):
        if copy is not True:
            raise BufferError(f"this {backend} tensor's memory has no address a DLPack consumer can read (a "
                              f"{'cl_mem' if backend == 'opencl' else 'VkBuffer'} is a handle, not an address): "
                              "pass copy=True (or dl_device=(1, 0)) for a host copy, or use t.numpy()")
        host_copy = True
    elif copy is True:
        t = t.ctx._packed_copy(t)  # on the same device (a CPU tensor's copy is host memory)
    copied = host_copy or copy is True
    if host_copy:
        data = t.bits() if t.trr_dtype in (_lib.BF16, _lib.F8E4M3, _lib.F8E5M2) else t.numpy()
        keep, address, offset = data, data.ctypes.data, 0
        dev = (CPU, 0)
        shape_, strides_ = data.shape, tuple(s // data.itemsize for s in data.strides)
    else:
        if backend == "cuda":
            _order_consumer(t.ctx, stream)
        keep, address, offset = t, t._storage.address(), t.offset
        dev = own
        shape_, strides_ = t.shape, t.strides
    n = len(shape_)
    shape = (ctypes.c_int64 * max(n, 1))(*shape_)
    strides = (ctypes.c_int64 * max(n, 1))(*strides_)
    versioned = max_version is not None and int(max_version[0]) >= VERSION[0]
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    dl = managed.dl_tensor
    dl.data = address
    dl.byte_offset = offset
    dl.device = DLDevice(*dev)
    dl.ndim = n
    code, bits = _TRR_TO_DL[t.trr_dtype]
    dl.dtype = DLDataType(code, bits, 1)
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    managed.deleter = _delete_exported
    if versioned:
        managed.version = DLPackVersion(*VERSION)
        managed.flags = FLAG_IS_COPIED if copied else 0
    address_m = ctypes.addressof(managed)
    owner = t if not host_copy else _HostCopy(keep)
    owner._storage.pins += 1
    _exported[address_m] = (managed, shape, strides, keep, owner)
    return _capsule_new(address_m, _NAME_V if versioned else _NAME, _destroy_capsule)


class _HostCopy:
    """What an exported host copy's entry holds in place of a tensor: the NumPy array and a pin count of its own
    (nothing closes it)."""

    def __init__(self, array):
        self.array = array
        self._storage = self
        self.pins = 0


def _order_consumer(ctx, stream):
    """Makes the consumer's CUDA stream wait for trireme's work so far (DLPack: None means the legacy default
    stream, -1 asks for no ordering)."""
    if stream is not None and not isinstance(stream, int):
        raise TypeError(f"stream must be an int (a CUstream) or None, not {type(stream).__name__}")
    if stream == -1:
        return
    _check(ctx._lib.trr_native_wait_stream(ctx._live(), 1 if stream is None else stream), ctx._handle)
