"""Ops defined from Python (docs/custom-ops.md, "From Python"): define_op() turns kernels per API, a NumPy float64
reference and a launch rule into an op of the library (trr_op_define), and conformance(), bench() and tune() check,
time and tune it in this process through the library's trr_tool_* calls (the `trireme` command could not see an op
that lives here).

The reference and a Python CPU kernel are ctypes callbacks: the library calls them from its own threads, each call
taking the GIL, so they are slow (a Python call per point for the reference, per row for a row op's, one per part
of the view for the CPU kernel) but exact. They are kept alive for the life of the process, as the definition is."""

import ctypes
import dataclasses
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from . import _lib

_p = ctypes.POINTER
MAX_TILE_PARAMS, MAX_TILE_CANDIDATES, MAX_USER_OPERANDS, MAX_USER_DTYPES = 4, 8, 4, 3
MAX_ROW_OPERANDS = 5  # a row op's three inputs and two outputs

_PARAM_TYPES = {"f32": 0, "float": 0, "bool": 1, "enum": 2, "int": 3}
_BOUNDS = {"max_rel": 0, "exact_f32": 1, "exact": 2}
_DTYPES = {"f32": _lib.F32, "float32": _lib.F32, "f16": _lib.F16, "float16": _lib.F16, "bf16": _lib.BF16,
           "bfloat16": _lib.BF16}
# how an operand of each dtype reaches a Python CPU kernel: bf16 as its bits (trireme.from_bfloat16 reads them)
_STORAGE = {_lib.F32: np.float32, _lib.F16: np.float16, _lib.BF16: np.uint16}
# the trr_config fields a tile parameter given as a bare list of candidates takes, in this order
_AUTO_FIELDS = ("threads", "block_n", "vector_width", "block_m", "block_k")


class ParamInfo(ctypes.Structure):
    """struct trr_param_info"""
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("default_value", ctypes.c_double),
                ("choices", ctypes.c_char_p), ("doc", ctypes.c_char_p), ("nonnegative", ctypes.c_int)]


class TileParam(ctypes.Structure):
    """struct trr_tile_param"""
    _fields_ = [("name", ctypes.c_char_p), ("field", ctypes.c_char_p),
                ("candidates", ctypes.c_int * MAX_TILE_CANDIDATES), ("n_candidates", ctypes.c_int)]


class KernelCode(ctypes.Structure):
    """struct trr_kernel_code"""
    _fields_ = [("source", ctypes.c_char_p), ("spirv", _p(ctypes.c_uint32)), ("spirv_words", ctypes.c_size_t),
                ("entry", ctypes.c_char_p)]


class OpLaunch(ctypes.Structure):
    """struct trr_op_launch"""
    _fields_ = [("groups", ctypes.c_char_p * 3), ("threads", ctypes.c_char_p)]


class CpuArgs(ctypes.Structure):
    """struct trr_op_cpu_args"""
    _fields_ = [("operands", ctypes.c_void_p * MAX_USER_OPERANDS), ("row_strides", ctypes.c_int64 * MAX_USER_OPERANDS),
                ("rows", ctypes.c_int64), ("cols", ctypes.c_int64), ("dtype", ctypes.c_int),
                ("params", _p(ctypes.c_double)), ("tiles", _p(ctypes.c_int)), ("user", ctypes.c_void_p)]


class CpuRowArgs(ctypes.Structure):
    """struct trr_op_cpu_row_args"""
    _fields_ = [("operands", ctypes.c_void_p * MAX_ROW_OPERANDS), ("strides", ctypes.c_int64 * MAX_ROW_OPERANDS),
                ("n_operands", ctypes.c_int), ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
                ("dtype", ctypes.c_int), ("params", _p(ctypes.c_double)), ("tiles", _p(ctypes.c_int)),
                ("user", ctypes.c_void_p)]


