"""Finding and loading libtrireme, and the C declarations the package uses (ctypes mirrors of trireme.h).

The library is looked for, in order:
  1. the path in the environment variable TRIREME_LIBRARY (when it is set, nowhere else);
  2. inside the package: libtrireme.so beside this file, where the wheel puts it (pip install .);
  3. a build tree beside the package's source: <repository>/build/libtrireme.so, when the package is loaded
     from a checkout (python/trireme/ two folders below a root that holds include/trireme.h) where ``make``
     has run;
  4. where pkg-config says the library was installed: ``pkg-config --variable=libdir trireme``, which
     honours PKG_CONFIG_PATH (a prefix given to ``cmake --install --prefix``, once its lib/pkgconfig is on
     PKG_CONFIG_PATH);
  5. the system loader: ctypes.util.find_library("trireme") (ldconfig's cache, LD_LIBRARY_PATH) and then the
     names libtrireme.so.0 / libtrireme.so, which dlopen resolves through the loader's own search (an
     installed prefix listed in ld.so.conf or LD_LIBRARY_PATH).
When none loads, the error names every place that was tried and why it failed.
"""

import atexit
import ctypes
import ctypes.util
import logging
import os
import pathlib
import shutil
import subprocess
import warnings

TRR_MAX_DIMS = 4

# trr_dtype
F32, F16, BF16, U8, F8E4M3, F8E5M2 = 0, 1, 2, 3, 4, 5

# trr_epilogue
EPILOGUES = {"none": 0, "relu": 1, "leaky_relu": 2, "gelu": 3}

TRR_MATMUL_ALLOW_TF32 = 0x1


class Tensor(ctypes.Structure):
    """struct trr_tensor"""

    _fields_ = [
        ("buffer", ctypes.c_void_p),
        ("offset", ctypes.c_size_t),
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * TRR_MAX_DIMS),
        ("strides", ctypes.c_int64 * TRR_MAX_DIMS),
    ]


TRR_MAX_OP_PARAMS = 8


class ParamValue(ctypes.Structure):
    """struct trr_param_value"""

    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_double)]


class OpParams(ctypes.Structure):
    """struct trr_op_params"""

    _fields_ = [("count", ctypes.c_int), ("values", ParamValue * TRR_MAX_OP_PARAMS)]


class OpInfo(ctypes.Structure):
    """struct trr_op_info"""

    _fields_ = [("name", ctypes.c_char_p), ("n_inputs", ctypes.c_int), ("operands", ctypes.c_char_p),
                ("n_params", ctypes.c_int), ("n_outputs", ctypes.c_int)]


class Config(ctypes.Structure):
    """struct trr_config"""

    _fields_ = [(name, ctypes.c_int) for name in ("block_m", "block_n", "block_k", "group_m", "threads", "stages",
                                                   "vector_width", "split_k", "variant")]


class BackendInfo(ctypes.Structure):
    """struct trr_backend_info"""

    _fields_ = [
        ("name", ctypes.c_char * 16),
        ("available", ctypes.c_int),
        ("device_count", ctypes.c_int),
        ("reason", ctypes.c_char * 256),
    ]


class DeviceInfo(ctypes.Structure):
    """struct trr_device_info"""

    _fields_ = [
        ("backend", ctypes.c_char * 16),
        ("index", ctypes.c_int),
        ("spec", ctypes.c_char * 32),
        ("name", ctypes.c_char * 128),
        ("vendor", ctypes.c_char * 64),
        ("driver", ctypes.c_char * 64),
        ("is_gpu", ctypes.c_int),
        ("global_memory", ctypes.c_uint64),
        ("shared_memory_per_block", ctypes.c_uint64),
        ("max_threads_per_block", ctypes.c_int),
        ("subgroup_width", ctypes.c_int),
        ("compute_units", ctypes.c_int),
        ("native_f16", ctypes.c_int),
        ("matrix_units", ctypes.c_int),
        ("capabilities", ctypes.c_char * 160),
        ("uuid", ctypes.c_char * 37),
        ("pci_bus_id", ctypes.c_char * 16),
    ]


_p = ctypes.POINTER
_ctx = ctypes.c_void_p
_buf = ctypes.c_void_p
_st = ctypes.c_int

