"""The library's warnings (trr_log_set) reach Python as trireme.TriremeWarning, once per cause, and a process
that leaves its context to the interpreter's exit ends cleanly. Each case runs in its own interpreter: warnings
filters and the exit are per process."""

import os
import subprocess
import sys
import textwrap


def run(code, **env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)


def test_ignored_tuning_database_is_a_python_warning(tmp_path):
    db = tmp_path / "tune.json"
    db.write_text("{ not json")
    proc = run("""
        import warnings
        import numpy as np
        import trireme
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with trireme.Context("cpu") as ctx:
                a = np.random.default_rng(1).standard_normal((40, 20), dtype=np.float32)
                b = np.random.default_rng(2).standard_normal((20, 33), dtype=np.float32)
                got = ctx.matmul(a, b)
                assert np.allclose(got, a @ b, rtol=1e-4, atol=1e-4)
        mine = [w for w in seen if issubclass(w.category, trireme.TriremeWarning)]
        assert len(mine) == 1, [str(w.message) for w in seen]
        assert "ignoring the tuning database" in str(mine[0].message), str(mine[0].message)
        print("OK")
    """, TRIREME_TUNE_DB=str(db))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK", proc.stdout + proc.stderr


def test_unwritable_trace_warns_once_and_exits_cleanly(tmp_path):
    # the context is left to the interpreter's exit, where the library writes the trace it holds: the handler
    # is cleared by then (Python's exit handlers run before the C library's), so nothing more is said or crashes
    proc = run("""
        import numpy as np
        import trireme
        ctx = trireme.Context("cpu")
        ctx.gelu(np.ones(8, np.float32))
        ctx.gelu(np.ones(8, np.float32))
    """, TRIREME_TRACE=str(tmp_path / "no-such-dir" / "trace.json"))
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if "Warning" in l]
    assert len(lines) == 1 and "TriremeWarning: TRIREME_TRACE: cannot write" in lines[0], proc.stderr
