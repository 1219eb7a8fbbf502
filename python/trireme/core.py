"""Contexts, device tensors and ops over libtrireme.

Ops take NumPy arrays or trireme Tensors. With NumPy inputs (and no Tensor ``out``) the result comes back as a
NumPy array; when any operand is a Tensor the result is a Tensor on the context's device, so a chain of ops
stays on the device.

Strides, one rule for both kinds of input: an op takes an input as the view it is where it can, and never
fails because of an input's strides. Tensors are passed as their views, and so are NumPy arrays on the CPU
backend (their own memory with their strides; negative or zero strides are copied to contiguous memory first).
NumPy arrays on another device are uploaded, a packed copy (a 2-D Fortran-ordered matmul operand keeps its
layout, as a transposed view). When the op cannot take an input's strides (TRR_ERR_STRIDE: a transposed view
into an element-wise op, say), every input that is not packed is copied to a packed tensor (by the copy op on
the device where it takes the strides, else through the host) and the op runs on the copies. An ``out`` Tensor
is never copied: strides an op cannot write raise TRR_ERR_STRIDE. A NumPy ``out`` is written in place on the
CPU backend (through a packed temporary where the op cannot write its strides) and copied into elsewhere.

Every failure of the library raises TriremeError with the status name (``TRR_ERR_SHAPE``) and the library's
detail text (trr_last_error). The class says the status band: ArgumentError (also a ValueError) for the
caller's arguments (1-19), DtypeError (also a TypeError) among them for TRR_ERR_DTYPE, UnsupportedError (also
a RuntimeError) for what this device or build cannot do (20-29), ExecutionError (also a RuntimeError) for the
device, driver or runtime failing (30 and up).
"""

import json
import math
import operator
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import weakref
import ctypes

import numpy as np

from . import _lib
from . import custom as _custom

_NP_TO_TRR = {np.dtype(np.float32): _lib.F32, np.dtype(np.float16): _lib.F16, np.dtype(np.uint8): _lib.U8}
_TRR_TO_NP = {v: k for k, v in _NP_TO_TRR.items()}
_ITEMSIZE = {_lib.F32: 4, _lib.F16: 2, _lib.BF16: 2, _lib.U8: 1, _lib.F8E4M3: 1, _lib.F8E5M2: 1}
# The dtypes NumPy has no type for (ml_dtypes' float8_e4m3fn and float8_e5m2 have the same bits, and are taken
# where an array comes with them): their names, and the NumPy type of their bit patterns (bits())
_NAMED = {_lib.BF16: "bfloat16", _lib.F8E4M3: "f8e4m3", _lib.F8E5M2: "f8e5m2"}
_BITS = {_lib.BF16: np.dtype(np.uint16), _lib.F8E4M3: np.dtype(np.uint8), _lib.F8E5M2: np.dtype(np.uint8)}

STATUS_INVALID_ARGUMENT = 1
STATUS_DTYPE = 2
STATUS_SHAPE = 3
STATUS_STRIDE = 4
STATUS_WRONG_CONTEXT = 9


class TriremeError(Exception):
    """A trireme call failed.

    status: the trr_status code (int); name: its name ("TRR_ERR_SHAPE"); detail: what the library recorded
    about the failure (trr_last_error: the status name followed by the detail). What is raised is one of the
    subclasses below, by the status's band (trireme.h); TriremeError(status, name, detail) itself picks it."""

    def __new__(cls, status=0, name="", detail="", *args):
        if cls is TriremeError:
            cls = _error_class(status)
        return super().__new__(cls)

    def __init__(self, status, name, detail):
        self.status, self.name, self.detail = status, name, detail
        super().__init__(detail if detail.startswith(name) else f"{name}: {detail}")

    def __reduce__(self):
        return (type(self), (self.status, self.name, self.detail))


class ArgumentError(TriremeError, ValueError):
    """Statuses 1-19: the caller's arguments (shape, stride, alignment, bounds, overlap, another context)."""


class DtypeError(ArgumentError, TypeError):
    """TRR_ERR_DTYPE: a dtype the op or operand does not take, or operands that disagree."""


class UnsupportedError(TriremeError, RuntimeError):
    """Statuses 20-29: the device cannot run this, the device does not exist, or its driver is missing."""


class ExecutionError(TriremeError, RuntimeError):
    """Statuses 30 and up: a driver call, allocation, kernel compile, file or check failed, or the runtime."""


def _error_class(status):
    if status == STATUS_DTYPE:
        return DtypeError
    if 1 <= status <= 19:
        return ArgumentError
    if 20 <= status <= 29:
        return UnsupportedError
    return ExecutionError


def _status_name(status):
    raw = _lib.lib().trr_status_name(status)
    return raw.decode() if raw else f"status {status}"


def _check(status, ctx=None):
    if status != 0:
        detail = _lib.lib().trr_last_error(ctx).decode(errors="replace")
        raise TriremeError(status, _status_name(status), detail or _status_name(status))


def _error(status, text):
    """A TriremeError raised by the Python layer itself, for what the C API cannot be asked."""
    return TriremeError(status, _status_name(status), f"{_status_name(status)}: {text}")


def _check_rank(shape):
    """Trireme views have 1 to TRR_MAX_DIMS dimensions (a 0-D array is passed as one element)."""
    if len(shape) > _lib.TRR_MAX_DIMS:
        raise _error(STATUS_SHAPE, f"rank {len(shape)} > {_lib.TRR_MAX_DIMS}: trireme tensors have at most "
                                   f"{_lib.TRR_MAX_DIMS} dimensions (shape {tuple(shape)})")


BFLOAT16 = "bfloat16"  # NumPy has no bfloat16: trireme names it by this string
F8E4M3 = "f8e4m3"      # nor the OCP 8-bit floats (e4m3: no infinities, largest finite 448)
F8E5M2 = "f8e5m2"      # (e5m2: IEEE-like, largest finite 57344)
_NAMES = {"bfloat16": _lib.BF16, "bf16": _lib.BF16, "f8e4m3": _lib.F8E4M3, "float8_e4m3fn": _lib.F8E4M3,
          "e4m3": _lib.F8E4M3, "f8e5m2": _lib.F8E5M2, "float8_e5m2": _lib.F8E5M2, "e5m2": _lib.F8E5M2}


def _trr_dtype(dtype):
    if isinstance(dtype, str) and dtype.lower() in _NAMES:
        return _NAMES[dtype.lower()]
    dt = np.dtype(dtype)
    if dt.name in _NAMES:  # ml_dtypes' float8_e4m3fn and float8_e5m2: the same bits
        return _NAMES[dt.name]
    if dt not in _NP_TO_TRR:
        hint = ""
        if dt.kind in "fiub":  # a Python list or scalar becomes float64 or int64 in NumPy
            hint = ("; convert it first, e.g. x.astype(np.float32) (a Python list or float: "
                    "np.asarray(x, dtype=np.float32))")
        raise _error(STATUS_DTYPE, f"{dt} has no trireme dtype (float32, float16, uint8, \"bfloat16\", \"f8e4m3\" "
                                   f"and \"f8e5m2\" do){hint}")
    return _NP_TO_TRR[dt]


def to_bfloat16(array):
    """float32 values rounded to bfloat16 (nearest even, NaN kept a NaN), as their 16-bit patterns (uint16), by
    the library's own conversion (trr_f32_to_bf16)."""
    a = np.asarray(array, dtype=np.float32, order="C")  # keeps 0-D
    out = np.empty(a.shape, dtype=np.uint16)
    if a.size:
        _check(_lib.lib().trr_f32_to_bf16(a.ctypes.data, out.ctypes.data, a.size))
    return out