CPU_FN = ctypes.CFUNCTYPE(None, _p(CpuArgs))
CPU_ROW_FN = ctypes.CFUNCTYPE(None, _p(CpuRowArgs))
REFERENCE_FN = ctypes.CFUNCTYPE(ctypes.c_double, _p(ctypes.c_double), _p(ctypes.c_double), ctypes.c_void_p)
# trr_op_row_reference_fn(const double *const *inputs, double *const *outputs, int64_t n, const double *params,
# void *user)
ROW_REFERENCE_FN = ctypes.CFUNCTYPE(None, _p(_p(ctypes.c_double)), _p(_p(ctypes.c_double)), ctypes.c_int64,
                                    _p(ctypes.c_double), ctypes.c_void_p)


class OpDef(ctypes.Structure):
    """struct trr_op_def"""
    _fields_ = [("name", ctypes.c_char_p), ("operands", ctypes.c_char_p), ("dtypes", ctypes.c_int * MAX_USER_DTYPES),
                ("n_dtypes", ctypes.c_int), ("params", _p(ParamInfo)), ("n_params", ctypes.c_int),
                ("tiles", TileParam * MAX_TILE_PARAMS), ("n_tiles", ctypes.c_int), ("cuda", KernelCode),
                ("opencl", KernelCode), ("vulkan", KernelCode), ("cpu", CPU_FN), ("launch", OpLaunch),
                ("reference", REFERENCE_FN), ("bound", ctypes.c_int), ("flops_per_point", ctypes.c_int),
                ("transcendental", ctypes.c_int), ("user", ctypes.c_void_p)]


class ToolOptions(ctypes.Structure):
    """struct trr_tool_options"""
    _fields_ = [("device", ctypes.c_char_p), ("ops", ctypes.c_char_p), ("seed", ctypes.c_uint64),
                ("quick", ctypes.c_int), ("sizes", ctypes.c_char_p), ("reps", ctypes.c_int),
                ("budget_s", ctypes.c_double), ("no_vendor", ctypes.c_int), ("write_db", ctypes.c_int)]


# Everything a definition hands the library (callbacks, strings, SPIR-V words) stays referenced here and is never
# freed: the library keeps the definition until the process ends and may call the callbacks from its threads
# until then, interpreter shutdown included.
_KEEP = []
# ops whose CPU kernel is a Python callable: their calls always let the GIL go (core.Context._launch), since the
# library's threads take it to run the kernel
CALLBACK_OPS = set()
# the first exception a reference or CPU kernel raised, per op name: the C side only sees NaN (reference) or an
# unwritten output; the Python call that ran them raises it
_RAISED = {}
_RAISED_LOCK = threading.Lock()


def _keep(obj):
    _KEEP.append(obj)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))  # not even the interpreter's shutdown frees it
    return obj


def _record(name, exc):
    with _RAISED_LOCK:
        _RAISED.setdefault(name, exc)


def raise_recorded(names):
    """Raises (once) what a callback of one of these ops raised since the last call."""
    with _RAISED_LOCK:
        found = [(n, _RAISED.pop(n)) for n in list(names) if n in _RAISED]
    if found:
        name, exc = found[0]
        raise RuntimeError(f"the Python code of user op {name} raised {type(exc).__name__}: {exc}") from exc


# ---- the operand text ----

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_OPERAND = re.compile(rf"\s*({_NAME})\s*\[\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*\]\s*")


@dataclasses.dataclass(frozen=True)
class Operand:
    name: str
    dims: tuple


