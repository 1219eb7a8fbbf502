"""A library of user ops (docs/custom-ops.md; examples/custom_op's libswiglu.so) from Python: loaded into the
process, its op runs by name on every test device against a NumPy float64 reference, and conformance() and
bench() take it through the CLI. The library is TRIREME_TEST_OPS_LIB, else the build tree's (TRIREME_BUILD_DIR, as
`make test-python` sets it, else the folder of the loaded libtrireme); the tests skip where there is none."""
import importlib.util
import os
import pathlib

import numpy as np
import pytest

import trireme
from trireme import _lib


def _library():
    env = os.environ.get("TRIREME_TEST_OPS_LIB")
    build = pathlib.Path(os.environ.get("TRIREME_BUILD_DIR") or pathlib.Path(_lib.path()).resolve().parent)
    cand = pathlib.Path(env) if env else build / "examples" / "custom_op" / "libswiglu.so"
    if not cand.is_file():
        pytest.skip(f"no custom-op library at {cand} (set TRIREME_TEST_OPS_LIB)")
    return str(cand)


@pytest.fixture(scope="module")
def swiglu_lib():
    path = _library()
    assert trireme.load_ops_library(path) == 3  # swiglu, silu_user, add_rms_norm; once per process: the module's fixture
    return path


def test_swiglu_runs_by_name(swiglu_lib, ctx, rng):
    x = rng.standard_normal((17, 781)).astype(np.float32)
    g = (rng.standard_normal((17, 781)) * 8).astype(np.float32)
    y = ctx.run("swiglu", x, g)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    want = x64 * g64 / (1.0 + np.exp(-g64))
    err = np.abs(y.astype(np.float64) - want) / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    assert err.max() <= 1e-5


def _python_example(name):
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "custom_op" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"custom_op_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_add_rms_norm_runs_by_name_with_both_outputs(swiglu_lib, ctx, rng):
    """The library's row op writes both outputs through ctx.run; on the CPU its bits are those of the NumPy CPU
    kernel of examples/custom_op/add_rms_norm.py (called here directly: every definition takes one of the bench's
    few user slots), which defines the same op from Python with the same GPU kernels."""
    x = rng.standard_normal((17, 781)).astype(np.float32)
    r = rng.standard_normal((17, 781)).astype(np.float32)
    w = rng.standard_normal(781).astype(np.float32)
    y, h = ctx.run("add_rms_norm", x, r, w, eps=1e-5)
    np.testing.assert_array_equal(h, x + r)
    h64 = x.astype(np.float64) + r
    want = h64 / np.sqrt(np.mean(h64 * h64, axis=1, keepdims=True) + 1e-5) * w
    assert (np.abs(y - want) / (np.abs(want) + np.abs(w.astype(np.float64)).sum())).max() <= 1e-5
    if ctx.backend == "cpu":
        py_y, py_h = np.full_like(x, np.nan), np.full_like(x, np.nan)
        _python_example("add_rms_norm").add_rms_norm_cpu(x, r, w, py_y, py_h, eps=1e-5)
        np.testing.assert_array_equal(py_y, y)
        np.testing.assert_array_equal(py_h, h)


def test_conformance_and_bench_take_the_library(swiglu_lib):
    report = trireme.conformance(device="cpu", ops=["swiglu"], ops_lib=swiglu_lib)
    assert report["exit_status"] == 0
    report = trireme.bench(["swiglu"], device="cpu", sizes="2^16", reps=5, ops_lib=swiglu_lib)
    assert report
