"""Finding libtrireme: TRIREME_LIBRARY wins, and a failure lists where the package looked."""

import os
import subprocess
import sys

import pytest

import trireme


def run_python(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=60)


def test_library_named_by_environment_is_used():
    want = os.environ.get("TRIREME_LIBRARY") or trireme.library_path()
    proc = run_python("import trireme; print(trireme.library_path())", TRIREME_LIBRARY=want)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == want


def test_import_never_fails_and_the_error_says_where_it_looked():
    proc = run_python("import trireme\ntry:\n    trireme.Context('cpu')\nexcept OSError as e:\n    print(e)",
                      TRIREME_LIBRARY="/nonexistent/libtrireme.so")
    assert proc.returncode == 0, proc.stderr
    assert "libtrireme could not be loaded" in proc.stdout
    assert "TRIREME_LIBRARY: /nonexistent/libtrireme.so (no such file)" in proc.stdout


def test_a_wheel_loads_the_library_inside_it():
    """pip install puts libtrireme.so beside the package's modules; without TRIREME_LIBRARY that one is loaded."""
    import pathlib

    bundled = pathlib.Path(trireme.__file__).resolve().parent / "libtrireme.so"
    if not bundled.is_file():
        pytest.skip(f"the package at {bundled.parent} was not installed from a wheel")
    env = {k: v for k, v in os.environ.items() if k != "TRIREME_LIBRARY"}
    proc = subprocess.run([sys.executable, "-c", "import trireme; print(trireme.library_path())"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(bundled)