def parse_operands(text):
    """ "x[M,N], g[M,N] -> y[M,N]" as ([Operand inputs], [Operand outputs]). Several outputs ("-> y[M,N], r[M,N]")
    and vectors ("w[N]") parse; which shapes an op may have is the library's to say (trr_op_define)."""
    from .core import _error

    if not isinstance(text, str) or text.count("->") != 1:
        raise _error(1, f"operands {text!r}: want 'inputs -> outputs', e.g. 'x[M,N], g[M,N] -> y[M,N]'")
    sides = []
    for side in text.split("->"):
        ops, pos = [], 0
        while True:
            m = _OPERAND.match(side, pos)
            if not m:
                raise _error(1, f"operands {text!r}: cannot read {side[pos:].strip()!r} as name[DIM,...]")
            ops.append(Operand(m.group(1), tuple(d.strip() for d in m.group(2).split(","))))
            pos = m.end()
            if pos == len(side):
                break
            if side[pos] != ",":
                raise _error(1, f"operands {text!r}: expected ',' before {side[pos:].strip()!r}")
            pos += 1
        sides.append(ops)
    names = [o.name for o in sides[0] + sides[1]]
    if len(set(names)) != len(names):
        raise _error(1, f"operands {text!r}: an operand name is used twice")
    if len(names) > MAX_ROW_OPERANDS:
        raise _error(1, f"operands {text!r}: at most {MAX_ROW_OPERANDS} operands (a row op's)")
    return sides[0], sides[1]


# ---- the pieces of a definition ----

def _dtype_code(d):
    from .core import _error

    if isinstance(d, str) and d.lower() in _DTYPES:
        return _DTYPES[d.lower()]
    try:
        return _DTYPES[np.dtype(d).name]
    except (TypeError, KeyError):
        raise _error(2, f"dtype {d!r}: a user op takes f32, f16 or bf16") from None


def _params(params):
    """{"alpha": 1.0} (an f32 parameter and its default), or {"n": ("int", 3)}; bools as ("bool", False); an
    enum as ("enum", "a,b,c", 0). Returns (the C array, the names in order)."""
    from .core import _error

    items = list((params or {}).items())
    arr = (ParamInfo * max(1, len(items)))()
    for i, (name, spec) in enumerate(items):
        choices = None
        if isinstance(spec, tuple):
            kind, rest = spec[0], spec[1:]
            if kind not in _PARAM_TYPES:
                raise _error(1, f"parameter {name}: type {kind!r} is not one of {sorted(_PARAM_TYPES)}")
            if kind == "enum":
                choices, rest = rest[0], rest[1:]
            default = float(rest[0]) if rest else 0.0
        elif isinstance(spec, bool):
            kind, default = "bool", float(spec)
        elif isinstance(spec, (int, float, np.integer, np.floating)):
            kind, default = "f32", float(spec)
        else:
            raise _error(1, f"parameter {name}: give a default number or (type, default), not {spec!r}")
        arr[i] = ParamInfo(_keep(name.encode()), _PARAM_TYPES[kind], default,
                           _keep(choices.encode()) if choices else None, None, 0)
    return arr, [n for n, _ in items]


def _tiles(tile_params, into):
    """{"BLOCK": [256, 512]} (the field chosen from _AUTO_FIELDS) or {"BLOCK": ("threads", [256, 512])}."""
    from .core import _error

    items = list((tile_params or {}).items())
    if len(items) > MAX_TILE_PARAMS:
        raise _error(1, f"at most {MAX_TILE_PARAMS} tile parameters")
    named = {v[0] for _, v in items if isinstance(v, tuple)}
    auto = [f for f in _AUTO_FIELDS if f not in named]
    for i, (name, spec) in enumerate(items):
        field, values = spec if isinstance(spec, tuple) else (auto.pop(0), spec)
        values = [int(v) for v in values]
        if not 1 <= len(values) <= MAX_TILE_CANDIDATES:
            raise _error(1, f"tile parameter {name}: 1 to {MAX_TILE_CANDIDATES} candidates, not {len(values)}")
        into[i].name, into[i].field = _keep(name.encode()), _keep(field.encode())
        for k, v in enumerate(values):
            into[i].candidates[k] = v
        into[i].n_candidates = len(values)
    return len(items)


