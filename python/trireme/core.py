"""Contexts, device tensors and ops over libtrireme.

Ops take NumPy arrays or trireme Tensors. With NumPy inputs (and no Tensor ``out``) the result comes back as a
NumPy array; when any operand is a Tensor the result is a Tensor on the context's device, so a chain of ops
stays on the device.

Strides, one rule for both kinds of input: an op never fails because of an input's strides. NumPy inputs that
are not C-contiguous are copied to contiguous memory first (a 2-D Fortran-ordered matmul operand is instead
passed as a transposed view of its storage, without a copy). Tensor inputs are passed as the views they are;
when the op cannot take an input's strides (TRR_ERR_STRIDE: a transposed view into an element-wise op, say),
every input that is not packed is copied to a packed tensor (through the host) and the op runs on the copies.
An ``out`` Tensor is never copied: strides an op cannot write raise TRR_ERR_STRIDE.

Every failure of the library raises TriremeError with the status name (``TRR_ERR_SHAPE``) and the library's
detail text (trr_last_error). The class says the status band: ArgumentError (also a ValueError) for the
caller's arguments (1-19), DtypeError (also a TypeError) among them for TRR_ERR_DTYPE, UnsupportedError (also
a RuntimeError) for what this device or build cannot do (20-29), ExecutionError (also a RuntimeError) for the
device, driver or runtime failing (30 and up).
"""

import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import weakref
import ctypes

import numpy as np

from . import _lib

_NP_TO_TRR = {np.dtype(np.float32): _lib.F32, np.dtype(np.float16): _lib.F16, np.dtype(np.uint8): _lib.U8}
_TRR_TO_NP = {v: k for k, v in _NP_TO_TRR.items()}
_ITEMSIZE = {_lib.F32: 4, _lib.F16: 2, _lib.BF16: 2, _lib.U8: 1}

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


def _trr_dtype(dtype):
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        return _lib.BF16
    dt = np.dtype(dtype)
    if dt not in _NP_TO_TRR:
        hint = ""
        if dt.kind in "fiub":  # a Python list or scalar becomes float64 or int64 in NumPy
            hint = ("; convert it first, e.g. x.astype(np.float32) (a Python list or float: "
                    "np.asarray(x, dtype=np.float32))")
        raise _error(STATUS_DTYPE, f"{dt} has no trireme dtype (float32, float16, uint8 and \"bfloat16\" do){hint}")
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

    def __init__(self, ctx, handle, nbytes, native=None, keepalive=None, host=None):
        self.ctx, self.handle, self.nbytes = ctx, handle, nbytes
        self.native = native  # the address of the memory where known (host or device), else None
        self.keepalive = keepalive
        self.host = host  # a NumPy array over the same memory (CPU backend)
        ctx._storages.add(self)

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


