"""Ops defined from Python (trireme.define_op, docs/custom-ops.md "From Python"): examples/custom_op/swiglu.py's
swiglu (kernels for the four APIs, a NumPy reference, a NumPy CPU kernel) runs by name on each test device and
passes conformance, bench and tune there, in this process; a definition with a parameter, an inconsistent one, a
reference that raises, and a process that ends with Python callbacks registered. Op names are process-wide and
defined once, so each test defines its own."""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import trireme
from conftest import EXAMPLES, load_example, no_glsl_kernel

_names = (f"pydef_{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def swiglu():
    # another name than the C example library's swiglu, which test_custom_op loads into this process
    return load_example("swiglu").define("swiglu_py")


def _swiglu64(x, g):
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    return x64 * g64 / (1.0 + np.exp(-g64))


def _max_rel(got, want):
    return (np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), np.finfo(np.float32).tiny)).max()


def test_runs_by_op_and_by_name(swiglu, ctx, rng):
    x = rng.standard_normal((19, 1031)).astype(np.float32)
    g = (rng.standard_normal((19, 1031)) * 8).astype(np.float32)
    if no_glsl_kernel(ctx.backend):
        with pytest.raises(trireme.UnsupportedError):
            ctx.run(swiglu, x, g)
        return
    assert _max_rel(ctx.run(swiglu, x, g), _swiglu64(x, g)) <= 1e-5
    y = np.full((19, 1031), np.nan, dtype=np.float32)
    xs, gs = x[:, 7:900], g[:, 7:900]  # strided views: the CPU kernel gets row strides
    ctx.run("swiglu_py", xs, gs, out=y[:, :893])
    assert _max_rel(y[:, :893], _swiglu64(xs, gs)) <= 1e-5
    assert np.isnan(y[:, 893:]).all()  # nothing past the view


def test_conformance_bench_and_tune_in_process(swiglu, devices):
    checked = trireme.conformance(swiglu, devices=devices)
    assert sorted({r.device.split(":")[0] for r in checked}) == sorted({d.split(":")[0] for d in devices})
    for r in checked:
        assert (r.op, r.in_dtype, r.failed) == ("swiglu_py", "f32", 0), r
        if no_glsl_kernel(r.device):
            assert r.unsupported > 0, r
            continue
        assert r.ok and r.unsupported == 0 and r.passed > 0, r
        assert 0 <= r.worst_ratio <= 1
    assert len(checked.reports) == len(devices)

    timed = trireme.bench(swiglu, devices=devices, sizes=[65536], reps=5)
    assert len(timed) == len(devices)
    for r in timed:
        if no_glsl_kernel(r.device):
            assert r.status == "unsupported", r
            continue
        assert (r.bench, r.status, r.unit) == ("swiglu_py_f32", "ok", "GB/s"), r
        assert r.median_ms > 0 and r.figure > 0 and r.figure_min <= r.figure <= r.figure_max
        # the figure is the bytes of the three operands over the median time
        assert r.figure == pytest.approx(3 * 4 * 65536 / (r.median_ms * 1e-3) / 1e9, rel=1e-6)

    tuned = trireme.tune(swiglu, devices=devices, shapes=["3x4099"], reps=3)
    assert len(tuned) == len(devices)
    for r in tuned:
        if no_glsl_kernel(r.device):
            assert r.status == "TRR_ERR_UNSUPPORTED", r
            continue
        assert (r.status, r.rows, r.cols, r.failed, r.stored) == ("TRR_OK", 3, 4099, 0, False), r
        assert r.timed >= 2 and 0 < r.best_ms <= r.default_ms


def test_results_as_frame(swiglu):
    pd = pytest.importorskip("pandas")
    frame = trireme.conformance(swiglu, devices="cpu", as_frame=True)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["op"]) == ["swiglu_py"] and int(frame["failed"].sum()) == 0


