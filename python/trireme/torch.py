"""trireme's ops as PyTorch custom ops: ``import trireme.torch`` registers them with torch.library as
``torch.ops.trireme.<op>``, for CUDA and CPU tensors, each with a fake (meta) implementation, so that they run
inside ``torch.compile``d functions and pass ``torch.library.opcheck``.

    import torch, trireme.torch
    y = torch.ops.trireme.softmax(x)                     # x a CUDA (or CPU) tensor; y a new torch tensor
    c = torch.ops.trireme.matmul(a, b, "gelu", 0.01, False, False)

Each op returns a new tensor that torch allocates (functional, as torch.compile wants); trireme writes into it
through a view of torch's memory (trr_buffer_wrap), no copy. The op runs on trireme's stream of the tensors'
device, ordered with torch's current stream: trireme's stream waits for torch's work so far, and torch's stream
for trireme's op (an event each way, trr_stream_wait_native / trr_native_wait_stream); no synchronize.

Needs torch 2.4 or later (torch.library.custom_op, register_fake). The contexts are one per device, made on first
use (``context(device)`` gives the one a device uses).
"""

import threading

import torch as _torch

from . import _lib
from .core import Context, Tensor

if not hasattr(_torch.library, "custom_op") or not hasattr(_torch.library, "register_fake"):
    raise ImportError(f"trireme.torch needs torch 2.4 or later (torch.library.custom_op); this is {_torch.__version__}")

_DTYPES = {_torch.float32: _lib.F32, _torch.float16: _lib.F16, _torch.bfloat16: _lib.BF16, _torch.uint8: _lib.U8}
for _name, _code in (("float8_e4m3fn", _lib.F8E4M3), ("float8_e5m2", _lib.F8E5M2)):
    if hasattr(_torch, _name):  # OCP e4m3 and e5m2, as trireme's 8-bit floats
        _DTYPES[getattr(_torch, _name)] = _code
_contexts = {}
_lock = threading.Lock()


def context(device):
    """The trireme Context the ops use for a torch device ("cuda:0", torch.device("cpu"))."""
    device = _torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = _torch.device("cuda", _torch.cuda.current_device())
    key = (device.type, device.index or 0)
    ctx = _contexts.get(key)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(key)
            if ctx is None:
                if device.type not in ("cuda", "cpu"):
                    raise RuntimeError(f"trireme.torch runs on CUDA and CPU tensors, not {device.type}")
                ctx = _contexts[key] = Context(f"cuda:{key[1]}" if device.type == "cuda" else "cpu")
    return ctx


def _view(ctx, t):
    """A trireme Tensor over torch tensor t's memory (its strides), no copy."""
    dt = _DTYPES.get(t.dtype)
    if dt is None:
        raise TypeError(f"trireme has no dtype for {t.dtype}")
    shape, strides = tuple(t.shape), tuple(t.stride())
    if t.numel() == 0:
        return ctx.empty(shape, dt)
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    storage, off = ctx._wrap(t.data_ptr(), extent * t.element_size(), keepalive=t)
    return Tensor(storage, shape, dt, strides, offset=off)


def _run(op, inputs, out, **params):
    """trireme's op on torch tensors, writing into `out`, ordered with torch's current stream on CUDA."""
    ctx = context(out.device)
    ins = [_view(ctx, t) for t in inputs]
    z = _view(ctx, out)
    stream = _torch.cuda.current_stream(out.device).cuda_stream if out.device.type == "cuda" else None
    if stream is not None:
        ctx.wait_stream(stream)
    ctx.run(op, *ins, out=z, **params)
    if stream is not None:
        ctx.stream_wait(stream)


def _like(x):
    return _torch.empty(x.shape, dtype=x.dtype, device=x.device)


# ---- element-wise and row ops: the output is the input's shape and dtype ----

@_torch.library.custom_op("trireme::copy", mutates_args=())
def copy(x: _torch.Tensor) -> _torch.Tensor:
    """z = x"""
    out = _like(x)
    _run("copy", [x], out)
    return out


@_torch.library.custom_op("trireme::add", mutates_args=())
def add(x: _torch.Tensor, y: _torch.Tensor) -> _torch.Tensor:
    """z = x + y"""
    out = _like(x)
    _run("add", [x, y], out)
    return out