def glsl_to_spirv(source, glslang=None):
    """GLSL 450 compute source to SPIR-V words (a NumPy uint32 array) with glslangValidator: `glslang`, else
    TRIREME_GLSLANG, else glslangValidator on PATH. The library takes SPIR-V for Vulkan; this is the build step
    examples/custom_op's CMakeLists.txt runs for the C example."""
    from .core import _error

    exe = glslang or os.environ.get("TRIREME_GLSLANG") or shutil.which("glslangValidator")
    if not exe:
        raise _error(20, "no glslangValidator to compile the Vulkan kernel (set TRIREME_GLSLANG, or pass SPIR-V "
                         "words: an array of uint32)")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "kernel.comp"), os.path.join(tmp, "kernel.spv")
        with open(src, "w") as f:
            f.write(source)
        proc = subprocess.run([exe, "--target-env", "vulkan1.1", "-V", "-o", out, src], capture_output=True,
                              text=True, timeout=120)
        if proc.returncode != 0:
            raise _error(32, f"glslangValidator: {(proc.stdout + proc.stderr).strip()}")
        return np.fromfile(out, dtype=np.uint32)


def _kernel(api, spec, default_entry, into):
    if spec is None:
        return
    entry = None
    if isinstance(spec, tuple):
        spec, entry = spec
    if api == "vulkan" and isinstance(spec, str):
        spec = glsl_to_spirv(spec)
    if api == "vulkan":
        words = _keep(np.ascontiguousarray(np.asarray(spec, dtype=np.uint32)))
        into.spirv = words.ctypes.data_as(_p(ctypes.c_uint32))
        into.spirv_words = words.size
        into.entry = _keep(entry.encode()) if entry else None
    else:
        into.source = _keep(spec.encode())
        into.entry = _keep((entry or default_entry).encode())


def _strided_view(address, storage, shape, strides):
    """A NumPy view of the elements at address: shape, with strides in elements; empty where a dimension is 0."""
    size = np.dtype(storage).itemsize
    n = 1 + sum((d - 1) * s for d, s in zip(shape, strides)) if all(d > 0 for d in shape) else 0
    buf = (ctypes.c_char * (n * size)).from_address(address) if n else bytearray(0)
    return np.ndarray(shape, dtype=storage, buffer=buf, strides=tuple(s * size for s in strides))


def _cpu_callback(name, fn, n_operands, param_names, n_params):
    """The trr_op_cpu_fn that runs fn(*operands, **params) on 2-D NumPy views of one part of the call (rows x
    cols, the operands' row strides; inputs then the output, which fn writes)."""
    if isinstance(fn, ctypes._CFuncPtr):  # a C function already: the library calls it directly
        return ctypes.cast(fn, CPU_FN)
    if isinstance(fn, int):
        return CPU_FN(fn)

    def run(args_p):
        try:
            a = args_p.contents
            st = _STORAGE[a.dtype]
            rows, cols = a.rows, a.cols
            views = [_strided_view(a.operands[i], st, (rows, cols), (a.row_strides[i], 1)) for i in range(n_operands)]
            kw = {p: a.params[i] for i, p in enumerate(param_names[:n_params])}
            fn(*views, **kw)
        except BaseException as e:  # noqa: BLE001  (nothing may unwind into C)
            _record(name, e)

    return CPU_FN(run)


def _row_cpu_callback(name, fn, vectors, param_names):
    """The trr_op_cpu_row_fn that runs fn(*operands, **params) on NumPy views of whole rows of the call: a [M,N]
    operand as rows x cols (its row stride), a [N] vector as cols (its element stride); inputs, then the outputs,
    which fn writes."""
    if isinstance(fn, ctypes._CFuncPtr):
        return ctypes.cast(fn, CPU_ROW_FN)
    if isinstance(fn, int):
        return CPU_ROW_FN(fn)

    def run(args_p):
        try:
            a = args_p.contents
            st = _STORAGE[a.dtype]
            rows, cols = a.rows, a.cols
            views = [_strided_view(a.operands[i], st, (cols,) if vector else (rows, cols),
                                   (a.strides[i],) if vector else (a.strides[i], 1))
                     for i, vector in enumerate(vectors)]
            fn(*views, **{p: a.params[i] for i, p in enumerate(param_names)})
        except BaseException as e:  # noqa: BLE001  (nothing may unwind into C)
            _record(name, e)

    return CPU_ROW_FN(run)