def from_bfloat16(bits):
    """bfloat16 patterns (uint16) widened to float32 (exact)."""
    b = np.asarray(bits, dtype=np.uint16, order="C")
    out = np.empty(b.shape, dtype=np.float32)
    if b.size:
        _check(_lib.lib().trr_bf16_to_f32(b.ctypes.data, out.ctypes.data, b.size))
    return out


def _f8_code(dtype):
    dt = _trr_dtype(dtype)
    if dt not in (_lib.F8E4M3, _lib.F8E5M2):
        raise _error(STATUS_DTYPE, f"{dtype!r} is not an 8-bit float (\"f8e4m3\" or \"f8e5m2\")")
    return dt


def to_float8(array, dtype="f8e4m3"):
    """float32 values rounded to an 8-bit float, "f8e4m3" or "f8e5m2", as their bit patterns (uint8), by the
    library's own conversion: round to nearest even; past the largest finite value (448, 57344) saturating to it,
    as an infinity does in e4m3 (which has none); e5m2 keeps infinities; NaN stays NaN."""
    dt = _f8_code(dtype)
    a = np.asarray(array, dtype=np.float32, order="C")
    out = np.empty(a.shape, dtype=np.uint8)
    if a.size:
        fn = _lib.lib().trr_f32_to_f8e4m3 if dt == _lib.F8E4M3 else _lib.lib().trr_f32_to_f8e5m2
        _check(fn(a.ctypes.data, out.ctypes.data, a.size))
    return out


def from_float8(bits, dtype="f8e4m3"):
    """8-bit float patterns (uint8) of "f8e4m3" or "f8e5m2" widened to float32 (exact)."""
    dt = _f8_code(dtype)
    b = np.asarray(bits, dtype=np.uint8, order="C")
    out = np.empty(b.shape, dtype=np.float32)
    if b.size:
        fn = _lib.lib().trr_f8e4m3_to_f32 if dt == _lib.F8E4M3 else _lib.lib().trr_f8e5m2_to_f32
        _check(fn(b.ctypes.data, out.ctypes.data, b.size))
    return out


def _to_bits(array, dt):
    """array's values rounded to dtype code dt (bfloat16 or an 8-bit float), as bit patterns."""
    return to_bfloat16(array) if dt == _lib.BF16 else to_float8(array, _NAMED[dt])


def _decode(raw):
    return raw.decode(errors="replace") if isinstance(raw, bytes) else raw


def _device_dict(info):
    return {name: _decode(getattr(info, name)) for name, _ in _lib.DeviceInfo._fields_}


def backends():
    """Every compiled-in backend: name, available, device_count, and the reason it is unavailable."""
    lib = _lib.lib()
    n = ctypes.c_int()
    _check(lib.trr_backend_count(ctypes.byref(n)))
    out = []
    for i in range(n.value):
        b = _lib.BackendInfo()
        _check(lib.trr_backend_get_info(i, ctypes.byref(b)))
        out.append({"name": _decode(b.name), "available": bool(b.available), "device_count": b.device_count,
                    "reason": _decode(b.reason)})
    return out


def devices():
    """Every device of every available backend, as dicts of trr_device_info's fields ("spec" selects it)."""
    lib = _lib.lib()
    out = []
    for b in backends():
        if not b["available"]:
            continue
        for i in range(b["device_count"]):
            info = _lib.DeviceInfo()
            _check(lib.trr_device_get_info(b["name"].encode(), i, ctypes.byref(info)))
            out.append(_device_dict(info))
    return out


class _Storage:
    """One trireme buffer and whatever keeps its memory alive (a wrapped NumPy array, a DLPack producer).
    Views (Tensors) share it; the buffer is destroyed before the memory's owner is let go."""

    __slots__ = ("ctx", "handle", "nbytes", "native", "keepalive", "host", "pins", "__weakref__")

    def __init__(self, ctx, handle, nbytes, native=None, keepalive=None, host=None):
        self.ctx, self.handle, self.nbytes = ctx, handle, nbytes
        self.native = native  # the address of the memory where known (host or device), else asked for later
        self.keepalive = keepalive
        self.host = host  # a NumPy array over the same memory (CPU backend)
        self.pins = 0  # DLPack exports a consumer still holds: Context.close leaves their memory alone
        ctx._storages.add(self)

    def address(self):
        """The memory's address as DLPack carries it: the host address (cpu) or the CUdeviceptr (cuda), of
        memory trireme allocated or wrapped (trr_buffer_native)."""
        if self.native is None:
            handle = ctypes.c_uint64()
            _check(self.ctx._lib.trr_buffer_native(self.handle, ctypes.byref(handle)), self.ctx._handle)
            self.native = handle.value
        return self.native

    def close(self):
        if self.handle is not None:
            # the context's own reference to the library: still there while the interpreter shuts down. The
            # buffer may outlive the context's handle (a garbage cycle finalises in any order): libtrireme keeps
            # a context's device open until its last buffer is destroyed (trr_context_destroy).
            self.ctx._lib.trr_buffer_destroy(self.handle)
            self.handle = None
        self.keepalive = None
        self.host = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


def _packed_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= max(s, 1)
    return strides


