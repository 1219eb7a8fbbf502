"""Fixtures: `ctx` runs a test on cpu, opencl:0 (PoCL) and vulkan:0 (lavapipe), each skipped with the reason when
that device is not here (TRIREME_TEST_DEVICES overrides the list). Vulkan runs under the Khronos validation layer, as the C tests do."""

import importlib.util
import os
import pathlib
import shutil

import numpy as np
import pytest

os.environ.setdefault("TRIREME_VK_VALIDATION", "1")

import trireme  # noqa: E402  (after the environment is set)

# TRIREME_TEST_DEVICES="cuda:0,cpu" picks others (a GPU machine); a device not here is a skip, not a failure.
DEVICES = [d for d in os.environ.get("TRIREME_TEST_DEVICES", "cpu,opencl:0,vulkan:0").split(",") if d]


@pytest.fixture(scope="module", params=DEVICES)
def ctx(request):
    try:
        c = trireme.Context(request.param)
    except trireme.TriremeError as e:
        if e.name in ("TRR_ERR_NO_DEVICE", "TRR_ERR_UNAVAILABLE"):
            pytest.skip(f"{request.param}: {e.detail}")
        raise
    yield c
    c.close()


def available(spec):
    """Whether a context opens on spec (an absent device or backend is False; any other error raises)."""
    try:
        trireme.Context(spec).close()
        return True
    except trireme.TriremeError as e:
        if e.name in ("TRR_ERR_NO_DEVICE", "TRR_ERR_UNAVAILABLE"):
            return False
        raise


@pytest.fixture(scope="module")
def devices():
    """The test devices that are here, as one list (for calls that take several devices)."""
    here = [d for d in DEVICES if available(d)]
    if not here:
        pytest.skip(f"none of {DEVICES} is here")
    return here


def no_glsl_kernel(device):
    """Vulkan without glslangValidator: the Python examples define no Vulkan kernel, which their ops report."""
    return device.startswith("vulkan") and not (os.environ.get("TRIREME_GLSLANG") or shutil.which("glslangValidator"))


EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "custom_op"


def load_example(name):
    """examples/custom_op/<name>.py as a module."""
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"custom_{name}_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)


def pytest_report_header(config):
    from trireme import _lib

    return f"trireme package: {trireme.__file__}\nlibtrireme: {_lib.path()}"
