"""trireme.do_bench: device time of a callable, as triton.testing.do_bench measures it, on every device here."""

import numpy as np
import pytest

import trireme


def test_figures_and_their_forms(ctx, rng):
    x = ctx.tensor(rng.uniform(-1, 1, size=1 << 16).astype(np.float32))
    out = ctx.empty((1 << 16,))  # enough work that a few runs fill the short spans these tests ask for
    fn = lambda: ctx.gelu(x, out=out)  # noqa: E731
    mean = trireme.do_bench(fn, warmup=1, rep=2, ctx=ctx, flush_bytes=1 << 20)
    assert isinstance(mean, float) and 0 < mean < 1000
    times = trireme.do_bench(fn, warmup=1, rep=2, ctx=ctx, return_mode="all", flush_bytes=0)
    assert len(times) >= 1 and all(t > 0 for t in times)
    q = trireme.do_bench(fn, warmup=1, rep=2, ctx=ctx, quantiles=[0.2, 0.5, 0.8], flush_bytes=1 << 16)
    assert len(q) == 3 and q[0] <= q[1] <= q[2]
    for mode in ("min", "max", "median"):  # each its own run: compared only with zero
        assert trireme.do_bench(fn, warmup=1, rep=2, ctx=ctx, return_mode=mode, flush_bytes=1 << 16) > 0
    with pytest.raises(ValueError):
        trireme.do_bench(fn, ctx=ctx, return_mode="best")
    # the default flush (256 MiB on a GPU, 64 MiB on the CPU) once, over the shortest span
    assert trireme.do_bench(fn, warmup=0, rep=0, ctx=ctx) > 0


def test_more_work_takes_longer_on_the_cpu(rng):
    with trireme.Context("cpu") as c:
        small = c.tensor(rng.uniform(-1, 1, size=256).astype(np.float32))
        big = c.tensor(rng.uniform(-1, 1, size=1 << 20).astype(np.float32))
        kw = dict(warmup=2, rep=10, ctx=c, return_mode="median", flush_bytes=1 << 20)
        t_small = trireme.do_bench(lambda: c.gelu(small), **kw)
        t_big = trireme.do_bench(lambda: c.gelu(big), **kw)
        assert t_big > 10 * t_small, (t_small, t_big)


def test_gradients_are_cleared(ctx):
    class Holder:
        grad = "stale"

    h = Holder()
    seen = []
    trireme.do_bench(lambda: seen.append(h.grad), warmup=1, rep=1, ctx=ctx, grad_to_none=[h], flush_bytes=0)
    assert seen[-1] is None