def _reshape_strides(shape, strides, new_shape):
    """Element strides that show a view of (shape, strides) as new_shape without moving an element, or None
    when there are none (the dimensions merged are not laid out one after the other). NumPy's rule."""
    old = [(n, st) for n, st in zip(shape, strides) if n != 1]
    if any(n == 0 for n in new_shape) or not old:
        return _packed_strides(new_shape)
    new = [0] * len(new_shape)
    oi = ni = 0
    while ni < len(new_shape) and oi < len(old):
        nj, oj = ni + 1, oi + 1
        np_, op = new_shape[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):  # the old dimensions merged must follow one another in memory
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        new[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new[k - 1] = new[k] * new_shape[k]
        ni, oi = nj, oj
    for k in range(ni, len(new_shape)):  # trailing dimensions of 1
        new[k] = 1
    return new


class _HostView:
    """What np.asarray of a CPU tensor wraps: its memory described by __array_interface__, the tensor kept
    alive by the array (its base)."""

    def __init__(self, t, dt):
        self.tensor = t
        self.__array_interface__ = {
            "version": 3, "shape": t.shape, "typestr": dt.str,
            "data": (t._storage.address() + t.offset, False),
            "strides": tuple(st * dt.itemsize for st in t.strides) if t.shape else None,
        }


class Tensor:
    """A view into a trireme buffer: shape, dtype, element strides and a byte offset, on one Context.

    numpy() copies it to the host; np.asarray(t) is a view of a CPU tensor's memory and a copy elsewhere.
    Indexing with integers and slices (positive steps), ``reshape`` and ``t.T`` (a 2-D tensor's transpose: how
    a matmul operand stored as [K,M] or [N,K] is passed) are views of the same memory; ``reshape`` copies only
    where no view exists, as NumPy's does. __dlpack__ / __dlpack_device__ export it (dlpack.py): CPU and CUDA
    tensors without a copy, OpenCL and Vulkan ones as a host copy when the consumer asks for one."""

    __slots__ = ("_storage", "ctx", "shape", "trr_dtype", "strides", "offset", "size", "_c", "_addr",
                 "__weakref__")

    def __init__(self, storage, shape, dtype, strides=None, offset=0):
        self._storage = storage
        self.ctx = storage.ctx
        self.shape = shape = tuple(int(s) for s in shape)
        if len(shape) > _lib.TRR_MAX_DIMS:
            _check_rank(shape)
        self.trr_dtype = dtype
        self.strides = tuple(int(s) for s in (strides if strides is not None else _packed_strides(shape)))
        self.offset = int(offset)  # in bytes
        size = 1
        for n in shape:
            size *= n
        self.size = size
        # the library's view, built once: a call passes its address
        c = _lib.Tensor()
        c.buffer = storage.handle
        c.offset = self.offset
        c.dtype = dtype
        if shape:
            c.ndim = len(shape)
            for i, (n, st) in enumerate(zip(shape, self.strides)):
                c.shape[i], c.strides[i] = n, st
        else:  # 0-D: the library's views have a dimension; one element is the same memory
            c.ndim, c.shape[0], c.strides[0] = 1, 1, 1
        self._c = c
        self._addr = ctypes.addressof(c)

    @property
    def dtype(self):
        """The NumPy dtype (bfloat16 and the 8-bit floats have none: then the strings "bfloat16", "f8e4m3",
        "f8e5m2")."""
        return _TRR_TO_NP.get(self.trr_dtype) or _NAMED[self.trr_dtype]

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return _ITEMSIZE[self.trr_dtype]

    @property
    def nbytes(self):
        return self.size * _ITEMSIZE[self.trr_dtype]

    @property
    def device(self):
        """The device spec of the tensor's context ("cuda:0")."""
        return self.ctx.device["spec"]

    @property
    def T(self):
        if self.ndim != 2:
            raise _error(STATUS_SHAPE, f"transpose needs a 2-D tensor, not {self.ndim}-D")
        return Tensor(self._storage, self.shape[::-1], self.trr_dtype, self.strides[::-1], self.offset)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-D tensor")
        return self.shape[0]

    def __getitem__(self, key):
        """A view: integers drop a dimension, slices (step >= 1) keep it, ``...`` stands for the rest."""
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            i = next(n for n, k in enumerate(key) if k is Ellipsis)
            if any(k is Ellipsis for k in key[i + 1:]):
                raise IndexError("an index can hold one ellipsis ('...')")
            key = key[:i] + (slice(None),) * (self.ndim - len(key) + 1) + key[i + 1:]
        if len(key) > self.ndim:
            raise IndexError(f"too many indices ({len(key)}) for a {self.ndim}-D tensor")
        key = key + (slice(None),) * (self.ndim - len(key))
        shape, strides, first = [], [], 0
        for k, n, st in zip(key, self.shape, self.strides):
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step < 1:
                    raise IndexError("a slice's step must be positive: trireme views have positive strides")
                m = len(range(start, stop, step))
                first += start * st if m else 0
                shape.append(m)
                strides.append(st * step)
            else:
                i = operator.index(k)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of range for a dimension of {n}")
                first += (i % n) * st
        return Tensor(self._storage, shape, self.trr_dtype, strides, self.offset + first * self.itemsize)

    def reshape(self, *shape):
        """The same elements in another shape (one dimension may be -1): a view where the strides allow one,
        else a packed copy (as NumPy's reshape)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        shape = [int(n) for n in shape]
        if shape.count(-1) > 1 or any(n < -1 for n in shape):
            raise _error(STATUS_SHAPE, f"reshape to {tuple(shape)}: at most one -1 and no other negative size")
        if -1 in shape:
            known = int(np.prod([n for n in shape if n != -1]))
            if known == 0 or self.size % known:
                raise _error(STATUS_SHAPE, f"cannot reshape {self.size} elements to {tuple(shape)}")
            shape[shape.index(-1)] = self.size // known
        if int(np.prod(shape)) != self.size:
            raise _error(STATUS_SHAPE, f"cannot reshape {self.shape} ({self.size} elements) to {tuple(shape)}")
        _check_rank(shape)
        strides = _reshape_strides(self.shape, self.strides, shape)
        if strides is None:
            return self.contiguous().reshape(shape)
        return Tensor(self._storage, shape, self.trr_dtype, strides, self.offset)

    def contiguous(self):
        """The tensor itself when packed (C-contiguous), else a packed copy on the same device."""
        return self if self._packed() else self.ctx._packed_copy(self)

    def _struct(self):
        return self._c

    def _packed(self):
        """True when the view is C-contiguous (strides as Tensor() computes them for its shape)."""
        acc = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s != 1 and st != acc:
                return False
            acc *= max(s, 1)
        return True

    def _extent(self):
        """Elements from the first to one past the last that the view reaches (0 when empty)."""
        if any(s == 0 for s in self.shape):
            return 0
        return 1 + sum((s - 1) * st for s, st in zip(self.shape, self.strides))

    def numpy(self):
        """A host copy as a NumPy array (C-contiguous). A bfloat16 or 8-bit float tensor, which NumPy cannot
        hold, comes back as float32 (exact: every such value is a float32); its raw bit patterns with bits()."""
        if self.trr_dtype == _lib.BF16:
            return from_bfloat16(self.bits())
        if self.trr_dtype in (_lib.F8E4M3, _lib.F8E5M2):
            return from_float8(self.bits(), _NAMED[self.trr_dtype])
        return self._host_copy(_TRR_TO_NP[self.trr_dtype])

    def bits(self):
        """A host copy of a bfloat16 tensor as its 16-bit patterns (uint16), of an 8-bit float one as its bytes
        (uint8)."""
        if self.trr_dtype not in _BITS:
            raise _error(STATUS_DTYPE, f"bits() is for bfloat16 and 8-bit float tensors, not {self.dtype}")
        return self._host_copy(_BITS[self.trr_dtype])

    def _host_copy(self, dt):
        n = self._extent()
        flat = np.empty(max(n, 1), dtype=dt)
        if n:
            _check(_lib.lib().trr_buffer_read(self.ctx._live(), self._storage.handle, self.offset,
                                              flat.ctypes.data, n * dt.itemsize), self.ctx._handle)
        view = np.lib.stride_tricks.as_strided(flat, self.shape, tuple(s * dt.itemsize for s in self.strides))
        return np.array(view, order="C")  # a copy that keeps a 0-D shape (ascontiguousarray makes it 1-D)

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t): a CPU tensor's own memory (no copy unless copy=True), else a host copy (numpy());
        bfloat16 and the 8-bit floats come back as float32, a copy."""
        if self.ctx.backend == "cpu" and self.trr_dtype in _TRR_TO_NP and copy is not True:
            self.ctx._live()
            a = np.asarray(_HostView(self, _TRR_TO_NP[self.trr_dtype]))
        else:
            if copy is False:
                raise ValueError(f"a {self.ctx.backend} {self.dtype} tensor reaches NumPy only as a copy")
            a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        dt = _NAMED.get(self.trr_dtype) or np.dtype(self.dtype).name
        spec = self.ctx.device["spec"]
        if self.size <= _REPR_VALUES and self.ctx._handle is not None and self._storage.handle is not None:
            values = np.array2string(self.numpy(), separator=", ", prefix="trireme.Tensor(")
            return f"trireme.Tensor({values}, dtype={dt}, device='{spec}')"
        return f"trireme.Tensor(shape={self.shape}, dtype={dt}, device='{spec}')"

    # DLPack export lives in dlpack.py
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from . import dlpack
        return dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from . import dlpack
        return dlpack.device_of(self)


_REPR_VALUES = 64  # a tensor of at most this many elements shows its values in repr()


def _out_shape(lib, code, ins, out_dtype):
    """The output's shape and trireme dtype for these inputs, as the library's definition of the op gives them
    (trr_op_output_shape). A 0-D input goes in as one element, and its one-element output comes back 0-D."""
    structs = [t._struct() for t in ins]
    ptrs = (ctypes.POINTER(_lib.Tensor) * len(structs))(*[ctypes.pointer(t) for t in structs])
    ndim, shape, dt = ctypes.c_int(), (ctypes.c_int64 * _lib.TRR_MAX_DIMS)(), ctypes.c_int()
    want = _trr_dtype(out_dtype) if out_dtype is not None else -1
    _check(lib.trr_op_output_shape(code, ptrs, want, ctypes.byref(ndim), shape, ctypes.byref(dt)))
    out = tuple(int(v) for v in shape[:ndim.value])
    if out == (1,) and all(not t.shape for t in ins):
        out = ()
    return out, dt.value


_OPS = {}
_SMALL_WORK = 1 << 16  # elements (multiply-adds for matmul) up to which a call keeps the GIL


def _op_params(lib, code, params):
    """Keyword arguments as a struct trr_op_params, parsed and checked against the op's definition by the
    library (trr_op_params_parse): bools as true/false, enums by name, numbers as they are."""
    items = []
    for name, value in params.items():
        if isinstance(value, (bool, np.bool_)):
            text = "true" if value else "false"
        elif isinstance(value, (int, float, np.integer, np.floating)):
            text = repr(float(value))
        elif isinstance(value, str):
            text = value
        else:
            raise _error(1, f"parameter {name}: {type(value).__name__} is not a number, bool or name")
        if "," in name or "=" in name or "," in text:
            raise _error(1, f"parameter {name}={text!r}: names and values may not hold ',' or '='")
        items.append(f"{name}={text}")
    out = _lib.OpParams()
    if items:
        _check(lib.trr_op_params_parse(code, ",".join(items).encode(), ctypes.byref(out)), None)
    return out


def _op_info(name):
    """(enum value, number of inputs, operand text, whether it writes two outputs) of an op, from the library's
    table (cached: a call's Python overhead counts when a fast device waits for the next launch)."""
    if name not in _OPS:
        lib = _lib.lib()
        code = ctypes.c_int()
        _check(lib.trr_op_from_name(name.encode(), ctypes.byref(code)))
        info = _lib.OpInfo()
        _check(lib.trr_op_get_info(code.value, ctypes.byref(info)))
        operands = _decode(info.operands)
        # a second output the caller must give (a user row op's), unlike attention's optional lse
        both = info.n_outputs == 2 and "(optional)" not in operands
        _OPS[name] = (code.value, info.n_inputs, operands, both)
    return _OPS[name]


class Context:
    """A device opened for work: Context("cpu"), Context("opencl:0"), Context("cuda:1") or Context("auto")
    (the best GPU, else the CPU); None, the default, reads TRIREME_DEVICE and falls back to "auto", as the C
    API and the CLI do. Threads may share a context (libtrireme runs its calls one at a time). ``close()`` (or
    a ``with`` block) frees every buffer made on it; a context and tensors that are simply dropped are freed in
    whatever order the garbage collector takes them."""

    def __init__(self, device=None):
        self._lib = _lib.lib()
        self._fast = _lib.fast()
        self._storages = weakref.WeakSet()
        self._h = None  # the handle as an int, for the calls that take addresses (None once closed)
        handle = ctypes.c_void_p()
        _check(self._lib.trr_context_create(device.encode() if device is not None else None, ctypes.byref(handle)))
        self._handle = handle
        self._h = handle.value
        self._np_views = {}  # CPU backend: id(array) -> (weakref, shape, strides, dtype, Tensor over its memory)
        self._tls = threading.local()  # per thread: the operand array a call passes (a context is shared)
        self._stream_handle = None
        self._matmul = _op_info("matmul")[0]
        info = _lib.DeviceInfo()
        _check(self._lib.trr_context_device(self._handle, ctypes.byref(info)), self._handle)
        self.device = _device_dict(info)
        text = ctypes.c_char_p()
        _check(self._lib.trr_context_selection(self._handle, ctypes.byref(text)), self._handle)
        self.selection = _decode(text.value)
        self._cpu = self.device["backend"] == "cpu"

    @property
    def backend(self):
        return self.device["backend"]

    def close(self):
        if getattr(self, "_handle", None) is None:
            return
        self._np_views.clear()
        self._h = None
        for s in list(self._storages):
            if not s.pins:  # memory a DLPack consumer still holds is freed when it lets go (Storage.__del__)
                s.close()
        self._lib.trr_context_destroy(self._handle)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"trireme.Context({self.device['spec']!r})"

    def _live(self):
        if self._handle is None:
            raise _error(1, "the context is closed")
        return self._handle

    # ---- buffers and tensors ----

    def _wrap(self, address, nbytes, keepalive=None, host=None):
        """A storage over memory at `address` of nbytes (the kind trr_buffer_wrap takes on this backend). The
        handle passed down is rounded down to 4 bytes (the CPU backend's alignment rule); the view's offset
        makes up the difference."""
        base = address - address % 4
        h = self._h
        if h is None:
            raise _error(1, "the context is closed")
        tls = self._tls
        try:
            out, out_addr = tls.handle
        except AttributeError:
            out = ctypes.c_void_p()
            out_addr = ctypes.addressof(out)
            tls.handle = out, out_addr
        if self._cpu:  # a few words of bookkeeping: the GIL kept
            st = self._fast.trr_buffer_wrap(h, base, nbytes + (address - base), out_addr)
        else:  # cuda asks the driver about the allocation
            st = self._lib.trr_buffer_wrap(h, base, nbytes + (address - base), ctypes.byref(out))
        _check(st, self._handle)
        return _Storage(self, out.value, nbytes + (address - base), native=base, keepalive=keepalive,
                        host=host), address - base

    def empty(self, shape, dtype=np.float32):
        """An uninitialised packed tensor (dtype: a NumPy dtype, "bfloat16", "f8e4m3" or "f8e5m2"). On the CPU
        backend its memory is
        a NumPy array's; elsewhere a device buffer."""
        shape = tuple(int(s) for s in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        _check_rank(shape)
        dt = dtype if isinstance(dtype, int) else _trr_dtype(dtype)
        nbytes = max(math.prod(shape) * _ITEMSIZE[dt], 4)  # empty tensors still need a buffer to point into
        if self._cpu:
            host = np.empty(nbytes, dtype=np.uint8)
            storage, off = self._wrap(host.ctypes.data, nbytes, host=host)
            return Tensor(storage, shape, dt, offset=off)
        buf = ctypes.c_void_p()
        _check(self._lib.trr_buffer_create(self._live(), nbytes, ctypes.byref(buf)), self._handle)
        return Tensor(_Storage(self, buf.value, nbytes), shape, dt)

    def zeros(self, shape, dtype=np.float32):
        """A packed tensor of zeros (the device fills it: trr_buffer_fill)."""
        t = self.empty(shape, dtype)
        if t.size:
            _check(self._lib.trr_buffer_fill(self._live(), t._storage.handle, t.offset, t.nbytes, 0), self._handle)
        return t

    def full(self, shape, value, dtype=np.float32):
        """A packed tensor with every element `value` (rounded to dtype as ctx.tensor rounds)."""
        shape = tuple(int(s) for s in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        if not isinstance(dtype, int) and _trr_dtype(dtype) in _NAMED:
            return self.tensor(np.full(shape, value, np.float32), dtype=_NAMED[_trr_dtype(dtype)])
        return self.tensor(np.full(shape, value, dtype if not isinstance(dtype, int) else _TRR_TO_NP[dtype]))

    def tensor(self, array, dtype=None):
        """A device copy of a NumPy array (or of anything np.asarray takes). dtype="bfloat16", "f8e4m3" or
        "f8e5m2" rounds the values on the way (to_bfloat16, to_float8: the library's conversions); other dtypes
        convert as NumPy's astype does."""
        if dtype is not None and _trr_dtype(dtype) in _NAMED and np.asarray(array).dtype.name not in _NAMES:
            dt = _trr_dtype(dtype)
            bits = _to_bits(array, dt)
            t = self.empty(bits.shape, dt)
            if bits.size:
                _check(self._lib.trr_buffer_write(self._live(), t._storage.handle, t.offset, bits.ctypes.data,
                                                  bits.nbytes), self._handle)
            return t
        a = np.asarray(array if dtype is None else np.asarray(array).astype(dtype), order="C")  # keeps 0-D
        _check_rank(a.shape)
        t = self.empty(a.shape, a.dtype)
        if a.size:
            _check(self._lib.trr_buffer_write(self._live(), t._storage.handle, t.offset, a.ctypes.data, a.nbytes),
                   self._handle)
        return t

    def _np_view(self, a, dt, cache):
        """CPU backend: a Tensor over the memory of NumPy array `a` with its strides (no copy), or None when
        its strides are not positive whole elements (then the caller copies). cache: `a` is the caller's own
        array, kept by id while it lives (weakref), so that passing it again costs no wrap; a temporary is
        wrapped with a reference to it instead."""
        if cache:
            e = self._np_views.get(id(a))
            if e is not None and e[0]() is a and e[1] == a.shape and e[2] == a.strides and e[3] == a.dtype:
                return e[4]
        item = a.itemsize
        strides = []
        for n, st in zip(a.shape, a.strides):
            if n == 1:
                st = item  # any stride views a dimension of 1; the library wants one >= 1
            if st <= 0 or st % item:
                return None
            strides.append(st // item)
        extent = 0 if a.size == 0 else 1 + sum((n - 1) * st for n, st in zip(a.shape, strides))
        storage, off = self._wrap(a.ctypes.data, max(extent * item, 1), keepalive=None if cache else a)
        t = Tensor(storage, a.shape, dt, strides, offset=off)
        if cache:
            views = self._np_views
            key = id(a)

            def forget(ref, key=key, views=views):
                e = views.get(key)
                if e is not None and e[0] is ref:
                    del views[key]

            views[key] = (weakref.ref(a, forget), a.shape, a.strides, a.dtype, t)
        return t

    def _operand(self, x, allow_transposed=False):
        """A Tensor for an op input: Tensors pass through; NumPy arrays are the same memory with the same
        strides on the CPU backend (the op finishes before this call returns), and uploaded elsewhere."""
        if isinstance(x, Tensor):
            if x.ctx is not self:
                raise _error(9, "the tensor belongs to another context")
            return x
        if self._cpu and type(x) is np.ndarray:
            e = self._np_views.get(id(x))  # the array's wrap from an earlier call (_np_view)
            if e is not None and e[0]() is x and e[1] == x.shape and e[2] == x.strides and e[3] == x.dtype:
                return e[4]
            dt = _NP_TO_TRR.get(x.dtype)
            if dt is not None:
                t = self._np_view(x, dt, cache=True)
                if t is not None:
                    return t
        a = np.asarray(x)
        _check_rank(a.shape)
        dt = _trr_dtype(a.dtype)
        if self._cpu:
            t = self._np_view(a, dt, cache=False)
            if t is not None:
                return t
            a = np.asarray(a, order="C")
            return self._np_view(a, dt, cache=False)
        if allow_transposed and a.ndim == 2 and not a.flags.c_contiguous and a.flags.f_contiguous:
            return self._operand(a.T).T  # the upload keeps the layout: a transposed view, not a reordering
        return self.tensor(np.asarray(a, order="C"))  # a copy when not C-contiguous; a 0-D array stays 0-D

    def _out_operand(self, out):
        """A Tensor for a NumPy ``out``: its own memory on the CPU backend, else a device tensor of its shape
        and dtype that run() copies back into it."""
        a = out if isinstance(out, np.ndarray) else np.asarray(out)
        if not a.flags.writeable:
            raise ValueError("out is a read-only array")
        if self._cpu:
            dt = _NP_TO_TRR.get(a.dtype)
            if dt is not None:
                t = self._np_view(a, dt, cache=a is out)
                if t is not None:
                    return t, a is out
        return self.empty(a.shape, a.dtype), False

    def _packed_copy(self, t):
        """A packed copy of Tensor t on this context: the copy op on the device where it takes t's strides,
        else through the host (any strides)."""
        out = self.empty(t.shape, t.trr_dtype)
        if not t.size:
            return out
        code = _op_info("copy")[0]
        status = self._launch(code, (t,), out, None)
        if status == 0:
            return out
        if status != STATUS_STRIDE:
            _check(status, self._handle)
        host = t._host_copy(_BITS.get(t.trr_dtype) or _TRR_TO_NP[t.trr_dtype])
        _check(self._lib.trr_buffer_write(self._live(), out._storage.handle, out.offset, host.ctypes.data,
                                          host.nbytes), self._handle)
        return out

    def _stream(self):
        """trireme's CUDA stream (trr_context_stream), for a DLPack producer to make wait."""
        if self._stream_handle is None:
            s = ctypes.c_uint64()
            _check(self._lib.trr_context_stream(self._live(), ctypes.byref(s)), self._handle)
            self._stream_handle = s.value
        return self._stream_handle

    def wait_stream(self, native_stream):
        """trireme's work from now on starts after the work queued so far on `native_stream` (a CUstream as an
        int; DLPack's numbering: 1 the legacy default stream, 2 the per-thread one): an event, the host does
        not wait (trr_stream_wait_native). CUDA only."""
        _check(self._lib.trr_stream_wait_native(self._live(), int(native_stream)), self._handle)

    def stream_wait(self, native_stream):
        """Work queued on `native_stream` from now on starts after trireme's work so far (trr_native_wait_stream).
        CUDA only."""
        _check(self._lib.trr_native_wait_stream(self._live(), int(native_stream)), self._handle)

    def synchronize(self):
        _check(self._lib.trr_synchronize(self._live()), self._handle)

    def timer_start(self):
        """Starts the device timer (trr_timer_start): device time of the work submitted until timer_stop."""
        _check(self._lib.trr_timer_start(self._live()), self._handle)

    def timer_stop(self):
        """Waits for the work since timer_start and returns its device time in milliseconds."""
        ms = ctypes.c_double()
        _check(self._lib.trr_timer_stop(self._live(), ctypes.byref(ms)), self._handle)
        return ms.value

    # ---- tiling configs ----

    def override(self, op, config=None, **fields):
        """Forces op's tiling config on this context (trr_config_override): named fields (block_m, block_n, block_k,
        group_m, threads, stages, vector_width, split_k, and variant as its name: "simt", "coop_khr", ...), or a
        dict of them as config; fields left out stay the backend's choice. With neither, the override is cleared.
        A config the backend cannot run makes the op's next call fail with the reason (TRR_ERR_UNSUPPORTED)."""
        code = _op_info(op)[0]
        fields = {**(config or {}), **fields}
        if not fields:
            _check(self._lib.trr_config_override(self._live(), code, None), self._handle)
            return
        c = _lib.Config()
        known = {name for name, _ in _lib.Config._fields_}
        for name, value in fields.items():
            if name not in known:
                raise TypeError(f"override(): no config field {name!r} (fields: {', '.join(sorted(known))})")
            if name == "variant" and isinstance(value, str):
                v = ctypes.c_int()
                _check(self._lib.trr_variant_from_name(value.encode(), ctypes.byref(v)))
                value = v.value
            setattr(c, name, int(value))
        _check(self._lib.trr_config_override(self._live(), code, ctypes.byref(c)), self._handle)

    def last_config(self):
        """The config the last call on this context ran with (trr_config_last), as a dict; variant by its name."""
        c = _lib.Config()
        _check(self._lib.trr_config_last(self._live(), ctypes.byref(c)), self._handle)
        out = {name: getattr(c, name) for name, _ in _lib.Config._fields_}
        name = ctypes.c_char_p()
        _check(self._lib.trr_variant_name(c.variant, ctypes.byref(name)))
        out["variant"] = _decode(name.value)
        return out

    # ---- ops ----

    def run(self, op, *arrays, out=None, out_dtype=None, _return_numpy=None, **params):
        """Any op of the library's table by name, through trr_op_run: the op's inputs, then optionally ``out``.
        Without ``out`` the output's shape and dtype are the library's (trr_op_output_shape). Keyword arguments are the
        op's named parameters as its definition declares them (matmul: epilogue, alpha, allow_tf32, scale_a,
        scale_b), checked by the library. An op of two outputs (a user row op's "-> y[M,N], h[M,N]") returns both
        as a tuple, and ``out`` is then a pair."""
        if not isinstance(op, str):
            op = str(op)  # an Op of define_op
        info = _OPS.get(op) or _op_info(op)
        code, n_inputs = info[0], info[1]
        if len(arrays) != n_inputs:
            raise _error(1, f"{op} takes {n_inputs} input(s) ({info[2]}), not {len(arrays)}")
        if info[3]:
            return self._run_two(op, code, arrays, out, out_dtype, _return_numpy, params)
        op_params = _op_params(self._lib, code, params) if params else None
        any_tensor = isinstance(out, Tensor)
        ins = []
        for a in arrays:
            if isinstance(a, Tensor):
                if a.ctx is not self:
                    raise _error(9, "the tensor belongs to another context")
                any_tensor = True
                ins.append(a)
            else:
                ins.append(self._operand(a, op == "matmul"))
        return_numpy = not any_tensor if _return_numpy is None else _return_numpy
        own_memory = False  # a NumPy out whose memory the op writes itself (CPU backend)
        if isinstance(out, Tensor):
            z = out
        elif out is not None:
            z, own_memory = self._out_operand(out)
        else:
            shape, dt = _out_shape(self._lib, code, ins, out_dtype)
            z = self.empty(shape, dt)

        status = self._launch(code, ins, z, op_params)
        if code in _custom.CALLBACK_OPS:
            _custom.raise_recorded([op])
        if status == STATUS_STRIDE and not all(t._packed() for t in ins):
            # the module's stride rule: inputs the op cannot take as they are go in as packed copies (a rejected
            # call wrote nothing, so running it again is safe)
            status = self._launch(code, [t if t._packed() else self._packed_copy(t) for t in ins], z, op_params)
        if status == STATUS_STRIDE and own_memory and not z._packed():
            # a NumPy out the op cannot write as it is: the result goes to a packed tensor and is copied back
            z, own_memory = self.empty(z.shape, z.trr_dtype), False
            status = self._launch(code, [t if t._packed() else self._packed_copy(t) for t in ins], z, op_params)
        _check(status, self._handle)
        if out is not None and not isinstance(out, Tensor):
            if not own_memory:
                out[...] = z.numpy()  # a device result, or a packed temporary's
            return out
        if not return_numpy:
            return z
        host = z._storage.host
        if host is not None and z.trr_dtype in _TRR_TO_NP:  # CPU backend: the result already lies in NumPy memory
            dt = _TRR_TO_NP[z.trr_dtype]
            return host[z.offset:z.offset + z.size * dt.itemsize].view(dt).reshape(z.shape)
        return z.numpy()

    def _run_two(self, op, code, arrays, out, out_dtype, return_numpy, params):
        """run() for an op that writes two outputs of one shape and dtype (a user row op's): both as a tuple."""
        if out is not None and not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise _error(1, f"{op} writes two outputs: out=(first, second)")
        outs = out if out is not None else (None, None)
        op_params = _op_params(self._lib, code, params) if params else None
        ins = [a if isinstance(a, Tensor) else self._operand(a) for a in arrays]
        if any(t.ctx is not self for t in ins if isinstance(t, Tensor)):
            raise _error(9, "the tensor belongs to another context")
        any_tensor = any(isinstance(a, Tensor) for a in (*arrays, *outs))
        return_numpy = not any_tensor if return_numpy is None else return_numpy
        shape, dt = _out_shape(self._lib, code, ins, out_dtype)
        ts = []  # (Tensor written, NumPy out to copy into or None)
        for o in outs:
            if isinstance(o, Tensor):
                ts.append((o, None))
            elif o is not None:
                t, own = self._out_operand(o)
                ts.append((t if own and t._packed() else self.empty(t.shape, t.trr_dtype), None if own and
                           t._packed() else o))
            else:
                ts.append((self.empty(shape, dt), None))
        (z, _), (w, _) = ts
        status = self._launch(code, ins, z, op_params, w)
        if code in _custom.CALLBACK_OPS:
            _custom.raise_recorded([op])
        if status == STATUS_STRIDE and not all(t._packed() for t in ins):
            status = self._launch(code, [t if t._packed() else self._packed_copy(t) for t in ins], z, op_params, w)
        _check(status, self._handle)
        result = []
        for (t, into), o in zip(ts, outs):
            if into is not None:
                into[...] = t.numpy()
                result.append(into)
            elif o is not None and not isinstance(o, Tensor):
                result.append(o)  # written in place (CPU backend)
            else:
                result.append(t.numpy() if return_numpy else t)
        return tuple(result)

    def _launch(self, code, ins, z, op_params, w=None):
        """trr_op_run on Tensors (w: a second output, attention's lse; NULL where None); returns the status. A
        small op keeps the GIL through the call (_lib.fast says why); a large one lets other threads run while it
        is queued or, on the CPU, computed."""
        h = self._h
        if h is None:
            raise _error(1, "the context is closed")
        tls = self._tls
        try:
            arr, addr = tls.operands
        except AttributeError:
            arr = (ctypes.c_void_p * 8)()  # inputs, then the output(s)
            addr = ctypes.addressof(arr)
            tls.operands = arr, addr
        i = 0
        for t in ins:
            arr[i] = t._addr
            i += 1
        arr[i] = z._addr
        arr[i + 1] = w._addr if w is not None else None
        p = ctypes.addressof(op_params) if op_params is not None else None
        work = z.size if code != self._matmul else z.size * ins[0].shape[-1]  # matmul's work is M·N·K
        if work <= _SMALL_WORK and code not in _custom.CALLBACK_OPS:  # a Python CPU kernel needs the GIL free
            return self._fast.trr_op_run(h, code, addr, p)
        return _lib.run_released(h, code, addr, p)

    def copy(self, x, out=None):
        """z = x"""
        return self.run("copy", x, out=out)

    def add(self, x, y, out=None):
        """z = x + y (f32 bit-exact)"""
        return self.run("add", x, y, out=out)

    def gelu(self, x, out=None):
        """y = 0.5·x·(1 + tanh(0.7978845608·(x + 0.044715·x³))), the tanh form"""
        return self.run("gelu", x, out=out)

    def silu(self, x, out=None):
        """y = x / (1 + e^-x)"""
        return self.run("silu", x, out=out)

    def rgb_to_grey(self, img, out=None, out_dtype=np.uint8):
        """img uint8 [3,H,W] (planar) -> grey [H,W], uint8 (rounded, clamped) or float32"""
        return self.run("rgb_to_grey", img, out=out, out_dtype=out_dtype)

    def softmax(self, x, out=None):
        """row-wise softmax of x [M,N]"""
        return self.run("softmax", x, out=out)

    def row_sum(self, x, out=None):
        """y[r] = sum of row r of x [M,N], accumulated and returned in float32"""
        return self.run("row_sum", x, out=out)

    def rms_norm(self, x, w, eps=1e-6, out=None):
        """y = x / sqrt(mean(x²) + eps) · w over each row of x [M,N], w [N]; float32, float16 or bfloat16 alike
        in and out, float32 arithmetic"""
        return self.run("rms_norm", x, w, out=out, eps=eps)

    def layer_norm(self, x, w, b, eps=1e-5, out=None):
        """y = (x − mean) / sqrt(var + eps) · w + b over each row of x [M,N] (biased variance), w and b [N];
        float32, float16 or bfloat16 alike in and out, float32 arithmetic"""
        return self.run("layer_norm", x, w, b, out=out, eps=eps)

    def matmul(self, a, b, out=None, epilogue="none", alpha=0.01, transpose_a=False, transpose_b=False,
               allow_tf32=False, out_dtype=None, scale_a=1.0, scale_b=1.0):
        """C = act(op(A)·op(B)): A [M,K], B [K,N]; transpose_a / transpose_b say A is stored as [K,M] / B as
        [N,K]. epilogue: none, relu, leaky_relu (slope alpha), gelu. float16 inputs give float16 and bfloat16
        inputs bfloat16 unless out_dtype=np.float32. allow_tf32 lets an f32 matmul use TF32 tensor cores.
        8-bit float inputs (tensors of "f8e4m3" or "f8e5m2": ctx.cast, ctx.tensor(x, dtype="f8e4m3")) give
        bfloat16 unless out_dtype says float32 or float16; scale_a and scale_b, their per-tensor scales, multiply
        the sum before the epilogue. Their tensor cores take A [M,K] and B stored [N,K] (transpose_b)."""
        numpy_in = not isinstance(a, Tensor) and not isinstance(b, Tensor) and not isinstance(out, Tensor)
        if transpose_a:
            a = self._operand(a).T
        if transpose_b:
            b = self._operand(b).T
        scales = {}
        if scale_a != 1.0:
            scales["scale_a"] = scale_a
        if scale_b != 1.0:
            scales["scale_b"] = scale_b
        return self.run("matmul", a, b, out=out, epilogue=epilogue, alpha=alpha, allow_tf32=allow_tf32,
                        out_dtype=out_dtype, _return_numpy=numpy_in, **scales)

    def cast(self, x, dtype, out=None):
        """x converted to dtype (np.float32, np.float16, "bfloat16", "f8e4m3", "f8e5m2"), element by element:
        round to nearest even; f16 and bf16 overflow to infinity, the 8-bit floats saturate to their largest
        finite value (an infinity too in e4m3, which has none); NaN stays NaN. NumPy in gives NumPy out (float32
        for bfloat16 and the 8-bit floats, which NumPy cannot hold); Tensors give a Tensor."""
        return self.run("cast", x, out=out, out_dtype=dtype)

    def attention(self, q, k, v, causal=False, scale=None, lse=False, out=None):
        """Fused attention (docs/ops.md, attention): o = softmax(scale·q·kᵀ + mask)·v per batch and query head,
        float32 accumulation, one rounding on store. q [B,Hq,Sq,D], k and v [B,Hkv,Skv,D] of one dtype (float32,
        float16 or bfloat16), Hq a multiple of Hkv (query head h reads kv head h // (Hq // Hkv)), D up to 256;
        any strides on B, H and S (a [B,S,H,D] tensor passes as its .transpose(1, 2) view, e.g. from_dlpack),
        D contiguous. scale: None for 1/sqrt(D). causal: query i sees keys j <= i + Skv - Sq (bottom-right
        aligned); a row that sees no key gives 0 (and lse -inf). Returns o, or (o, lse) with lse=True: the
        natural log of each row's sum of exp, float32 [B,Hq,Sq]. out: o's tensor (or array) to write."""
        code = _op_info("attention")[0]
        if scale is not None and float(scale) == 0.0:
            raise _error(1, "attention: scale 0 is not available (None gives 1/sqrt(D))")
        params = {"causal": bool(causal)}
        if scale is not None:
            params["scale"] = float(scale)
        op_params = _op_params(self._lib, code, params)
        numpy_in = not any(isinstance(a, Tensor) for a in (q, k, v)) and not isinstance(out, Tensor)
        ins = [self._operand(a) for a in (q, k, v)]
        if isinstance(out, Tensor):
            o = out
        elif out is not None:
            o = self.empty(np.shape(out), np.asarray(out).dtype)
        else:
            o = self.empty(ins[0].shape, ins[0].trr_dtype)
        lse_t = self.empty(ins[0].shape[:3], np.float32) if lse and len(ins[0].shape) == 4 else None
        status = self._launch(code, ins, o, op_params, lse_t)
        if status == STATUS_STRIDE and not all(t._packed() for t in ins):  # D not contiguous
            status = self._launch(code, [t if t._packed() else self._packed_copy(t) for t in ins], o, op_params, lse_t)
        _check(status, self._handle)
        if out is not None and not isinstance(out, Tensor):
            out[...] = o.numpy()
            result = out
        else:
            result = o.numpy() if numpy_in else o
        if lse_t is None:
            return result
        return result, (lse_t.numpy() if numpy_in else lse_t)


# ---- the CLI's harness: conformance and benchmarks ----

def _cli():
    """The `trireme` command: TRIREME_CLI, else the one inside the package (a wheel's bin/trireme), else beside
    the loaded library (build tree: cli/trireme; installed prefix: ../bin/trireme), else on PATH."""
    env = os.environ.get("TRIREME_CLI")
    if env:
        return env
    bundled = pathlib.Path(__file__).resolve().parent / "bin" / "trireme"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    libdir = pathlib.Path(_lib.path()).resolve().parent
    for cand in (libdir / "cli" / "trireme", libdir.parent / "bin" / "trireme", libdir.parent.parent / "bin" / "trireme"):
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("trireme")
    if found:
        return found
    raise FileNotFoundError("the trireme command was not found: set TRIREME_CLI, or put it on PATH (looked beside "
                            f"{libdir} and on PATH)")


def _cli_json(args, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        proc = subprocess.run([_cli(), *args, "--json", path], capture_output=True, text=True, timeout=timeout)
        if not os.path.exists(path):
            raise RuntimeError(f"trireme {args[0]} exited with status {proc.returncode} and wrote no report:\n"
                               f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        with open(path) as f:
            report = json.load(f)
    return report, proc.returncode


def load_ops_library(path):
    """Loads a library of user ops (docs/custom-ops.md: a shared library exporting trireme_register_ops) into
    this process, so ``ctx.run("swiglu", x, g)`` runs them; returns how many ops it defined. conformance() and
    bench() run the `trireme` command, which loads it again through their ops_lib argument."""
    defined = ctypes.c_int()
    _check(_lib.lib().trr_ops_library_load(os.fsencode(path), ctypes.byref(defined)))
    return defined.value


def _ops_lib_args(ops_lib):
    libs = [ops_lib] if isinstance(ops_lib, (str, os.PathLike)) else list(ops_lib or [])
    return [a for lib in libs for a in ("--ops-lib", os.fspath(lib))]


def _device_list(given):
    """Device specs: one, a list, "all" (every device of every available backend) or None (TRIREME_DEVICE, else
    auto)."""
    if given is None:
        return [None]
    if isinstance(given, str):
        given = [d.strip() for d in given.split(",") if d.strip()]
    out = []
    for d in given:
        if d == "all":
            out += [x["spec"] for x in devices()]
        else:
            out.append(d)
    return out


def _is_device_spec(text):
    return isinstance(text, str) and (text in ("all", "auto", "gpus") or text.split(":")[0] in
                                      ("cpu", "cuda", "opencl", "vulkan"))


def _frame_or(results, as_frame):
    return results.to_frame() if as_frame else results


def conformance(op=None, devices=None, *, quick=True, seed=None, as_frame=False, device=None, ops=None,
                ops_lib=None, timeout=3600):
    """Checks ops against their float64 reference on each device, in this process (the library's
    trr_tool_conformance: the engine of `trireme conformance`), and returns a Results list of ConformanceRow (one
    per device, op and dtype signature; ``row.ok``), or a pandas DataFrame with as_frame=True.

    op: an Op of define_op, an op name, or a list of them (with ops=, more); None checks every op. devices: a
    spec, a list of specs, "all", or None for TRIREME_DEVICE / auto. quick: the quick case subset (a reference
    written in Python is called once per point, so the full list is slow). seed: the inputs' seed (default: 1).

    The command form ``conformance("cpu", ops=[...], ops_lib=path)`` (a device spec first, or ``device=``, or
    ``ops_lib=``: a library of C ops the command loads) runs the `trireme` command instead and returns its JSON
    report with "exit_status" (0: all passed or unsupported, 1: a case failed)."""
    if ops_lib is not None or device is not None or (_is_device_spec(op) and devices is None):
        return _conformance_cli(device or (op if _is_device_spec(op) else "cpu"), quick, ops, seed, timeout,
                                ops_lib)
    names = _custom._names(op) + _custom._names(ops)
    reports, rows = [], []
    for spec in _device_list(devices):
        doc = _custom.tool_json("conformance", spec, names, seed=1 if seed is None else seed, quick=quick)
        _custom.raise_recorded(names)
        for rep in doc["reports"]:
            reports.append(rep)
            rows += _custom.conformance_rows(rep)
    return _frame_or(_custom.Results(rows, reports), as_frame)


def _conformance_cli(device, quick, ops, seed, timeout, ops_lib):
    args = ["conformance", *_ops_lib_args(ops_lib), "--device", device]
    if quick:
        args.append("--quick")
    if ops:
        args += ["--ops", ",".join(ops) if not isinstance(ops, str) else ops]
    if seed is not None:
        args += ["--seed", str(seed)]
    report, code = _cli_json(args, timeout)
    if isinstance(report, dict):
        report.setdefault("exit_status", code)
    return report


def bench(op=None, devices=None, sizes="quick", reps=None, budget=None, vendor=True, *, seed=None,
          as_frame=False, device=None, ops_lib=None, timeout=3600):
    """Times ops (or named benchmarks: add_f32, swiglu_f32, ...) on each device, in this process (the library's
    trr_tool_bench: the driver of `trireme bench`, every case checked against the reference before it is
    timed), and returns a Results list of BenchRow (figure in row.unit, its spread, the ceiling), or a DataFrame
    with as_frame=True. op: an Op, a name or a list; None runs every benchmark. devices: as conformance()'s.
    sizes: "quick", "full", or a list of sizes ([4096, 65536] or "2^16,2^20"). reps: timed repetitions (None:
    automatic); budget: seconds a case may take per repetition before it is skipped.

    The command form ``bench(["add_f32"], device="cpu", ops_lib=path)`` (``device=`` or ``ops_lib=`` given)
    runs the `trireme` command and returns its JSON report."""
    if ops_lib is not None or device is not None:
        return _bench_cli(op, device, sizes, reps, budget, vendor, timeout, ops_lib)
    names = _custom._names(op)
    size_text = sizes if isinstance(sizes, str) or sizes is None else ",".join(str(x) for x in sizes)
    reports, rows = [], []
    for spec in _device_list(devices):
        doc = _custom.tool_json("bench", spec, names, seed=0x7B1D5EED if seed is None else seed, sizes=size_text,
                                reps=reps, budget=budget, no_vendor=not vendor)
        _custom.raise_recorded(names)
        for rep in doc["reports"]:
            reports.append(rep)
            rows += _custom.bench_rows(rep)
    return _frame_or(_custom.Results(rows, reports), as_frame)


def tune(op, devices=None, shapes=None, reps=None, *, write=False, seed=None, as_frame=False):
    """Tunes ops' tile parameters on each device, in this process (the library's trr_tool_tune: the tuner of
    `trireme tune`): every candidate config checked against the reference, then timed, for each dtype signature
    and shape. Returns a Results list of TuneRow (best config and time against the default's), or a DataFrame.
    op: an Op, a name or a list (element-wise, row and norm ops; matmul is tuned by `trireme tune`). shapes:
    ["65536", "256x1000"] or "RxC,N" text; None: each op's quick defaults. write: merge each winner into the
    device's tuning database, so later calls (in any process that defines the op) run with it."""
    names = _custom._names(op)
    shape_text = shapes if isinstance(shapes, str) or shapes is None else ",".join(str(x) for x in shapes)
    docs, rows = [], []
    for spec in _device_list(devices):
        doc = _custom.tool_json("tune", spec, names, seed=1 if seed is None else seed, sizes=shape_text, reps=reps,
                                write_db=write)
        _custom.raise_recorded(names)
        docs.append(doc)
        rows += _custom.tune_rows(doc)
    return _frame_or(_custom.Results(rows, docs), as_frame)


def _bench_cli(benches, device, sizes, reps, budget, vendor, timeout, ops_lib):
    if isinstance(benches, (str, _custom.Op)):
        benches = [benches]
    args = ["bench", *_ops_lib_args(ops_lib), *[str(b) for b in (benches or [])]]
    if device:
        args += ["--device", device]
    if sizes:
        args += ["--sizes", sizes if isinstance(sizes, str) else ",".join(str(s) for s in sizes)]
    if reps:
        args += ["--reps", str(reps)]
    if budget:
        args += ["--budget", str(budget)]
    if not vendor:
        args.append("--no-vendor")
    args.append("--quiet")
    report, code = _cli_json(args, timeout)
    if code not in (0, 1):
        raise RuntimeError(f"trireme bench exited with status {code}")
    return report