def _row_reference_callback(name, fn, n_inputs, n_outputs, param_names):
    """The trr_op_row_reference_fn that calls fn(*inputs, **params) on one row (float64 arrays of n values, a
    vector's all of it) and stores the output rows it returns (one array, or a tuple of n_outputs). What raises,
    or returns the wrong number or length of rows, leaves NaN, so the row fails its check."""
    def ref(inputs, outputs, n, params, _user):
        outs = [np.ctypeslib.as_array(outputs[j], shape=(n,)) for j in range(n_outputs)] if n > 0 else []
        try:
            kw = {p: params[i] for i, p in enumerate(param_names)}
            rows = [np.ctypeslib.as_array(inputs[i], shape=(n,)) if n > 0 else np.zeros(0) for i in range(n_inputs)]
            for r in rows:
                r.flags.writeable = False  # the library's memory, which the reference only reads
            got = fn(*rows, **kw)
            if n_outputs == 1 and not isinstance(got, (tuple, list)):
                got = (got,)
            if len(got) != n_outputs:
                raise ValueError(f"the reference returned {len(got)} output row(s), the op has {n_outputs}")
            for o, g in zip(outs, got):
                o[...] = np.broadcast_to(np.asarray(g, dtype=np.float64), (n,))
        except BaseException as e:  # noqa: BLE001
            _record(name, e)
            for o in outs:
                o[...] = np.nan

    return ROW_REFERENCE_FN(ref)


def _reference_callback(name, fn, n_inputs, param_names):
    def ref(inputs, params, _user):
        try:
            kw = {p: params[i] for i, p in enumerate(param_names)} if param_names else {}
            return float(fn(*[inputs[i] for i in range(n_inputs)], **kw))
        except BaseException as e:  # noqa: BLE001
            _record(name, e)
            return float("nan")

    return REFERENCE_FN(ref)


@dataclasses.dataclass(frozen=True)
class Op:
    """An op defined from Python: its name (what ctx.run, conformance, bench and tune take, as an Op or as the
    name), its id in the library's op table, and its operands."""
    name: str
    id: int
    inputs: tuple
    outputs: tuple
    dtypes: tuple
    row: bool = False  # a row op (trr_op_define_row_op)

    def __str__(self):
        return self.name


def is_row_op(inputs, outputs):
    """What define_op's row=None decides: a row op where the operands are not the element-wise form (one or
    two inputs and one output, all of the first one's dims): several outputs, three inputs, or a [N] vector."""
    ops = inputs + outputs
    return len(outputs) > 1 or len(inputs) > 2 or any(len(o.dims) != len(ops[0].dims) for o in ops)