# name: (return type, argument types)
_PROTOTYPES = {
    "trr_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "trr_last_error": (ctypes.c_char_p, [_ctx]),
    "trr_backend_count": (_st, [_p(ctypes.c_int)]),
    "trr_backend_get_info": (_st, [ctypes.c_int, _p(BackendInfo)]),
    "trr_device_get_info": (_st, [ctypes.c_char_p, ctypes.c_int, _p(DeviceInfo)]),
    "trr_context_create": (_st, [ctypes.c_char_p, _p(_ctx)]),
    "trr_context_destroy": (_st, [_ctx]),
    "trr_context_device": (_st, [_ctx, _p(DeviceInfo)]),
    "trr_context_selection": (_st, [_ctx, _p(ctypes.c_char_p)]),
    "trr_buffer_create": (_st, [_ctx, ctypes.c_size_t, _p(_buf)]),
    "trr_buffer_wrap": (_st, [_ctx, ctypes.c_uint64, ctypes.c_size_t, _p(_buf)]),
    "trr_buffer_destroy": (_st, [_buf]),
    "trr_buffer_write": (_st, [_ctx, _buf, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_buffer_read": (_st, [_ctx, _buf, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_buffer_copy": (_st, [_ctx, _buf, ctypes.c_size_t, _buf, ctypes.c_size_t, ctypes.c_size_t]),
    "trr_buffer_fill": (_st, [_ctx, _buf, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint8]),
    "trr_buffer_native": (_st, [_buf, _p(ctypes.c_uint64)]),
    "trr_stream_wait_native": (_st, [_ctx, ctypes.c_uint64]),
    "trr_native_wait_stream": (_st, [_ctx, ctypes.c_uint64]),
    "trr_context_stream": (_st, [_ctx, _p(ctypes.c_uint64)]),
    "trr_tensor_transpose": (_st, [_p(Tensor), _p(Tensor)]),
    "trr_op_get_info": (_st, [ctypes.c_int, _p(OpInfo)]),
    "trr_op_output_shape": (_st, [ctypes.c_int, _p(_p(Tensor)), ctypes.c_int, _p(ctypes.c_int),
                                  _p(ctypes.c_int64), _p(ctypes.c_int)]),
    "trr_op_from_name": (_st, [ctypes.c_char_p, _p(ctypes.c_int)]),
    "trr_ops_library_load": (_st, [ctypes.c_char_p, _p(ctypes.c_int)]),
    "trr_op_define": (_st, [ctypes.c_void_p, _p(ctypes.c_int)]),  # struct trr_op_def * (custom.OpDef)
    # def, trr_op_row_reference_fn, trr_op_cpu_row_fn (custom.ROW_REFERENCE_FN, custom.CPU_ROW_FN), out
    "trr_op_define_row_op": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, _p(ctypes.c_int)]),
    "trr_tool_conformance": (_st, [ctypes.c_void_p, _p(ctypes.c_void_p)]),  # struct trr_tool_options *
    "trr_tool_bench": (_st, [ctypes.c_void_p, _p(ctypes.c_void_p)]),
    "trr_tool_tune": (_st, [ctypes.c_void_p, _p(ctypes.c_void_p)]),
    "trr_tool_free": (_st, [ctypes.c_void_p]),
    "trr_op_run": (_st, [_ctx, ctypes.c_int, _p(_p(Tensor)), _p(OpParams)]),
    "trr_log_set": (_st, [ctypes.c_void_p, ctypes.c_void_p]),  # trr_log_fn (_LOG_FN), user
    "trr_op_params_parse": (_st, [ctypes.c_int, ctypes.c_char_p, _p(OpParams)]),
    "trr_synchronize": (_st, [_ctx]),
    "trr_config_override": (_st, [_ctx, ctypes.c_int, _p(Config)]),
    "trr_config_last": (_st, [_ctx, _p(Config)]),
    "trr_variant_name": (_st, [ctypes.c_int, _p(ctypes.c_char_p)]),
    "trr_variant_from_name": (_st, [ctypes.c_char_p, _p(ctypes.c_int)]),
    "trr_timer_start": (_st, [_ctx]),
    "trr_timer_stop": (_st, [_ctx, _p(ctypes.c_double)]),
    "trr_f32_to_bf16": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_bf16_to_f32": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_f32_to_f8e4m3": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_f8e4m3_to_f32": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_f32_to_f8e5m2": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
    "trr_f8e5m2_to_f32": (_st, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
}


def _pkg_config_libdir():
    """(libdir or None, why not): pkg-config's answer for trireme, PKG_CONFIG_PATH honoured."""
    exe = shutil.which("pkg-config") or shutil.which("pkgconf")
    if not exe:
        return None, "pkg-config is not installed"
    try:
        proc = subprocess.run([exe, "--variable=libdir", "trireme"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"pkg-config failed: {e}"
    if proc.returncode != 0 or not proc.stdout.strip():
        why = (proc.stderr.strip().splitlines() or ["no trireme.pc on its search path"])[0]
        return None, f"{why} (PKG_CONFIG_PATH={os.environ.get('PKG_CONFIG_PATH', '')!r})"
    return proc.stdout.strip(), None


def _candidates():
    """(description, path or name, None) in the order they are tried; (description, None, why) for a place that
    named nothing to try."""
    env = os.environ.get("TRIREME_LIBRARY")
    if env:  # named explicitly: that library or none, never a different one found elsewhere
        return [("TRIREME_LIBRARY", env, None)]
    found = []
    bundled = pathlib.Path(__file__).resolve().parent / "libtrireme.so"
    if bundled.is_file():  # an installed wheel
        found.append(("inside the package", str(bundled), None))
    repo = pathlib.Path(__file__).resolve().parents[2]
    if (repo / "include" / "trireme.h").is_file():  # loaded from a checkout, not from an installed package
        found.append(("the build tree beside the package source", str(repo / "build" / "libtrireme.so"), None))
    libdir, why = _pkg_config_libdir()
    if libdir:
        for soname in ("libtrireme.so.0", "libtrireme.so"):
            found.append(("pkg-config --variable=libdir trireme", os.path.join(libdir, soname), None))
    else:
        found.append(("pkg-config --variable=libdir trireme", None, why))
    name = ctypes.util.find_library("trireme")
    found.append(("ctypes.util.find_library (ldconfig)", name, None if name else "found nothing"))
    for soname in ("libtrireme.so.0", "libtrireme.so"):
        found.append(("the system loader", soname, None))
    return found


def _load():
    tried = []
    for how, where, why in _candidates():
        if where is None:
            tried.append(f"  {how}: {why}")
            continue
        if os.sep in where and not os.path.exists(where):
            tried.append(f"  {how}: {where} (no such file)")
            continue
        try:
            # global: a library of user ops loaded later (load_ops_library) calls this one's trr_op_define
            lib = ctypes.CDLL(where, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            tried.append(f"  {how}: {where} ({e})")
            continue
        missing = [n for n in _PROTOTYPES if not hasattr(lib, n)]
        if missing:
            tried.append(f"  {how}: {where} (too old: lacks {', '.join(missing)})")
            continue
        for n, (res, args) in _PROTOTYPES.items():
            fn = getattr(lib, n)
            fn.restype, fn.argtypes = res, args
        return lib, where
    raise OSError(
        "libtrireme could not be loaded. Set TRIREME_LIBRARY to the path of libtrireme.so, build the "
        "repository (make build), or install the library (cmake --install) and put its lib/pkgconfig on "
        "PKG_CONFIG_PATH or its lib where the loader looks. Tried:\n" + "\n".join(tried)
    )


_handle = None
_fast = None

# The library's warnings (trr_log_set: a tuning database it ignores, a trace file it cannot write) as Python
# warnings; its notes (diagnostics that environment variables ask for) to the "trireme" logger.
TRR_LOG_WARNING = 1
_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class TriremeWarning(RuntimeWarning):
    """A warning from libtrireme about something it set aside without failing the call."""


def _on_log(level, message, _user):
    text = message.decode("utf-8", "replace")
    if level == TRR_LOG_WARNING:
        warnings.warn(text, TriremeWarning, stacklevel=2)
    else:
        logging.getLogger("trireme").info(text)


_log_handler = _LOG_FN(_on_log)  # referenced for the process's life: the library keeps its address


def _clear_log_handler():
    # The interpreter is going away: a message after this point (a trace written by the library's own exit
    # handler) must not call into a finalised Python.
    if _handle is not None:
        _handle[0].trr_log_set(None, None)


def lib():
    """The loaded library (loaded on first use, so importing the package never fails)."""
    global _handle
    if _handle is None:
        _handle = _load()
        _handle[0].trr_log_set(ctypes.cast(_log_handler, ctypes.c_void_p), None)
        atexit.register(_clear_log_handler)
    return _handle[0]


def fast():
    """The same library through ctypes.PyDLL, whose calls keep the GIL: letting it go and taking it back costs
    about as much as a small op's whole call into the library, so core.py calls trr_op_run this way for small
    ops (the work of a GPU op is only queued; a small CPU op ends within microseconds) and through lib(),
    which lets other Python threads run meanwhile, for large ones. Arguments are plain ints (addresses)."""
    global _fast
    if _fast is None:
        f = ctypes.PyDLL(path())
        run = f.trr_op_run
        run.restype, run.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        wrap = f.trr_buffer_wrap  # host memory on the CPU backend: a few words of bookkeeping
        wrap.restype, wrap.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
        _fast = f
    return _fast


def run_released(ctx, op, operands, params):
    """trr_op_run with plain-int arguments, letting go of the GIL for the call (a large op)."""
    global _run_released
    if _run_released is None:
        fn = lib()["trr_op_run"]  # a function object of its own: its argtypes differ from lib().trr_op_run's
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        _run_released = fn
    return _run_released(ctx, op, operands, params)


_run_released = None


def path():
    """Where the library was loaded from."""
    lib()
    return _handle[1]
