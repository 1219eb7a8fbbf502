"""Fixtures: `ctx` runs a test on cpu, opencl:0 (PoCL) and vulkan:0 (lavapipe), each skipped with the reason when
that device is not here (TRIREME_TEST_DEVICES overrides the list). Vulkan runs under the Khronos validation layer, as the C tests do."""

import os

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


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)


def pytest_report_header(config):
    from trireme import _lib

    return f"trireme package: {trireme.__file__}\nlibtrireme: {_lib.path()}"
