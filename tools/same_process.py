#!/usr/bin/env python3
"""torch, Triton (bench/anchors.py's kernels) and trireme's CUDA backend under one timing method in one process.

bench/anchors.py times torch and Triton with triton.testing.do_bench in a process of its own, while `trireme
bench` times its own way (bench/timing.c); on a power-capped GPU the two read different clocks, so their figures
do not compare. Here the three run on ONE stream, trireme's own (trr_context_native's CUstream, which torch takes
as a torch.cuda.ExternalStream), and are timed by the same torch events on it:

  memory-bound ops (copy, add, gelu, softmax, row_sum; docs/ops.md's sizes and byte counts): before each call the
    L2 is flushed by zeroing 256 MiB (do_bench's flush) and a short spin kernel gives the host time to queue
    the call, then one event pair brackets the call; the median of --reps calls per round;
  matmul (f16, and f16 + ReLU: cuBLAS then relu_ against the ReLU fused in Triton's and trireme's epilogues;
    compute-bound): ~25 ms of warm-up calls, then ~100 ms of back-to-back calls between two events, no flush
    (do_bench's duty cycle).

Three rounds, the implementations alternated within each round. Every output (poisoned with NaN first) is checked
against a float64 reference with docs/ops.md's bounds before anything is timed; a trireme result over its bound
makes the exit status 1.

    PYTHONPATH=python TRIREME_LIBRARY=build-gpu/libtrireme.so python3 tools/same_process.py [--ops add,softmax]

Without torch, a CUDA device or trireme's CUDA backend it says why and exits 0 (skipped). Without Triton the
Triton rows are left out."""
import argparse
import ctypes
import os
import statistics
import sys
import time

MEMORY_OPS = ("copy", "add", "gelu", "softmax", "row_sum")
ALL_OPS = MEMORY_OPS + ("matmul",)
FLUSH_BYTES = 256 << 20
SOFTMAX_COLS = (256, 1024, 4096, 12288)  # docs/ops.md's benchmark sizes (M = 4096)
SPIN_US = 40  # spin queued after each flush (queued method): longer than the host needs to queue the call


def skip(reason):
    print(f"same_process: skipped: {reason}")
    sys.exit(0)


class _Native(ctypes.Structure):
    """struct trr_native (include/trireme.h)"""

    _fields_ = [("backend", ctypes.c_char * 16), ("device", ctypes.c_void_p), ("context", ctypes.c_void_p),
                ("queue", ctypes.c_void_p)]


def trireme_stream(torch, ctx):
    """trireme's CUstream as a torch stream, so torch's work, Triton's launches and trireme's calls share one
    queue and one set of events."""
    fn = ctx._lib.trr_context_native
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.POINTER(_Native)], ctypes.c_int
    native = _Native()
    status = fn(ctx._handle, ctypes.byref(native))
    if status != 0 or not native.queue:
        raise RuntimeError(f"trr_context_native gave status {status} and no CUstream")
    return torch.cuda.ExternalStream(native.queue)


class Timer:
    """The one timing code of this script: torch events on the current (shared) stream."""

    def __init__(self, torch, spin_us):
        self.torch = torch
        self.cache = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
        self.sleep = getattr(torch.cuda, "_sleep", None) if spin_us > 0 else None
        self.cycles = int(spin_us * 2000)  # at up to 2 GHz: at least spin_us
        self.warned = False

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def per_call(self, fn, reps, synced=False, warm=5):
        """Median ms of `reps` calls, each after an L2 flush, between its own pair of events. Queued (default):
        the host never waits, a spin after each flush keeps the launch out of the window (do_bench's structure).
        synced: the host waits for each call's end event before queuing the next flush (`trireme bench`'s
        structure: timing.c's timer_stop waits), so the device idles between repetitions."""
        for _ in range(warm):
            fn()
        if synced:
            times = []
            for _ in range(reps):
                s, e = self.event(), self.event()
                self.cache.zero_()
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e))
            return statistics.median(times)
        pairs = [(self.event(), self.event()) for _ in range(reps + 1)]
        t = time.perf_counter()
        for i, (s, e) in enumerate(pairs):
            if i:
                self.cache.zero_()
                if self.sleep:
                    self.sleep(self.cycles)
            s.record()
            if i:
                fn()
            e.record()
        host_ms = (time.perf_counter() - t) * 1e3 / reps
        self.torch.cuda.synchronize()
        lead_ms = pairs[0][1].elapsed_time(pairs[1][0])  # flush and spin, untimed
        ms = statistics.median(s.elapsed_time(e) for s, e in pairs[1:])
        if host_ms > lead_ms + ms and not self.warned:
            # the device can run dry: a call's launch may then fall inside its timed window
            print(f"same_process: warning: the host took {host_ms * 1e3:.0f} us to queue a repetition, the device "
                  f"{(lead_ms + ms) * 1e3:.0f} us to run one", flush=True)
            self.warned = True
        return ms

    def sustained(self, fn, warm, calls):
        """ms per call of `calls` back-to-back calls after `warm` untimed ones, no flush."""
        for _ in range(warm):
            fn()
        s, e = self.event(), self.event()
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        self.torch.cuda.synchronize()
        return s.elapsed_time(e) / calls


