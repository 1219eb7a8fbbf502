"""The README's Python example (examples/quickstart.py) runs as a user would run it, on every test device: it
checks its own results against NumPy and exits non-zero on a mismatch."""

import os
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"


def test_quickstart_example(ctx):  # ctx: the conftest's device, skipped where it is not here
    spec = ctx.device["spec"]
    env = dict(os.environ, TRIREME_DEVICE=spec)
    proc = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"{spec} ("), proc.stdout
    assert proc.stdout.rstrip().endswith(": ok"), proc.stdout
