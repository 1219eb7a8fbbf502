"""Row ops defined from Python (trireme.define_op through trr_op_define_row_op, docs/custom-ops.md "Row ops from
Python"): examples/custom_op/add_rms_norm.py's add_rms_norm (kernels for the four APIs, a NumPy row reference, a
NumPy CPU kernel; a [N] vector and two outputs) runs on each test device with both outputs written and passes
conformance, bench and tune there; conformance judges each output; inconsistent row definitions are refused with the
library's reason; a process with Python row callbacks exits cleanly. Op names are process-wide and defined once, so
each test defines its own."""
import ctypes
import itertools
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import trireme
from conftest import EXAMPLES, load_example, no_glsl_kernel

_names = (f"pyrow_{i}" for i in itertools.count())
EPS = 1e-5  # not the definition's default, so the parameter is seen to arrive


@pytest.fixture(scope="module")
def arn():
    # another name than the C example library's add_rms_norm, which test_custom_op loads into this process
    return load_example("add_rms_norm").define("add_rms_norm_py")


def _want(x, r, w, eps):
    h = x.astype(np.float64) + r.astype(np.float64)
    return h / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + eps) * w.astype(np.float64), h


def _norm_ratio(got, want, w):
    """The row norms' error over its bound (docs/ops.md): |got - want| / (|want| + sum |w|) against 1e-5."""
    return (np.abs(got.astype(np.float64) - want) / (np.abs(want) + np.abs(w.astype(np.float64)).sum())).max() / 1e-5


def test_the_definition(arn):
    assert arn.row and arn.name == "add_rms_norm_py"
    assert [(o.name, o.dims) for o in arn.inputs + arn.outputs] == [
        ("x", ("M", "N")), ("r", ("M", "N")), ("w", ("N",)), ("y", ("M", "N")), ("h", ("M", "N"))]


def test_runs_with_both_outputs(arn, ctx, rng):
    x = rng.standard_normal((19, 1031)).astype(np.float32)
    r = (rng.standard_normal((19, 1031)) * 4).astype(np.float32)
    w = rng.standard_normal(2 * 1031).astype(np.float32)
    if no_glsl_kernel(ctx.backend):  # no Vulkan kernel: the op says so
        with pytest.raises(trireme.UnsupportedError):
            ctx.run(arn, x, r, w[:1031], eps=EPS)
        return
    y, h = ctx.run(arn, x, r, w[:1031], eps=EPS)
    y64, h64 = _want(x, r, w[:1031], EPS)
    np.testing.assert_array_equal(h, x + r)  # one f32 rounding of the sum, on every API
    assert _norm_ratio(y, y64, w[:1031]) <= 1
    # strided views, a vector of element stride 2, poisoned outputs with padded rows: nothing past the view written
    xs, rs, ws = x[:, 5:900], r[:, 5:900], w[::2][:895]
    yo = np.full((19, 1000), np.nan, np.float32)
    ho = np.full((19, 1000), np.nan, np.float32)
    got = ctx.run("add_rms_norm_py", xs, rs, ws, out=(yo[:, :895], ho[:, :895]), eps=EPS)
    assert len(got) == 2
    y64, h64 = _want(xs, rs, ws, EPS)
    np.testing.assert_array_equal(ho[:, :895], xs + rs)
    assert _norm_ratio(yo[:, :895], y64, ws) <= 1
    assert np.isnan(yo[:, 895:]).all() and np.isnan(ho[:, 895:]).all()