def alternate(impls, measure, rounds, pause=0.0):
    """{name: [ms of each round]}, the implementations taken in turn within each round."""
    res = {name: [] for name in impls}
    for _ in range(rounds):
        for name, fn in impls.items():
            res[name].append(measure(fn))
            if pause:
                time.sleep(pause)
    return res


def report(label, res, work, unit, note=""):
    """Prints each implementation's figure per round and its median; returns {name: median figure}."""
    scale = 1e-12 if unit == "TFLOPS" else 1e-9
    med = {}
    for name, times in res.items():
        figs = [work / (ms * 1e-3) * scale for ms in times]
        med[name] = statistics.median(figs)
        print(f"{label:<30} {name:<24} " + " ".join(f"{x:8.1f}" for x in figs) +
              f"  median {med[name]:8.1f} {unit}  ({statistics.median(times) * 1e3:8.1f} us){note}", flush=True)
    trr = [n for n in med if n.startswith("trireme ")]
    if trr:
        others = [n for n in med if not n.startswith("trireme ")]
        ratios = ", ".join(f"/{n.split()[0]} {med[trr[0]] / med[n]:.3f}x" for n in others)
        print(f"{label:<30} ratio trireme {ratios}", flush=True)
        if len(res[trr[0]]) > 3:
            # the same round's figures paired: how far the clock's drift between rounds moves the ratio
            paired = []
            for n in others:
                r = sorted(t / s for s, t in zip(res[trr[0]], res[n]))
                paired.append(f"/{n.split()[0]} median {statistics.median(r):.3f}x, {r[0]:.3f}-{r[-1]:.3f}")
            print(f"{label:<30} paired by round: " + "; ".join(paired), flush=True)
    return med


def max_err(torch, got, ref, kind, x=None):
    """docs/ops.md's metric of got (f32) against the float64 reference: (value, bound, name)."""
    g = got.double()
    if torch.isnan(g).any() or torch.isinf(g).any():
        return float("inf"), 0.0, "non-finite or unwritten (NaN poison) elements"
    err = (g - ref).abs()
    if kind == "exact":
        return float((got != ref.float()).sum().item()), 0.0, "elements not bit-exact"
    if kind == "rel":
        return (err / ref.abs().clamp_min(1.1754944e-38)).max().item(), 1e-5, "max_rel"
    if kind == "softmax":
        rel = (err / ref.abs().clamp_min(1.1754944e-38)).max().item()
        return max(rel / 1e-5, err.max().item() / 1e-6), 1.0, "max(max_rel / 1e-5, max_abs / 1e-6)"
    if kind == "row":
        return (err / x.double().abs().sum(dim=1)).max().item(), 1e-6, "|err| / sum|x| of the row"
    raise ValueError(kind)


