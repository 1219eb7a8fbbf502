"""Scripts that leave contexts and tensors to the interpreter's exit (or to the garbage collector, in any order)
exit with status 0 and print nothing. pytest runs in one process and would never see a crash at exit, so each
script runs in its own interpreter, once per test device."""

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import DEVICES

PRELUDE = """
import gc, sys
import numpy as np
import trireme
try:
    trireme.Context(DEVICE).close()
except trireme.TriremeError as e:
    if e.name in ("TRR_ERR_NO_DEVICE", "TRR_ERR_UNAVAILABLE"):
        print("SKIP", e.detail)
        sys.exit(0)
    raise
"""

SCRIPTS = {
    # the report: module-level context, tensor and result, nothing closed
    "module_level": """
ctx = trireme.Context(DEVICE); x = ctx.tensor(np.ones((2, 3), np.float32)); r = ctx.gelu(x)
""",
    # a caught error: its traceback holds the frame, which holds the context and a tensor, until exit
    "after_a_caught_error": """
def f():
    ctx = trireme.Context(DEVICE)
    x = ctx.tensor(np.ones((2, 3), np.float32))
    ctx.add(x, np.ones(4, np.float32))
try:
    f()
except trireme.TriremeError as e:
    err = e
""",
    # a reference cycle: the collector finalises the context and its storages in an order of its choosing
    "garbage_cycle": """
class Holder:
    pass
h = Holder(); h.self = h
h.ctx = trireme.Context(DEVICE)
h.x = h.ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
h.y = h.ctx.gelu(h.x)
h.np = h.ctx.add(np.ones(5, np.float32), np.ones(5, np.float32))
del h
gc.collect()
""",
    # tensors exported (NumPy views, DLPack capsules consumed and not) left to the exit with their context
    "exported": """
ctx = trireme.Context(DEVICE)
t = ctx.tensor(np.arange(6, dtype=np.float32))
held = [np.asarray(t), t[1:4], t.reshape(2, 3)]
if ctx.backend == "cpu":
    held.append(np.from_dlpack(t))
unconsumed = t.__dlpack__(copy=True, max_version=(1, 0))
view = ctx.add(np.ones(6, np.float32), np.ones(6, np.float32))
""",
    # the context dropped first, its tensors used after and dropped later
    "context_dropped_first": """
ctx = trireme.Context(DEVICE)
x = ctx.tensor(np.ones(1000, np.float32))
y = ctx.gelu(x)
del ctx
gc.collect()
assert y.numpy().shape == (1000,)
del x, y
""",
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_exits_cleanly(name, device):
    code = f"DEVICE = {device!r}\n" + PRELUDE + textwrap.dedent(SCRIPTS[name])
    env = dict(os.environ)
    env.setdefault("TRIREME_VK_VALIDATION", "1")  # a Vulkan message at teardown is noise on stderr: a failure
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode == 0 and proc.stdout.startswith("SKIP"):
        pytest.skip(f"{device}: {proc.stdout[5:].strip()}")
    assert proc.returncode == 0, f"{name} on {device}: exit status {proc.returncode}\n{proc.stderr[-3000:]}"
    assert proc.stderr == "", f"{name} on {device} wrote to stderr:\n{proc.stderr[-3000:]}"