def define_op(name, operands, *, reference, kernels, launch, dtypes=("f32",), params=None, tile_params=None,
              bound="max_rel", flops=0, transcendental=False, row=None):
    """Defines an op (trr_op_define, or trr_op_define_row_op for a row op; docs/custom-ops.md) and returns its Op.

    operands: "x[M,N], g[M,N] -> y[M,N]". reference: the float64 value of one output point from the inputs'
    values (floats) and the parameters as keywords: ``lambda x, g: x * g / (1 + np.exp(-g))``. kernels: per API
    {"cuda": CUDA C, "opencl": OpenCL C, "vulkan": GLSL (compiled by glsl_to_spirv) or SPIR-V words, "cpu":
    callable(*operands, **params) on 2-D NumPy views (inputs, then the output to write; bf16 as uint16 bits) or
    a C function (ctypes function or address) of type trr_op_cpu_fn}; a source may be (text, entry), the entry
    defaulting to the op's name (SPIR-V: main). launch: {"groups": ["N/BLOCK", "M"], "threads": "BLOCK"}.
    dtypes: up to three of f32, f16, bf16. params: {"alpha": 1.0} or {"n": ("int", 3)}. tile_params:
    {"BLOCK": [256, 512, 1024]} (the first is the default; the trr_config field is picked in the order threads,
    block_n, vector_width, ...) or {"BLOCK": ("threads", [256, 512])}. bound: "max_rel", "exact_f32" or "exact".
    flops: per output point, for the bench's report (bytes are every operand once).

    A row op ("x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]": one to three inputs, one or two outputs, [M,N] or [N]
    vectors; row=None makes one of any operands that are not element-wise, row=True of any) works on whole rows:
    its reference takes one row of each input (float64 arrays of N values, a vector's all of it) and the
    parameters, and returns the outputs' rows (an array, or a tuple of them in order); its Python CPU kernel gets
    rows x cols views of the [M,N] operands and 1-D views of the vectors (or is a C function of type
    trr_op_cpu_row_fn).

    A name is defined once per process; definitions live until it ends."""
    from .core import _check, _error

    ins, outs = parse_operands(operands)
    row = is_row_op(ins, outs) if row is None else bool(row)
    if not row and len(outs) != 1:
        raise _error(1, f"operands {operands!r}: an element-wise op has one output (its reference returns one "
                        "value per point); row=True or a row op's operands define a row op")
    unknown = set(kernels) - {"cuda", "opencl", "vulkan", "cpu"}
    if unknown:
        raise _error(1, f"kernels: unknown API(s) {sorted(unknown)} (cuda, opencl, vulkan, cpu)")
    if not callable(reference):
        raise _error(1, "reference: a function of the inputs' values returning the output's, in float64")
    codes = [_dtype_code(d) for d in ([dtypes] if isinstance(dtypes, str) else dtypes)]
    if not 1 <= len(codes) <= MAX_USER_DTYPES:
        raise _error(1, f"dtypes: 1 to {MAX_USER_DTYPES}")
    if bound not in _BOUNDS:
        raise _error(1, f"bound {bound!r}: one of {sorted(_BOUNDS)}")
    groups = launch.get("groups", []) if isinstance(launch, dict) else launch[0]
    threads = launch.get("threads") if isinstance(launch, dict) else launch[1]
    if isinstance(groups, str):
        groups = [groups]
    if len(groups) > 3:
        raise _error(1, "launch: at most three group expressions (x, y, z)")

    d = OpDef()
    d.name = _keep(name.encode())
    d.operands = _keep(operands.encode())
    for i, c in enumerate(codes):
        d.dtypes[i] = c
    d.n_dtypes = len(codes)
    p_arr, p_names = _params(params)
    d.params = ctypes.cast(_keep(p_arr), _p(ParamInfo))
    d.n_params = len(p_names)
    d.n_tiles = _tiles(tile_params, d.tiles)
    for api in ("cuda", "opencl", "vulkan"):
        _kernel(api, kernels.get(api), name, getattr(d, api))
    row_cpu = row_reference = None
    if kernels.get("cpu") is not None:
        if row:
            row_cpu = _keep(_row_cpu_callback(name, kernels["cpu"], [len(o.dims) == 1 for o in ins + outs],
                                              p_names))
        else:
            d.cpu = _keep(_cpu_callback(name, kernels["cpu"], len(ins) + 1, p_names, len(p_names)))
    for i, g in enumerate(groups):
        d.launch.groups[i] = _keep(str(g).encode()) if g is not None else None
    d.launch.threads = _keep(str(threads).encode()) if threads is not None else None
    if row:
        row_reference = _keep(_row_reference_callback(name, reference, len(ins), len(outs), p_names))
    else:
        d.reference = _keep(_reference_callback(name, reference, len(ins), p_names))
    d.bound = _BOUNDS[bound]
    d.flops_per_point = int(flops)
    d.transcendental = int(bool(transcendental))
    _keep(d)

    code = ctypes.c_int()
    if row:
        _check(_lib.lib().trr_op_define_row_op(ctypes.addressof(d), ctypes.cast(row_reference, ctypes.c_void_p),
                                               ctypes.cast(row_cpu, ctypes.c_void_p) if row_cpu else None,
                                               ctypes.byref(code)))
    else:
        _check(_lib.lib().trr_op_define(ctypes.addressof(d), ctypes.byref(code)))
    if kernels.get("cpu") is not None and not isinstance(kernels["cpu"], (ctypes._CFuncPtr, int)):
        CALLBACK_OPS.add(code.value)
    return Op(name, code.value, tuple(ins), tuple(outs), tuple(codes), row)