class Tensor:
    """A view into a trireme buffer: shape, dtype, element strides and a byte offset, on one Context.

    numpy() copies it to the host. ``t.T`` is the transposed view of a 2-D tensor (how a matmul operand stored
    as [K,M] or [N,K] is passed). __dlpack__ / __dlpack_device__ export it where its memory's address is known:
    every tensor of the CPU backend, and tensors imported with from_dlpack on any backend."""

    def __init__(self, storage, shape, dtype, strides=None, offset=0):
        self._storage = storage
        self.ctx = storage.ctx
        self.shape = tuple(int(s) for s in shape)
        _check_rank(self.shape)
        self.trr_dtype = dtype
        if strides is None:
            strides, acc = [], 1
            for s in reversed(self.shape):
                strides.insert(0, acc)
                acc *= max(s, 1)
        self.strides = tuple(int(s) for s in strides)  # in elements
        self.offset = int(offset)  # in bytes

    @property
    def dtype(self):
        """The NumPy dtype (bf16 has none: then the string "bfloat16")."""
        return _TRR_TO_NP.get(self.trr_dtype, "bfloat16")

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def T(self):
        if self.ndim != 2:
            raise _error(STATUS_SHAPE, f"transpose needs a 2-D tensor, not {self.ndim}-D")
        return Tensor(self._storage, self.shape[::-1], self.trr_dtype, self.strides[::-1], self.offset)

    def _struct(self):
        t = _lib.Tensor()
        t.buffer = self._storage.handle
        t.offset = self.offset
        t.dtype = self.trr_dtype
        if not self.shape:  # 0-D: the library's views have a dimension; one element is the same memory
            t.ndim, t.shape[0], t.strides[0] = 1, 1, 1
            return t
        t.ndim = self.ndim
        for i, (s, st) in enumerate(zip(self.shape, self.strides)):
            t.shape[i], t.strides[i] = s, st
        return t

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
        """A host copy as a NumPy array (C-contiguous). A bfloat16 tensor, which NumPy cannot hold, comes back
        as float32 (exact: every bfloat16 is a float32); its raw 16-bit patterns with bits()."""
        if self.trr_dtype == _lib.BF16:
            return from_bfloat16(self.bits())
        return self._host_copy(_TRR_TO_NP[self.trr_dtype])

    def bits(self):
        """A host copy of a bfloat16 tensor as its 16-bit patterns (uint16)."""
        if self.trr_dtype != _lib.BF16:
            raise _error(STATUS_DTYPE, f"bits() is for bfloat16 tensors, not {self.dtype}")
        return self._host_copy(np.dtype(np.uint16))

    def _host_copy(self, dt):
        n = self._extent()
        flat = np.empty(max(n, 1), dtype=dt)
        if n:
            _check(_lib.lib().trr_buffer_read(self.ctx._handle, self._storage.handle, self.offset,
                                              flat.ctypes.data, n * dt.itemsize), self.ctx._handle)
        view = np.lib.stride_tricks.as_strided(flat, self.shape, tuple(s * dt.itemsize for s in self.strides))
        return np.array(view, order="C")  # a copy that keeps a 0-D shape (ascontiguousarray makes it 1-D)

    def __repr__(self):
        return f"trireme.Tensor(shape={self.shape}, dtype={self.dtype}, device={self.ctx.device['spec']})"

    # DLPack export lives in dlpack.py
    def __dlpack__(self, stream=None, **kwargs):
        from . import dlpack
        return dlpack.export(self, stream)

    def __dlpack_device__(self):
        from . import dlpack
        return dlpack.device_of(self)


# Output shape and dtype per op, for the ops this module knows; run() needs ``out`` for any other.
def _out_elementwise(xs, p):
    return xs[0].shape, xs[0].trr_dtype


def _out_grey(xs, p):
    return xs[0].shape[1:], _trr_dtype(p.get("out_dtype", np.uint8))


def _out_row_sum(xs, p):
    return xs[0].shape[:1], _lib.F32


def _out_matmul(xs, p):
    a, b = xs
    dt = p.get("out_dtype")
    return a.shape[:-1] + b.shape[-1:], (_trr_dtype(dt) if dt is not None else a.trr_dtype)


def _out_row_norm(xs, p):
    return xs[0].shape, xs[0].trr_dtype  # y is x's shape and dtype; w (and b) are [N]


def _out_attention(xs, p):
    return xs[0].shape, xs[0].trr_dtype  # o is q's shape and dtype (lse, the optional second output: attention())


_OUT_RULES = {"copy": _out_elementwise, "add": _out_elementwise, "gelu": _out_elementwise,
              "silu": _out_elementwise, "softmax": _out_elementwise, "rgb_to_grey": _out_grey,
              "row_sum": _out_row_sum, "matmul": _out_matmul, "rms_norm": _out_row_norm,
              "layer_norm": _out_row_norm, "attention": _out_attention}


