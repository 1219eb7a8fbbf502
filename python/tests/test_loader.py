"""Finding libtrireme: TRIREME_LIBRARY wins, and a failure lists where the package looked."""

import os
import subprocess
import sys

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