# ---- the harness in this process ----

def _names(ops):
    if ops is None:
        return []
    if isinstance(ops, (str, Op)):
        ops = [ops]
    return [str(o) for o in ops]


def tool_json(tool, device, ops, seed=0, quick=False, sizes=None, reps=0, budget=0.0, no_vendor=False,
              write_db=False):
    """One trr_tool_<tool> call on one device: its JSON document, parsed."""
    from .core import _check

    lib = _lib.lib()
    opt = ToolOptions(device.encode() if device else None, ",".join(ops).encode() if ops else None,
                      int(seed) & (2**64 - 1), int(bool(quick)), sizes.encode() if sizes else None, int(reps or 0),
                      float(budget or 0.0), int(bool(no_vendor)), int(bool(write_db)))
    out = ctypes.c_void_p()
    _check(getattr(lib, f"trr_tool_{tool}")(ctypes.addressof(opt), ctypes.byref(out)))
    try:
        return json.loads(ctypes.string_at(out.value).decode())
    finally:
        lib.trr_tool_free(out)


class Results(list):
    """A list of result rows (dataclasses) with the raw JSON documents (``.reports``, one per device) and
    ``to_frame()``: a pandas DataFrame of the rows (pandas is imported only then)."""

    def __init__(self, rows, reports):
        super().__init__(rows)
        self.reports = reports

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(r) for r in self])


@dataclasses.dataclass
class ConformanceRow:
    """One op and dtype signature on one device: case counts and the worst error / bound over the cases run."""
    device: str
    op: str
    in_dtype: str
    out_dtype: str
    passed: int
    failed: int
    unsupported: int
    worst_ratio: float
    first_problem: str

    @property
    def ok(self):
        return self.failed == 0 and self.passed > 0


@dataclasses.dataclass
class BenchRow:
    """One benchmark case on one device: the median figure (unit: GB/s or TFLOPS), its spread, the ceiling."""
    device: str
    bench: str
    op: str
    size: str
    status: str
    reason: str
    unit: str
    figure: float
    figure_min: float
    figure_max: float
    median_ms: float
    reps: int
    ceiling: float
    fraction_of_ceiling: float
    config: dict


@dataclasses.dataclass
class TuneRow:
    """One (op, dtype, shape) on one device: the fastest checked config against the default one."""
    device: str
    op: str
    in_dtype: str
    out_dtype: str
    rows: int
    cols: int
    status: str
    error: str
    best: str
    best_ms: float
    default: str
    default_ms: float
    timed: int
    failed: int
    stored: bool


def conformance_rows(report):
    dev = report["device"]["spec"]
    return [ConformanceRow(dev, s["op"], s["in_dtype"], s["out_dtype"], s["pass"], s["fail"], s["unsupported"],
                           s["worst_ratio"], s["first_problem"]) for s in report["summary"]]


def bench_rows(report):
    dev = report["device"]["spec"]
    return [BenchRow(dev, r["bench"], r["op"], r["size"], r["status"], r["reason"], r["unit"], r["figure"],
                     r["figure_min"], r["figure_max"], r["median_ms"], r["reps"], r["ceiling"],
                     r["fraction_of_ceiling"], r["config"]) for r in report["results"]]


def tune_rows(doc):
    dev = doc["device"]["spec"]
    return [TuneRow(dev, r["op"], r["in_dtype"], r["out_dtype"], r["rows"], r["cols"], r["status"], r["error"],
                    r.get("best", ""), r.get("best_ms"), r.get("default", ""), r.get("default_ms"), r["timed"],
                    r["failed"], r["stored"]) for r in doc["results"]]