_OPS = {}


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
    """(enum value, number of inputs, operand text) of an op, from the library's table (cached: a call's
    Python overhead counts when a fast device waits for the next launch)."""
    if name not in _OPS:
        lib = _lib.lib()
        code = ctypes.c_int()
        _check(lib.trr_op_from_name(name.encode(), ctypes.byref(code)))
        info = _lib.OpInfo()
        _check(lib.trr_op_get_info(code.value, ctypes.byref(info)))
        _OPS[name] = (code.value, info.n_inputs, _decode(info.operands))
    return _OPS[name]


class Context:
    """A device opened for work: Context("cpu"), Context("opencl:0"), Context("cuda:1") or Context("auto")
    (the best GPU, else the CPU); None, the default, reads TRIREME_DEVICE and falls back to "auto", as the C
    API and the CLI do. Threads may share a context (libtrireme runs its calls one at a time). ``close()`` (or
    a ``with`` block) frees every buffer made on it; a context and tensors that are simply dropped are freed in
    whatever order the garbage collector takes them."""

    def __init__(self, device=None):
        self._lib = _lib.lib()
        self._storages = weakref.WeakSet()
        handle = ctypes.c_void_p()
        _check(self._lib.trr_context_create(device.encode() if device is not None else None, ctypes.byref(handle)))
        self._handle = handle
        info = _lib.DeviceInfo()
        _check(self._lib.trr_context_device(self._handle, ctypes.byref(info)), self._handle)
        self.device = _device_dict(info)
        text = ctypes.c_char_p()
        _check(self._lib.trr_context_selection(self._handle, ctypes.byref(text)), self._handle)
        self.selection = _decode(text.value)

    @property
    def backend(self):
        return self.device["backend"]

    def close(self):
        if getattr(self, "_handle", None) is None:
            return
        for s in list(self._storages):
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
        buf = ctypes.c_void_p()
        _check(self._lib.trr_buffer_wrap(self._live(), base, nbytes + (address - base), ctypes.byref(buf)),
               self._handle)
        return _Storage(self, buf, nbytes + (address - base), native=base, keepalive=keepalive, host=host), address - base

    def empty(self, shape, dtype=np.float32):
        """An uninitialised packed tensor (dtype: a NumPy dtype or "bfloat16"). On the CPU backend its memory is
        a NumPy array's (so it can be exported with DLPack); elsewhere a device buffer."""
        shape = tuple(int(s) for s in np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        _check_rank(shape)
        dt = dtype if isinstance(dtype, int) else _trr_dtype(dtype)
        nbytes = max(int(np.prod(shape)) * _ITEMSIZE[dt], 4)  # empty tensors still need a buffer to point into
        if self.backend == "cpu":
            host = np.empty(nbytes, dtype=np.uint8)
            storage, off = self._wrap(host.ctypes.data, nbytes, host=host)
            return Tensor(storage, shape, dt, offset=off)
        buf = ctypes.c_void_p()
        _check(self._lib.trr_buffer_create(self._live(), nbytes, ctypes.byref(buf)), self._handle)
        return Tensor(_Storage(self, buf, nbytes), shape, dt)

    def tensor(self, array, dtype=None):
        """A device copy of a NumPy array (or of anything np.asarray takes). dtype="bfloat16" rounds the values
        to bfloat16 on the way (to_bfloat16); other dtypes convert as NumPy's astype does."""
        if dtype is not None and _trr_dtype(dtype) == _lib.BF16:
            bits = to_bfloat16(array)
            t = self.empty(bits.shape, _lib.BF16)
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

    def _operand(self, x, allow_transposed=False):
        """A Tensor for an op input: Tensors pass through; arrays are uploaded, wrapped without a copy on the
        CPU backend (the op finishes before this call returns)."""
        if isinstance(x, Tensor):
            if x.ctx is not self:
                raise _error(9, "the tensor belongs to another context")
            return x
        a = np.asarray(x)
        _check_rank(a.shape)
        if allow_transposed and a.ndim == 2 and not a.flags.c_contiguous and a.flags.f_contiguous:
            return self._operand(a.T).T
        a = np.asarray(a, order="C")  # a copy when not C-contiguous; a 0-D array stays 0-D
        dt = _trr_dtype(a.dtype)
        if self.backend == "cpu" and a.nbytes:
            storage, off = self._wrap(a.ctypes.data, a.nbytes, keepalive=a)
            return Tensor(storage, a.shape, dt, offset=off)
        return self.tensor(a)

    def _packed_copy(self, t):
        """A packed copy of Tensor t on this context, through the host (any strides)."""
        bf16 = t.trr_dtype == _lib.BF16
        host = t._host_copy(np.dtype(np.uint16) if bf16 else _TRR_TO_NP[t.trr_dtype])
        out = self.empty(t.shape, t.trr_dtype)
        if host.size:
            _check(self._lib.trr_buffer_write(self._live(), out._storage.handle, out.offset, host.ctypes.data,
                                              host.nbytes), self._handle)
        return out

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

    # ---- ops ----

    def run(self, op, *arrays, out=None, out_dtype=None, _return_numpy=None, **params):
        """Any op of the library's table by name, through trr_op_run: the op's inputs, then optionally ``out``.
        ``out`` is required for an op whose output shape this module does not know. Keyword arguments are the
        op's named parameters as its definition declares them (matmul: epilogue, alpha, allow_tf32), checked by
        the library."""
        lib = self._lib
        code, n_inputs, operands_text = _op_info(op)
        if len(arrays) != n_inputs:
            raise _error(1, f"{op} takes {n_inputs} input(s) ({operands_text}), not {len(arrays)}")
        op_params = _op_params(lib, code, params)
        return_numpy = _return_numpy
        if return_numpy is None:
            return_numpy = not any(isinstance(a, Tensor) for a in arrays) and not isinstance(out, Tensor)
        ins = [self._operand(a, allow_transposed=(op == "matmul")) for a in arrays]
        if isinstance(out, Tensor):
            z = out
        elif out is not None:
            z = self.empty(np.shape(out), np.asarray(out).dtype)
        elif op in _OUT_RULES:
            shape, dt = _OUT_RULES[op](ins, {"out_dtype": out_dtype} if out_dtype is not None else {})
            z = self.empty(shape, dt)
        else:
            raise _error(1, f"pass out= for {op}: its output shape is not known to the Python package")
        def launch(inputs):
            operands = [t._struct() for t in inputs] + [z._struct()]
            ptrs = (ctypes.POINTER(_lib.Tensor) * len(operands))(*[ctypes.pointer(t) for t in operands])
            return lib.trr_op_run(self._live(), code, ptrs, ctypes.byref(op_params))

        status = launch(ins)
        if status == STATUS_STRIDE and not all(t._packed() for t in ins):
            # the module's stride rule: inputs the op cannot take as they are go in as packed copies (a rejected
            # call wrote nothing, so running it again is safe)
            status = launch([t if t._packed() else self._packed_copy(t) for t in ins])
        _check(status, self._handle)
        if out is not None and not isinstance(out, Tensor):
            out[...] = z.numpy()
            return out
        if not return_numpy:
            return z
        host = z._storage.host
        if host is not None and z.trr_dtype in _TRR_TO_NP:  # CPU backend: the result already lies in NumPy memory
            dt = _TRR_TO_NP[z.trr_dtype]
            return host[z.offset:z.offset + z.size * dt.itemsize].view(dt).reshape(z.shape)
        return z.numpy()

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
               allow_tf32=False, out_dtype=None):
        """C = act(op(A)·op(B)): A [M,K], B [K,N]; transpose_a / transpose_b say A is stored as [K,M] / B as
        [N,K]. epilogue: none, relu, leaky_relu (slope alpha), gelu. float16 inputs give float16 and bfloat16
        inputs bfloat16 unless out_dtype=np.float32. allow_tf32 lets an f32 matmul use TF32 tensor cores."""
        numpy_in = not isinstance(a, Tensor) and not isinstance(b, Tensor) and not isinstance(out, Tensor)
        if transpose_a:
            a = self._operand(a).T
        if transpose_b:
            b = self._operand(b).T
        return self.run("matmul", a, b, out=out, epilogue=epilogue, alpha=alpha, allow_tf32=allow_tf32,
                        out_dtype=out_dtype, _return_numpy=numpy_in)

    def attention(self, q, k, v, causal=False, scale=None, lse=False, out=None):
        """Fused attention (docs/ops.md, attention): o = softmax(scale·q·kᵀ + mask)·v per batch and query head,
        float32 accumulation, one rounding on store. q [B,Hq,Sq,D], k and v [B,Hkv,Skv,D] of one dtype (float32,
        float16 or bfloat16), Hq a multiple of Hkv (query head h reads kv head h // (Hq // Hkv)), D up to 256;
        any strides on B, H and S (a [B,S,H,D] tensor passes as its .transpose(1, 2) view, e.g. from_dlpack),
        D contiguous. scale: None for 1/sqrt(D). causal: query i sees keys j <= i + Skv - Sq (bottom-right
        aligned); a row that sees no key gives 0 (and lse -inf). Returns o, or (o, lse) with lse=True: the
        natural log of each row's sum of exp, float32 [B,Hq,Sq]. out: o's tensor (or array) to write."""
        lib = self._lib
        code, _, _ = _op_info("attention")
        if scale is not None and float(scale) == 0.0:
            raise _error(1, "attention: scale 0 is not available (None gives 1/sqrt(D))")
        params = {"causal": bool(causal)}
        if scale is not None:
            params["scale"] = float(scale)
        op_params = _op_params(lib, code, params)
        numpy_in = not any(isinstance(a, Tensor) for a in (q, k, v)) and not isinstance(out, Tensor)
        ins = [self._operand(a) for a in (q, k, v)]
        if isinstance(out, Tensor):
            o = out
        elif out is not None:
            o = self.empty(np.shape(out), np.asarray(out).dtype)
        else:
            o = self.empty(ins[0].shape, ins[0].trr_dtype)
        lse_t = self.empty(ins[0].shape[:3], np.float32) if lse and len(ins[0].shape) == 4 else None

        def launch(inputs):
            structs = [t._struct() for t in inputs] + [o._struct()] + ([lse_t._struct()] if lse_t is not None else [])
            ptrs = (ctypes.POINTER(_lib.Tensor) * 5)(*[ctypes.pointer(t) for t in structs])  # lse NULL when absent
            return lib.trr_op_run(self._live(), code, ptrs, ctypes.byref(op_params))

        status = launch(ins)
        if status == STATUS_STRIDE and not all(t._packed() for t in ins):
            status = launch([t if t._packed() else self._packed_copy(t) for t in ins])  # D not contiguous
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
    """The `trireme` command: TRIREME_CLI, else beside the loaded library (build tree: cli/trireme; installed
    prefix: ../bin/trireme), else on PATH."""
    env = os.environ.get("TRIREME_CLI")
    if env:
        return env
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


def conformance(device="cpu", quick=True, ops=None, seed=None, timeout=3600):
    """Runs ``trireme conformance --json`` on `device` (a spec or "all") and returns the parsed report.

    The conformance engine (float64 reference, case list, checks) is the CLI's harness library, not part of
    libtrireme, so this runs the `trireme` command (found as _cli() says). ``report["passed"]`` style fields
    are the CLI's own; the returned dict also carries "exit_status" (0: all passed or unsupported, 1: a case
    failed)."""
    args = ["conformance", "--device", device]
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


def bench(benches=None, device=None, sizes="quick", reps=None, budget=None, vendor=True, timeout=3600):
    """Runs ``trireme bench --json`` and returns the parsed report. Like conformance(), this invokes the
    `trireme` command: the benchmark driver is not in libtrireme. benches: names (add_f32, matmul_f16, ...)
    or op names; device: a spec, "all", or None for TRIREME_DEVICE / auto."""
    args = ["bench", *(benches or [])]
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
