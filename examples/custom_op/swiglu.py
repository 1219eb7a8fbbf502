"""swiglu (y = x * silu(g)) defined from Python: the same kernels as the C example (swiglu.cu, swiglu.cl, swiglu.comp
beside this file; the GLSL compiled to SPIR-V by glslangValidator when the op is defined), a CPU kernel in NumPy
and the float64 reference in NumPy. Then conformance on every device here and a short bench, in this process
(docs/custom-ops.md, "From Python").

    python3 examples/custom_op/swiglu.py [--devices all] [--name swiglu] [--tune]

The library's own example library (libswiglu.so) defines an op named swiglu too: a process that loads it gives
this one another name (--name); an op name is defined once per process."""
import argparse
import pathlib
import sys

import numpy as np

import trireme

HERE = pathlib.Path(__file__).resolve().parent


def swiglu_reference(x, g):
    """The float64 value of one point: what every kernel is checked against."""
    return x * (g / (1.0 + np.exp(-g)))


def swiglu_cpu(x, g, y):
    """The CPU kernel: a part of the call as 2-D views (rows x cols, any row stride); f32 arithmetic as the GPU
    kernels do it, with silu in the form that does not overflow (swiglu.cl says why)."""
    h = np.exp(np.float32(-0.5) * np.abs(g))
    hh = h * h
    y[...] = x * (np.where(g < 0, g * hh, g) / (np.float32(1) + hh))


def define(name="swiglu"):
    """Defines the op and returns it (trireme.Op)."""
    # (source, entry point): the kernels' functions are named swiglu whatever the op's name
    kernels = {"cuda": ((HERE / "swiglu.cu").read_text(), "swiglu"),
               "opencl": ((HERE / "swiglu.cl").read_text(), "swiglu"), "cpu": swiglu_cpu}
    try:
        kernels["vulkan"] = trireme.glsl_to_spirv((HERE / "swiglu.comp").read_text())
    except trireme.UnsupportedError as e:  # no glslangValidator: Vulkan reports the op unsupported
        print(f"swiglu: no Vulkan kernel ({e.detail})", file=sys.stderr)
    return trireme.define_op(
        name, "x[M,N], g[M,N] -> y[M,N]",
        dtypes=["f32"],
        # BLOCK threads per group, each doing ITEMS elements BLOCK apart; the first candidate is the default
        tile_params={"BLOCK": ("threads", [256, 128, 512, 1024]), "ITEMS": ("vector_width", [4, 1, 2, 8])},
        kernels=kernels,
        # groups: N/(BLOCK*ITEMS) along x (a division rounds up), one row of the view per group along y
        launch={"groups": ["N/BLOCK/ITEMS", "M"], "threads": "BLOCK"},
        reference=swiglu_reference,
        bound="max_rel",
        flops=6,
        transcendental=True,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="all", help='device specs, comma-separated, or "all"')
    ap.add_argument("--name", default="swiglu", help="the op's name")
    ap.add_argument("--sizes", default="65536", help="bench sizes")
    ap.add_argument("--tune", action="store_true", help="also tune BLOCK and ITEMS (not written to the database)")
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
        for r in trireme.tune(op, devices=a.devices, shapes=[a.sizes.split(",")[0]], reps=5):
            print(f"{r.device:10} {r.op} {r.rows}x{r.cols}: {r.status} best {r.best} {r.best_ms} ms, default "
                  f"{r.default_ms} ms")
    return 0 if all(r.failed == 0 for r in checked) and all(r.status == "ok" for r in timed) else 1


if __name__ == "__main__":
    sys.exit(main())
