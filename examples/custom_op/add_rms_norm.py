"""add_rms_norm (h = x + r, y = h / sqrt(mean(h^2) + eps) * w) defined from Python as a row op: the same kernels as
the C example (add_rms_norm.cu, add_rms_norm.cl, add_rms_norm.comp beside this file; the GLSL compiled to SPIR-V by
glslangValidator when the op is defined), a CPU kernel in NumPy and a float64 reference of one row in NumPy. Then
conformance on every device here, both outputs checked, and a short bench, in this process (docs/custom-ops.md,
"Row ops from Python").

    python3 examples/custom_op/add_rms_norm.py [--devices all] [--name add_rms_norm] [--tune]

The library's own example library (libswiglu.so) defines an op named add_rms_norm too: a process that loads it
gives this one another name (--name); an op name is defined once per process."""
import argparse
import pathlib
import sys

import numpy as np

import trireme

HERE = pathlib.Path(__file__).resolve().parent


def add_rms_norm_reference(x, r, w, eps):
    """One row in float64: x, r and w hold the row's N values (w: the whole vector); returns the rows of y and h,
    the outputs in the definition's order."""
    h = x + r
    return h / np.sqrt(np.mean(h * h) + eps) * w, h


def add_rms_norm_cpu(x, r, w, y, h, eps):
    """The CPU kernel: whole rows as views (x, r, y, h rows x cols with any row stride, w a vector of cols); h in
    f32 as the GPU kernels store it, the sum of squares in float64 as add_rms_norm.c's kernel does it."""
    np.add(x, r, out=h)
    ss = np.einsum("ij,ij->i", h, h, dtype=np.float64)
    rstd = (1.0 / np.sqrt(ss / h.shape[1] + eps)).astype(np.float32)
    y[...] = h * rstd[:, None] * w


def define(name="add_rms_norm"):
    """Defines the op and returns it (trireme.Op)."""
    # (source, entry point): the kernels' functions are named add_rms_norm whatever the op's name
    kernels = {"cuda": ((HERE / "add_rms_norm.cu").read_text(), "add_rms_norm"),
               "opencl": ((HERE / "add_rms_norm.cl").read_text(), "add_rms_norm"), "cpu": add_rms_norm_cpu}
    try:
        kernels["vulkan"] = trireme.glsl_to_spirv((HERE / "add_rms_norm.comp").read_text())
    except trireme.UnsupportedError as e:  # no glslangValidator: Vulkan reports the op unsupported
        print(f"add_rms_norm: no Vulkan kernel ({e.detail})", file=sys.stderr)
    return trireme.define_op(
        name, "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]",  # a vector and two outputs: a row op
        dtypes=["f32"],
        params={"eps": 1e-6},
        # threads per group, a power of two (the kernels' tree reduction); the first is the default
        tile_params={"THREADS": ("threads", [256, 128, 512, 1024])},
        kernels=kernels,
        launch={"groups": ["M"], "threads": "THREADS"},  # one group per row
        reference=add_rms_norm_reference,
        bound="max_rel",
        flops=5,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all", help='device specs, comma-separated, or "all"')
    ap.add_argument("--name", default="add_rms_norm", help="the op's name")
    ap.add_argument("--sizes", default="4096", help="bench sizes: N, rows of N at the bench's M")
    ap.add_argument("--tune", action="store_true", help="also tune THREADS (not written to the database)")
    a = ap.parse_args(argv)
    op = define(a.name)
    checked = trireme.conformance(op, devices=a.devices)
    for r in checked:
        print(f"{r.device:10} {r.op} {r.in_dtype}: {r.passed} passed, {r.failed} failed, {r.unsupported} "
              f"unsupported, worst {r.worst_ratio:.3g} of the bound {r.first_problem}")
    timed = trireme.bench(op, devices=a.devices, sizes=a.sizes, reps=10)
    for r in timed:
        print(f"{r.device:10} {r.bench} {r.size}: {r.status} {r.figure or 0:.3g} {r.unit} {r.reason}")
    if a.tune:
        for r in trireme.tune(op, devices=a.devices, shapes=["256x" + a.sizes.split(",")[0]], reps=5):
            print(f"{r.device:10} {r.op} {r.rows}x{r.cols}: {r.status} best {r.best} {r.best_ms} ms, default "
                  f"{r.default_ms} ms")
    return 0 if all(r.failed == 0 for r in checked) and all(r.status == "ok" for r in timed) else 1


if __name__ == "__main__":
    sys.exit(main())