def test_a_parameter_reaches_every_kernel(devices, rng):
    name = next(_names)
    cl = f"""__kernel void {name}(__global const float *x, __global float *y, long xo, long yo, int rows, int cols,
                                 int xs, int ys, float alpha) {{
        const int c = get_global_id(0), r = get_global_id(1);
        if (c < cols && r < rows) y[yo + (long)r * ys + c] = alpha * x[xo + (long)r * xs + c] + 1.0f;
    }}"""

    def cpu(x, y, alpha):
        y[...] = np.float32(alpha) * x + np.float32(1)

    op = trireme.define_op(name, "x[M,N] -> y[M,N]", params={"alpha": 2.0}, tile_params={"BLOCK": [64, 128]},
                           kernels={"opencl": cl, "cpu": cpu}, launch={"groups": ["N/BLOCK", "M"], "threads": "BLOCK"},
                           reference=lambda x, alpha: alpha * x + 1.0, bound="exact_f32")
    x = rng.standard_normal(1000).astype(np.float32)
    def has_kernel(spec):  # the op has OpenCL and CPU kernels only: elsewhere it says so
        return spec.split(":")[0] in ("opencl", "cpu")

    for spec in devices:
        with trireme.Context(spec) as c:
            if not has_kernel(spec):
                with pytest.raises(trireme.UnsupportedError):
                    c.run(op, x, alpha=0.5)
                continue
            np.testing.assert_array_equal(c.run(op, x, alpha=0.5), np.float32(0.5) * x + np.float32(1))
    for r in trireme.conformance(op, devices=devices):
        if not has_kernel(r.device):
            assert r.unsupported > 0 and r.failed == 0, r  # (an empty case passes: there is nothing to launch)
        else:
            assert r.ok, r


def test_inconsistent_definitions_are_refused():
    kernels = {"cpu": lambda x, y: None}
    with pytest.raises(trireme.ArgumentError, match="K"):
        trireme.define_op(next(_names), "x[M,N] -> y[M,N]", kernels=kernels,
                          launch={"groups": ["K/64"], "threads": "64"}, reference=lambda x: x)
    for text, why in (("x[M,N] y[M,N]", "inputs -> outputs"), ("x[M,N] g[M,N] -> y[M,N]", "expected ','"),
                      ("x[M,] -> y[M,N]", "name\\[DIM"), ("x[M,N], x[M,N] -> y[M,N]", "used twice")):
        with pytest.raises(trireme.ArgumentError, match=why):
            trireme.define_op(next(_names), text, kernels=kernels, launch={"groups": ["N"], "threads": "1"},
                              reference=lambda x: x)
    with pytest.raises(trireme.ArgumentError, match="unknown API"):
        trireme.define_op(next(_names), "x[N] -> y[N]", kernels={"metal": ""}, launch={"groups": ["N"], "threads": "1"},
                          reference=lambda x: x)
    # the parser reads several outputs and vectors; the library's user ops take one output
    ins, outs = trireme.custom.parse_operands("x[M,N], w[N] -> y[M,N], r[M,N]")
    assert [(o.name, o.dims) for o in ins + outs] == [("x", ("M", "N")), ("w", ("N",)), ("y", ("M", "N")),
                                                       ("r", ("M", "N"))]


def test_a_reference_that_raises_fails_the_check_and_raises():
    def ref(x):
        raise ZeroDivisionError("on purpose")

    def cpu(x, y):
        y[...] = x

    op = trireme.define_op(next(_names), "x[N] -> y[N]", kernels={"cpu": cpu}, launch={"groups": ["N"], "threads": "1"},
                           reference=ref)
    with pytest.raises(RuntimeError, match="ZeroDivisionError: on purpose"):
        trireme.conformance(op, devices="cpu")
    # the op itself runs (its CPU kernel is fine)
    with trireme.Context("cpu") as c:
        x = np.arange(5, dtype=np.float32)
        np.testing.assert_array_equal(c.run(op, x), x)


def test_a_cpu_kernel_that_raises_raises_from_run():
    def cpu(x, y):
        raise KeyError("from the kernel")

    op = trireme.define_op(next(_names), "x[N] -> y[N]", kernels={"cpu": cpu}, launch={"groups": ["N"], "threads": "1"},
                           reference=lambda x: x)
    with trireme.Context("cpu") as c, pytest.raises(RuntimeError, match="KeyError"):
        c.run(op, np.ones(100000, np.float32))  # several parts, on the backend's threads


_EXIT_SCRIPT = """
import sys, numpy as np, trireme
sys.path.insert(0, {example_dir!r})
import swiglu
op = swiglu.define("swiglu")
ctx = trireme.Context("cpu")
x = np.ones((3, 5000), np.float32)
y = ctx.run(op, x, x)  # the CPU kernel (Python) ran on the backend's threads
assert all(r.ok for r in trireme.conformance(op, devices="cpu"))
print("done", float(y[0, 0]))
# the context, the callbacks and the interpreter go in whatever order the shutdown takes them
"""


def test_interpreter_exit_with_python_callbacks():
    script = _EXIT_SCRIPT.format(example_dir=str(EXAMPLES))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    word, value = proc.stdout.split()
    assert word == "done" and float(value) == pytest.approx(1 / (1 + np.exp(-1.0)), rel=1e-6)