def test_conformance_bench_and_tune_in_process(arn, devices):
    checked = trireme.conformance(arn, devices=devices)
    assert sorted({r.device.split(":")[0] for r in checked}) == sorted({d.split(":")[0] for d in devices})
    for r in checked:
        assert (r.op, r.in_dtype, r.failed) == ("add_rms_norm_py", "f32", 0), r
        if no_glsl_kernel(r.device):
            assert r.unsupported > 0, r
            continue
        assert r.ok and r.unsupported == 0 and r.passed > 0, r
        assert 0 <= r.worst_ratio <= 1
    assert len(checked.reports) == len(devices)

    timed = trireme.bench(arn, devices=devices, sizes=[1024], reps=3)
    assert len(timed) == len(devices)
    for r in timed:
        if no_glsl_kernel(r.device):
            assert r.status == "unsupported", r
            continue
        assert (r.bench, r.status, r.unit) == ("add_rms_norm_py_f32", "ok", "GB/s"), r
        m, n = (int(v) for v in r.size.split("x"))
        assert n == 1024 and m > 0 and r.median_ms > 0 and r.figure_min <= r.figure <= r.figure_max
        # every operand once: four [M,N] f32 operands and the [N] vector
        assert r.figure == pytest.approx((4 * 4 * m * n + 4 * n) / (r.median_ms * 1e-3) / 1e9, rel=1e-6)

    tuned = trireme.tune(arn, devices=devices, shapes=["33x1000"], reps=2)
    assert len(tuned) == len(devices)
    for r in tuned:
        if no_glsl_kernel(r.device):
            assert r.status == "TRR_ERR_UNSUPPORTED", r
            continue
        assert (r.status, r.rows, r.cols, r.failed, r.stored) == ("TRR_OK", 33, 1000, 0, False), r
        assert r.timed >= 2 and 0 < r.best_ms <= r.default_ms


@pytest.mark.parametrize("broken", ["y", "h"])
def test_conformance_judges_each_output(broken):
    """A CPU kernel that gets one output slightly wrong (a relative 1e-4, ten times the f32 bound) fails."""
    ex = load_example("add_rms_norm")

    def cpu(x, r, w, y, h, eps):
        ex.add_rms_norm_cpu(x, r, w, y, h, eps)
        bad = y if broken == "y" else h
        bad *= np.float32(1 + 1e-4)

    op = trireme.define_op(next(_names), "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]", params={"eps": 1e-6},
                           kernels={"cpu": cpu}, launch={"groups": ["M"], "threads": "1"},
                           reference=ex.add_rms_norm_reference)
    [row] = trireme.conformance(op, devices="cpu")
    assert row.failed > 0 and row.worst_ratio > 1, row


def _scale_rows_cpu(x, y):
    y[...] = x * np.float32(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True))


_SCALE_ROWS_C = r"""
#include <stdint.h>
#include "trireme.h"
void scale_rows(const trr_op_cpu_row_args *a) {
    for (int64_t i = 0; i < a->rows; i++) {
        const float *x = (const float *)a->operands[0] + i * a->strides[0];
        float *y = (float *)a->operands[1] + i * a->strides[1];
        double ss = 0.0;
        for (int64_t c = 0; c < a->cols; c++) ss += (double)x[c] * x[c];
        const float s = (float)(ss / (double)a->cols);
        for (int64_t c = 0; c < a->cols; c++) y[c] = x[c] * s;
    }
}
"""


