"""Timing any callable on the device's timer, as triton.testing.do_bench does, so that a trireme call and a
torch call are measured the same way."""

import statistics
import sys

import numpy as np

from .core import _check

_contexts = {}


def _default_context():
    from .core import Context

    if "default" not in _contexts:
        _contexts["default"] = Context(None)
    return _contexts["default"]


def _torch_stream(ctx):
    """torch's current CUDA stream on ctx's device when torch is in use there, else None: its work is brought
    inside the timed interval (trireme's timer events are on trireme's stream)."""
    torch = sys.modules.get("torch")
    if ctx.backend != "cuda" or torch is None or not torch.cuda.is_available():
        return None
    return torch.cuda.current_stream(ctx.device["index"]).cuda_stream


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", ctx=None,
             flush_bytes=None):
    """Device time of fn() in milliseconds, as triton.testing.do_bench measures it.

    fn runs a few times to estimate its time, then enough times to fill `warmup` ms untimed and `rep` ms timed.
    Before each timed run the device's cache is flushed (a buffer of flush_bytes is filled: 256 MiB on a GPU,
    64 MiB on the CPU backend; 0 skips it) and the gradients of the tensors in grad_to_none are cleared; each run
    is timed alone on the device's timer (trr_timer_start / trr_timer_stop: CUDA events, OpenCL profiling,
    Vulkan timestamps, the host clock on the CPU backend). On CUDA with torch in use, torch's current stream
    waits for the timer's start and the timer's stop for torch's stream, so that a torch call's kernels are
    inside the interval as a trireme call's are.

    quantiles: a list of quantiles (0.5, 0.2, 0.8) to return instead of one figure; return_mode: "mean",
    "median", "min", "max" or "all" (every run's time). ctx: the Context whose device and timer are used (default:
    one made with Context(None), TRIREME_DEVICE or auto)."""
    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode {return_mode!r}: min, max, mean, median or all")
    ctx = ctx or _default_context()
    stream = _torch_stream(ctx)
    if flush_bytes is None:
        flush_bytes = (64 if ctx.backend == "cpu" else 256) << 20
    cache = ctx.empty((flush_bytes,), np.uint8) if flush_bytes else None

    def flush():
        if cache is not None:
            _check(ctx._lib.trr_buffer_fill(ctx._live(), cache._storage.handle, cache.offset, flush_bytes, 0),
                   ctx._handle)

    def timed():
        ctx.timer_start()
        if stream is not None:
            ctx.stream_wait(stream)
        fn()
        if stream is not None:
            ctx.wait_stream(stream)
        return ctx.timer_stop()

    fn()
    ctx.synchronize()
    estimate = 0.0
    for _ in range(5):
        flush()
        estimate += timed()
    estimate = max(estimate / 5, 1e-6)
    n_warmup = max(1, int(warmup / estimate))
    n_repeat = max(1, int(rep / estimate))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        for t in grad_to_none or ():
            t.grad = None
        flush()
        times.append(timed())
    if quantiles is not None:
        out = [float(q) for q in np.quantile(np.asarray(times), quantiles)]
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times)


__all__ = ["do_bench"]
