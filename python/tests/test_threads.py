"""One Context shared by Python threads (ctypes lets go of the GIL in every library call, so the calls meet in
libtrireme, which runs them one at a time per context): every thread's results are right."""

import threading

import numpy as np


def test_threads_share_a_context(ctx):
    failures = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(20):
                x = rng.integers(-512, 512, size=4096).astype(np.float32)
                y = rng.integers(-512, 512, size=4096).astype(np.float32)
                np.testing.assert_array_equal(ctx.add(x, y), x + y)  # f32 add is bit-exact
                t = ctx.tensor(x)
                np.testing.assert_array_equal(ctx.copy(t).numpy(), x)
        except Exception as e:  # reported by the main thread
            failures.append(f"thread {seed}: {e!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, "\n".join(failures)
