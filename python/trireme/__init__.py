"""Trireme from Python: a thin ctypes layer over libtrireme (no compiled extension).

    import numpy as np, trireme
    ctx = trireme.Context("auto")            # or "cpu", "opencl:0", "vulkan:0", "cuda:0"
    y = ctx.gelu(np.random.rand(1000).astype(np.float32))
    c = ctx.matmul(a, b, epilogue="relu")     # NumPy in, NumPy out
    t = trireme.from_dlpack(torch_cuda_tensor, ctx)   # shares the memory (trr_buffer_wrap)
    y = torch.from_dlpack(ctx.softmax(t))             # and back, no copy, no synchronize
    ms = trireme.do_bench(lambda: ctx.softmax(t, out=s), ctx=ctx)   # device time, as triton's do_bench
    import trireme.torch                              # torch.ops.trireme.<op>: torch custom ops
    op = trireme.define_op("swiglu", "x[M,N], g[M,N] -> y[M,N]", ...)   # your kernels (docs/custom-ops.md)
    trireme.conformance(op, devices="all"); trireme.bench(op); trireme.tune(op)   # in this process

The library is found through TRIREME_LIBRARY, inside the installed wheel, a build tree beside the source,
pkg-config, or the system loader (see trireme._lib). Op semantics and error bounds: docs/ops.md in the repository.
"""

from ._lib import TriremeWarning
from ._lib import path as library_path
from .core import (BFLOAT16, F8E4M3, F8E5M2, ArgumentError, Context, DtypeError, ExecutionError, Tensor,
                   TriremeError, UnsupportedError, backends, bench, conformance, devices, from_bfloat16, from_float8,
                   load_ops_library, to_bfloat16, to_float8, tune)
from .custom import Op, define_op, glsl_to_spirv
from .dlpack import from_dlpack
from .testing import do_bench

__version__ = "0.1.0"
__all__ = ["ArgumentError", "BFLOAT16", "Context", "DtypeError", "ExecutionError", "F8E4M3", "F8E5M2", "Tensor",
           "TriremeWarning",
           "TriremeError", "UnsupportedError", "backends", "bench", "conformance", "define_op", "devices", "do_bench",
           "from_bfloat16", "from_dlpack", "from_float8", "glsl_to_spirv", "library_path", "load_ops_library", "Op",
           "to_bfloat16", "to_float8", "tune"]
