"""A library of user ops (docs/custom-ops.md; examples/custom_op's libswiglu.so) from Python: loaded into the
process, its op runs by name on every test device against a NumPy float64 reference, and conformance() and
bench() take it through the CLI. The library is TRIREME_TEST_OPS_LIB, else the build tree's (TRIREME_BUILD_DIR, as
`make test-python` sets it, else the folder of the loaded libtrireme); the tests skip where there is none."""
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


def test_conformance_and_bench_take_the_library(swiglu_lib):
    report = trireme.conformance(device="cpu", ops=["swiglu"], ops_lib=swiglu_lib)
    assert report["exit_status"] == 0
    report = trireme.bench(["swiglu"], device="cpu", sizes="2^16", reps=5, ops_lib=swiglu_lib)
    assert report