@_torch.library.custom_op("trireme::gelu", mutates_args=())
def gelu(x: _torch.Tensor) -> _torch.Tensor:
    """the tanh approximation of GELU"""
    out = _like(x)
    _run("gelu", [x], out)
    return out


@_torch.library.custom_op("trireme::silu", mutates_args=())
def silu(x: _torch.Tensor) -> _torch.Tensor:
    """x / (1 + e^-x)"""
    out = _like(x)
    _run("silu", [x], out)
    return out


@_torch.library.custom_op("trireme::softmax", mutates_args=())
def softmax(x: _torch.Tensor) -> _torch.Tensor:
    """row-wise softmax of x [M, N]"""
    out = _like(x)
    _run("softmax", [x], out)
    return out


@_torch.library.custom_op("trireme::rms_norm", mutates_args=())
def rms_norm(x: _torch.Tensor, w: _torch.Tensor, eps: float = 1e-6) -> _torch.Tensor:
    """x / sqrt(mean(x²) + eps) · w over each row of x [M, N]"""
    out = _like(x)
    _run("rms_norm", [x, w], out, eps=eps)
    return out


@_torch.library.custom_op("trireme::layer_norm", mutates_args=())
def layer_norm(x: _torch.Tensor, w: _torch.Tensor, b: _torch.Tensor, eps: float = 1e-5) -> _torch.Tensor:
    """(x − mean) / sqrt(var + eps) · w + b over each row of x [M, N]"""
    out = _like(x)
    _run("layer_norm", [x, w, b], out, eps=eps)
    return out


for _op in (copy, gelu, silu, softmax):
    _op.register_fake(_like)
add.register_fake(lambda x, y: _like(x))
rms_norm.register_fake(lambda x, w, eps=1e-6: _like(x))
layer_norm.register_fake(lambda x, w, b, eps=1e-5: _like(x))


# ---- ops whose output differs from the input ----

def _row_sum_out(x):
    return _torch.empty(x.shape[:1], dtype=_torch.float32, device=x.device)


@_torch.library.custom_op("trireme::row_sum", mutates_args=())
def row_sum(x: _torch.Tensor) -> _torch.Tensor:
    """the sum of each row of x [M, N], accumulated and returned in float32"""
    out = _row_sum_out(x)
    _run("row_sum", [x], out)
    return out


row_sum.register_fake(_row_sum_out)


def _matmul_out(a, b, out_float32):
    batch = a.shape[:-2] if a.dim() == 3 else b.shape[:-2]
    dtype = _torch.float32 if out_float32 else a.dtype
    return _torch.empty((*batch, a.shape[-2], b.shape[-1]), dtype=dtype, device=a.device)


@_torch.library.custom_op("trireme::matmul", mutates_args=())
def matmul(a: _torch.Tensor, b: _torch.Tensor, epilogue: str = "none", alpha: float = 0.01,
           allow_tf32: bool = False, out_float32: bool = False) -> _torch.Tensor:
    """C = act(A·B): A [M,K] or [batch,M,K], B [K,N] or [batch,K,N]; epilogue none, relu, leaky_relu (slope
    alpha), gelu; out_float32 gives an f16 or bf16 product in float32."""
    out = _matmul_out(a, b, out_float32)
    _run("matmul", [a, b], out, epilogue=epilogue, alpha=alpha, allow_tf32=allow_tf32)
    return out


matmul.register_fake(lambda a, b, epilogue="none", alpha=0.01, allow_tf32=False, out_float32=False:
                     _matmul_out(a, b, out_float32))


def _grey_out(img, out_float32):
    return _torch.empty(img.shape[1:], dtype=_torch.float32 if out_float32 else _torch.uint8, device=img.device)


@_torch.library.custom_op("trireme::rgb_to_grey", mutates_args=())
def rgb_to_grey(img: _torch.Tensor, out_float32: bool = False) -> _torch.Tensor:
    """img uint8 [3, H, W] (planar) -> grey [H, W], uint8 (rounded, clamped) or float32"""
    out = _grey_out(img, out_float32)
    _run("rgb_to_grey", [img], out)
    return out


rgb_to_grey.register_fake(_grey_out)

OPS = {"copy": copy, "add": add, "gelu": gelu, "silu": silu, "softmax": softmax, "row_sum": row_sum,
       "rms_norm": rms_norm, "layer_norm": layer_norm, "matmul": matmul, "rgb_to_grey": rgb_to_grey}