def _c_scale_rows(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc"))
    header = pathlib.Path(__file__).resolve().parents[2] / "include"
    if not cc or not (header / "trireme.h").exists():
        pytest.skip("no C compiler or no header beside the package")
    src, lib = tmp_path / "scale_rows.c", tmp_path / "libscale_rows.so"
    src.write_text(_SCALE_ROWS_C)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-I", str(header), str(src), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib)).scale_rows


@pytest.mark.parametrize("kernel", ["python", "c"])
def test_row_true_makes_a_row_op_of_one_output(kernel, rng, tmp_path):
    """row=True makes a row op of element-wise-looking operands: the reference gets whole rows (y = x times the
    row's mean square, which no element-wise op could give); the CPU kernel a Python callable or a C function."""
    cpu = _scale_rows_cpu if kernel == "python" else _c_scale_rows(tmp_path)
    op = trireme.define_op(next(_names), "x[M,N] -> y[M,N]", kernels={"cpu": cpu},
                           launch={"groups": ["M"], "threads": "1"}, reference=lambda x: x * np.mean(x * x), row=True)
    assert op.row
    x = rng.standard_normal((5, 300)).astype(np.float32)
    with trireme.Context("cpu") as c:
        y = c.run(op, x)
    x64 = x.astype(np.float64)
    want = x64 * np.mean(x64 * x64, axis=1, keepdims=True)
    assert (np.abs(y - want) / np.abs(want)).max() <= 1e-5
    [row] = trireme.conformance(op, devices="cpu")
    assert row.ok, row


def test_inconsistent_row_definitions_are_refused():
    kw = dict(kernels={"cpu": lambda *a, **p: None}, reference=lambda *a, **p: a)
    one_group = {"groups": ["M"], "threads": "1"}
    for text, why in (("x[M,N], w[N] -> y[N]", "operands are \\[M,N\\] as its first input"),  # a [N] output
                      ("x[M,N], w[K] -> y[M,N]", "vector is \\[N\\], the rows' length"),  # a dim no other has
                      ("x[M,N], r[M,N] -> y[M,N], h[M,K]", "operands are \\[M,N\\]"),
                      ("x[N], w[N] -> y[N], h[N]", "first input is \\[M,N\\]"),
                      ("a[M,N], b[M,N], c[M,N], d[N] -> y[M,N]", "one to three inputs")):
        with pytest.raises(trireme.ArgumentError, match=why):
            trireme.define_op(next(_names), text, launch=one_group, **kw)
    # a launch rule naming a dim no operand has
    with pytest.raises(trireme.ArgumentError, match="\"K\".*neither a dim"):
        trireme.define_op(next(_names), "x[M,N], w[N] -> y[M,N]", launch={"groups": ["K"], "threads": "1"}, **kw)
    with pytest.raises(trireme.ArgumentError, match="element-wise op has one output"):
        trireme.define_op(next(_names), "x[M,N] -> y[M,N], h[M,N]", launch=one_group, row=False, **kw)
    with pytest.raises(trireme.ArgumentError, match="at most 5 operands"):
        trireme.define_op(next(_names), "a[M,N], b[M,N], c[M,N] -> y[M,N], h[M,N], k[M,N]", launch=one_group, **kw)


def test_a_reference_of_the_wrong_outputs_fails_the_check_and_raises():
    ex = load_example("add_rms_norm")
    op = trireme.define_op(next(_names), "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]", params={"eps": 1e-6},
                           kernels={"cpu": ex.add_rms_norm_cpu}, launch={"groups": ["M"], "threads": "1"},
                           reference=lambda x, r, w, eps: x + r)  # one output row where the op has two
    with pytest.raises(RuntimeError, match="returned 1 output row"):
        trireme.conformance(op, devices="cpu")


def test_a_row_cpu_kernel_that_raises_raises_from_run():
    def cpu(x, w, y):
        raise KeyError("from the row kernel")

    op = trireme.define_op(next(_names), "x[M,N], w[N] -> y[M,N]", kernels={"cpu": cpu},
                           launch={"groups": ["M"], "threads": "1"}, reference=lambda x, w: x * w)
    with trireme.Context("cpu") as c, pytest.raises(RuntimeError, match="KeyError"):
        c.run(op, np.ones((64, 4096), np.float32), np.ones(4096, np.float32))


_EXIT_SCRIPT = """
import sys, numpy as np, trireme
sys.path.insert(0, {example_dir!r})
import add_rms_norm
op = add_rms_norm.define("add_rms_norm")
ctx = trireme.Context("cpu")
x = np.ones((300, 1000), np.float32)
y, h = ctx.run(op, x, x, np.full(1000, 3, np.float32))  # the CPU kernel (Python) ran on the backend's threads
assert all(r.ok for r in trireme.conformance(op, devices="cpu"))
print("done", float(y[0, 0]), float(h[-1, -1]))
# the context, the callbacks and the interpreter go in whatever order the shutdown takes them
"""


def test_interpreter_exit_with_python_row_callbacks():
    script = _EXIT_SCRIPT.format(example_dir=str(EXAMPLES))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    word, y, h = proc.stdout.split()
    # h = 2, y = 2 / sqrt(4 + eps) * 3
    assert word == "done" and float(h) == 2.0 and float(y) == pytest.approx(6 / np.sqrt(4 + 1e-6), rel=1e-6)