class Runner:
    def __init__(self, torch, trireme, ctx, anchors, timer, reps, rounds, methods, softmax_cols=SOFTMAX_COLS):
        self.torch, self.trireme, self.ctx, self.anchors = torch, trireme, ctx, anchors
        self.timer, self.reps, self.rounds, self.methods = timer, reps, rounds, methods
        self.softmax_cols = softmax_cols
        self.failed = []
        self.gen = torch.Generator(device="cuda").manual_seed(1)
        self.copy_gbs = {}  # per method: torch copy_'s figure

    def rand(self, *shape, dtype=None):
        t = self.torch.rand(*shape, generator=self.gen, device="cuda") * 2 - 1
        return t if dtype is None else t.to(dtype)

    def T(self, t):
        return self.trireme.from_dlpack(t, self.ctx)

    def memory_case(self, label, impls, outs, ref, kind, nbytes, x=None, ceilings=None):
        """impls {name: fn writing outs[name]}: poison, run once and check each, then time all alternated.
        ceilings {name: (fn, src)}: copies of src moving the case's bytes, checked bit-exact and timed with the
        rest: what a one-pass kernel of the case could reach under this method."""
        torch = self.torch
        kinds = {name: (ref, kind) for name in impls}
        impls = dict(impls)
        for name, (fn, src) in (ceilings or {}).items():
            impls[name] = fn
            kinds[name] = (src.double(), "exact")
        for name, fn in impls.items():
            outs[name].fill_(float("nan"))
            fn()
        torch.cuda.synchronize()
        for name in impls:
            v, bound, metric = max_err(torch, outs[name], *kinds[name], x)
            bad = v > bound
            print(f"{label:<30} {name:<24} check: {metric} {v:.3g} (bound {bound:g}){'  OVER THE BOUND' if bad else ''}")
            if bad and name.startswith("trireme "):
                self.failed.append(f"{label} {name}")
        meds = {}
        for method in self.methods:
            synced = method == "synced"
            res = alternate(impls, lambda fn: self.timer.per_call(fn, self.reps, synced), self.rounds)
            med = meds[method] = report(f"{label} {method}", res, nbytes, "GB/s")
            copy = self.copy_gbs.get(method)
            if copy:
                print(f"{label + ' ' + method:<30} of torch copy_ ({copy:.0f} GB/s): " +
                      ", ".join(f"{n.split()[0]} {g / copy:.1%}" for n, g in med.items()), flush=True)
        return meds

    def copy(self):
        torch = self.torch
        n = 1 << 28  # 1 GiB of f32, as the bench's copy ceiling
        src = self.rand(n)
        outs = {"torch copy_": torch.empty_like(src), "trireme copy": torch.empty_like(src)}
        ts, tz = self.T(src), self.T(outs["trireme copy"])
        impls = {"torch copy_": lambda: outs["torch copy_"].copy_(src),
                 "trireme copy": lambda: self.ctx.copy(ts, out=tz)}
        meds = self.memory_case("copy f32 1 GiB", impls, outs, src.double(), "exact", 8 * n)
        self.copy_gbs = {m: med["torch copy_"] for m, med in meds.items()}

    def add(self):
        torch, a = self.torch, self.anchors
        for e in (24, 27):
            n = 1 << e
            x, y = self.rand(n), self.rand(n)
            names = ["torch add"] + (["triton add"] if a else []) + ["trireme add"]
            outs = {k: torch.empty_like(x) for k in names}
            tx, ty, tz = self.T(x), self.T(y), self.T(outs["trireme add"])
            impls = {"torch add": lambda: torch.add(x, y, out=outs["torch add"])}
            if a:
                impls["triton add"] = lambda: a.triton_add(x, y, outs["triton add"])
            impls["trireme add"] = lambda: self.ctx.add(tx, ty, out=tz)
            ref = x.double() + y.double()
            self.memory_case(f"add f32 2^{e}", impls, outs, ref, "exact", 12 * n)
            del tx, ty, tz, outs, ref

    def gelu(self):
        torch = self.torch
        for e in (24, 27):
            n = 1 << e
            x = self.rand(n)
            outs = {"torch gelu (tanh)": torch.empty_like(x), "trireme gelu": torch.empty_like(x)}
            tx, tz = self.T(x), self.T(outs["trireme gelu"])
            impls = {"torch gelu (tanh)": lambda: torch.ops.aten.gelu.out(x, approximate="tanh",
                                                                          out=outs["torch gelu (tanh)"]),
                     "trireme gelu": lambda: self.ctx.gelu(tx, out=tz)}
            xd = x.double()
            ref = 0.5 * xd * (1 + torch.tanh(0.7978845608 * (xd + 0.044715 * xd ** 3)))
            del xd
            self.memory_case(f"gelu f32 2^{e}", impls, outs, ref, "rel", 8 * n)
            del tx, tz, outs, ref

    def softmax(self):
        torch, a = self.torch, self.anchors
        m = 4096
        for n in self.softmax_cols:
            x = self.rand(m, n)
            names = ["torch softmax"] + (["triton softmax"] if a else []) + ["trireme softmax"]
            outs = {k: torch.empty_like(x) for k in names}
            tx, tz = self.T(x), self.T(outs["trireme softmax"])
            impls = {"torch softmax": lambda: torch.ops.aten._softmax.out(x, 1, False, out=outs["torch softmax"])}
            if a:
                impls["triton softmax"] = lambda: a.triton_softmax(x, outs["triton softmax"])
            impls["trireme softmax"] = lambda: self.ctx.softmax(tx, out=tz)
            ref = torch.softmax(x.double(), dim=1)
            # softmax reads x and writes y once, as a copy of x does: the best copy at this shape bounds it
            copies = ["torch-copy_", "trireme-copy"] + (["triton-copy", "triton-copy-evict-first"] if a else [])
            for c in copies:
                outs[f"{c} at this shape"] = torch.empty_like(x)
            tc = self.T(outs["trireme-copy at this shape"])
            fns = {"torch-copy_": lambda: outs["torch-copy_ at this shape"].copy_(x),
                   "trireme-copy": lambda: self.ctx.copy(tx, out=tc),
                   "triton-copy": lambda: a.triton_copy(x, outs["triton-copy at this shape"]),
                   "triton-copy-evict-first": lambda: a.triton_copy(x, outs["triton-copy-evict-first at this shape"],
                                                                    "evict_first")}
            ceilings = {f"{c} at this shape": (fns[c], x) for c in copies}
            meds = self.memory_case(f"softmax f32 {m}x{n}", impls, outs, ref, "softmax", 8 * m * n, ceilings=ceilings)
            for method, med in meds.items():
                best = max(g for k, g in med.items() if k in impls and not k.startswith("trireme "))
                copy = max(g for k, g in med.items() if k in ceilings)
                print(f"{f'softmax f32 {m}x{n} {method}':<30} 1.05x the best of torch and Triton = {1.05 * best:.1f} "
                      f"GB/s = {1.05 * best / copy:.1%} of the best copy at this shape ({copy:.1f})", flush=True)
            del tx, tz, tc, outs, ref

    def row_sum(self):
        torch = self.torch
        m, n = 4096, 8192
        x = self.rand(m, n)
        outs = {"torch sum dim=1": torch.empty(m, device="cuda"), "trireme row_sum": torch.empty(m, device="cuda")}
        tx, tz = self.T(x), self.T(outs["trireme row_sum"])
        impls = {"torch sum dim=1": lambda: torch.sum(x, dim=1, out=outs["torch sum dim=1"]),
                 "trireme row_sum": lambda: self.ctx.row_sum(tx, out=tz)}
        ref = x.double().sum(dim=1)
        self.memory_case(f"row_sum f32 {m}x{n}", impls, outs, ref, "row", 4 * m * n, x=x)

    def matmul(self):
        """f16 and f16 + ReLU: torch (cuBLAS; for ReLU cuBLAS then relu_, the reference in docs/ops.md), Triton (the ReLU fused
        into its epilogue) and trireme (fused likewise), checked against torch's product first."""
        torch, a = self.torch, self.anchors
        for size in (4096, 8192):
            x, y = self.rand(size, size, dtype=torch.float16), self.rand(size, size, dtype=torch.float16)
            for relu in (False, True):
                label = f"f16{' + relu' if relu else ''} {size}^3"
                names = ("torch matmul (cuBLAS)" + (" + relu_" if relu else ""), "triton (anchors.py)",
                         "trireme matmul")
                outs = {n: torch.empty(size, size, device="cuda", dtype=torch.float16) for n in names}
                tx, ty, tz = self.T(x), self.T(y), self.T(outs[names[2]])
                o0, o1 = outs[names[0]], outs[names[1]]
                if relu:
                    impls = {names[0]: lambda: torch.relu_(torch.matmul(x, y, out=o0))}
                else:
                    impls = {names[0]: lambda: torch.matmul(x, y, out=o0)}
                if a:
                    impls[names[1]] = lambda: a.triton_matmul(x, y, o1, act=1 if relu else 0)
                impls[names[2]] = lambda: self.ctx.matmul(tx, ty, out=tz, epilogue="relu" if relu else "none")
                for fn in impls.values():
                    fn()  # Triton autotunes here
                torch.cuda.synchronize()
                want = outs[names[0]].float()
                for name in impls:
                    err = ((outs[name].float() - want).norm() / want.norm()).item()
                    print(f"{label:<30} {name:<24} vs torch: ||diff||_F/||torch||_F = {err:.2e}")
                    if name == names[2] and not err <= 2e-3:  # docs/ops.md's f16 Frobenius bound
                        self.failed.append(f"{label} trireme ({err:.2e})")
                flops = 2.0 * size ** 3
                est_ms = flops / 600e12 * 1e3
                warm, calls = max(3, int(25 / est_ms)), max(10, int(100 / est_ms))
                res = alternate(impls, lambda fn: self.timer.sustained(fn, warm, calls), self.rounds, pause=0.2)
                report(label, res, flops, "TFLOPS", note=f" {calls} calls after {warm}")
                del tx, ty, tz, outs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(MEMORY_OPS),
                   help=f"comma-separated, of {','.join(ALL_OPS)} (default: the memory-bound ones)")
    p.add_argument("--reps", type=int, default=100, help="timed calls per round of a memory-bound case")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--spin-us", type=float, default=SPIN_US,
                   help="queued method: spin after each flush so the call is queued before its start event "
                        "(0: none, as do_bench)")
    p.add_argument("--methods", default="queued",
                   help="memory-bound timing structures, comma-separated: queued (the host never waits; "
                        "do_bench's), synced (the host waits for each call; trireme bench's)")
    p.add_argument("--softmax-cols", default=",".join(map(str, SOFTMAX_COLS)),
                   help="softmax's row lengths N (M = 4096), comma-separated; docs/ops.md's bench takes 256 to 12672 "
                        "in steps of 128")
    args = p.parse_args()
    try:
        softmax_cols = [int(c) for c in args.softmax_cols.split(",") if c]
    except ValueError:
        softmax_cols = []
    if not softmax_cols or min(softmax_cols) < 1:
        p.error(f"--softmax-cols takes positive integers, not {args.softmax_cols!r}")
    ops = [o for o in args.ops.split(",") if o]
    methods = [m for m in args.methods.split(",") if m]
    if not methods or any(m not in ("queued", "synced") for m in methods):
        p.error(f"--methods takes queued and/or synced, not {args.methods!r}")
    unknown = [o for o in ops if o not in ALL_OPS]
    if unknown:
        p.error(f"unknown op(s) {', '.join(unknown)}; one of {', '.join(ALL_OPS)}")
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    # anchors.py (the Triton kernels) lives in bench/
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    try:
        import anchors
    except ImportError as e:  # anchors.py needs Triton
        print(f"same_process: no Triton rows: {e}")
        anchors = None
    try:
        import trireme
    except ImportError as e:
        skip(f"the trireme package is not importable: {e}")
    try:
        ctx = trireme.Context("cuda:0")
    except (trireme.TriremeError, OSError) as e:
        skip(f"trireme has no cuda:0: {e}")
    stream = trireme_stream(torch, ctx)
    t0 = time.time()
    dev = torch.cuda.get_device_properties(0)
    print(f"{dev.name}, torch {torch.__version__}, triton {getattr(sys.modules.get('triton'), '__version__', '-')}, "
          f"trireme {trireme.library_path()}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    print(f"one stream (trireme's), torch events; memory-bound: {FLUSH_BYTES >> 20} MiB flush before each call "
          f"(queued: + {args.spin_us:g} us spin), median of {args.reps} calls; {args.rounds} rounds alternated; "
          f"methods {','.join(methods)}")
    with torch.cuda.stream(stream):
        r = Runner(torch, trireme, ctx, anchors, Timer(torch, args.spin_us), args.reps, args.rounds, methods,
                   softmax_cols)
        for op in ALL_OPS:  # copy first: its figure is the others' yardstick
            if op in ops:
                getattr(r, op)()
                torch.cuda.synchronize()
    print(f"same_process: {time.time() - t0:.0f} s" + (f"; OVER THE BOUND: {', '.join(r.failed)}" if r.failed else ""))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
