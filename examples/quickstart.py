"""relu(A @ B) and a softmax on the device TRIREME_DEVICE names (else the best one), checked against NumPy."""
import sys

import numpy as np
import trireme

ctx = trireme.Context(None)  # None: $TRIREME_DEVICE, else "auto"
rng = np.random.default_rng(0)
a = rng.uniform(-1, 1, (256, 128)).astype(np.float32)
b = rng.uniform(-1, 1, (128, 192)).astype(np.float32)
x = rng.uniform(-4, 4, (64, 1000)).astype(np.float32)

c = ctx.matmul(a, b, epilogue="relu")  # NumPy in, NumPy out
y = ctx.softmax(x)

want_c = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0.0)
e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
want_y = e / e.sum(axis=1, keepdims=True)
err_c = np.abs(c - want_c).max() / np.abs(want_c).max()
err_y = np.abs(y - want_y).max()
ok = err_c < 1e-4 and err_y < 1e-6
print(f"{ctx.device['spec']} ({ctx.device['name']}): relu(A @ B) {a.shape[0]}x{b.shape[1]}x{a.shape[1]} f32 "
      f"error {err_c:.1e}, softmax {x.shape[0]}x{x.shape[1]} error {err_y:.1e}: {'ok' if ok else 'MISMATCH'}")
ctx.close()
sys.exit(0 if ok else 1)
