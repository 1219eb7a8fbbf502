"""CUDA tensors of PyTorch and trireme shared through DLPack: no copy in either direction, and no synchronize at
a hand-over (the DLPack stream protocol: each side's stream waits for the other's work on an event). Skipped
without torch, a CUDA device or trireme's CUDA backend."""

import pytest

import trireme

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch sees no CUDA device", allow_module_level=True)
F = torch.nn.functional


@pytest.fixture(scope="module")
def cuda():
    try:
        c = trireme.Context(f"cuda:{torch.cuda.current_device()}")
    except trireme.TriremeError as e:
        pytest.skip(f"trireme has no CUDA device: {e}")
    yield c
    c.close()


def T(t, ctx):
    return trireme.from_dlpack(t, ctx)


def gelu64(t):
    t = t.double()
    return t / (1 + torch.exp(-2 * 0.7978845608 * (t + 0.044715 * t ** 3)))


def max_rel(got, ref):
    return ((got.double() - ref).abs() / ref.abs().clamp_min(1.1754944e-38)).max().item()


def busy(n=4096):
    """Work that keeps torch's current stream busy for a while (a few ms on any GPU): a hand-over that did not
    wait for it would read stale memory."""
    m = torch.randn(n, n, device="cuda")
    for _ in range(4):
        m = m @ m * (1.0 / n)
    return m


def test_results_trireme_allocated_go_to_torch(cuda):
    """The issue's failure: a result in memory trireme allocated is handed to torch without a copy."""
    x = torch.randn(1823, 781, device="cuda")
    s = cuda.softmax(T(x, cuda))
    y = torch.from_dlpack(s)
    assert y.device == x.device and y.data_ptr() == s._storage.address() + s.offset
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
    assert y.shape == x.shape and y.dtype == torch.float32


def test_ops_write_into_torch_memory(cuda):
    x = torch.randn(1000, 129, device="cuda")
    y = torch.randn(1000, 129, device="cuda")
    z = torch.full_like(x, float("nan"))
    tz = T(z, cuda)
    assert tz._storage.address() + tz.offset == z.data_ptr()
    cuda.add(T(x, cuda), T(y, cuda), out=tz)
    got = torch.from_dlpack(tz)  # the hand-over back to torch: its stream waits for the add
    assert got.data_ptr() == z.data_ptr()
    assert torch.equal(got, x + y)  # f32 add is bit-exact


def test_interleaved_without_synchronize(cuda):
    """torch ops and trireme ops in turn on the same data, on torch's default stream and on a side stream, with
    torch's stream kept busy before each hand-over; every result checked."""
    g = torch.Generator(device="cuda").manual_seed(46)
    x = torch.rand(2048, 1000, device="cuda", generator=g) * 8 - 4
    side = torch.cuda.Stream()
    for step in range(8):
        stream = side if step % 2 else torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            ballast = busy()
            x = (x * 0.5 + ballast[:2048, :1000] * 0).contiguous()  # written after the ballast on this stream
            tg = cuda.gelu(T(x, cuda))  # trireme reads x after torch wrote it
            got = torch.from_dlpack(tg)  # torch reads trireme's result after trireme wrote it
            assert max_rel(got, gelu64(x)) <= 1e-5, f"gelu, step {step}"
            z = got * 3 - 1  # a torch op on trireme's result
            ts = cuda.softmax(T(z, cuda))
            w = torch.from_dlpack(ts)
            assert max_rel(w, torch.softmax(z.double(), dim=1)) <= 1e-5, f"softmax, step {step}"
            tr = cuda.row_sum(ts)
            rs = torch.from_dlpack(tr)
            err = (rs.double() - w.double().sum(1)).abs()
            assert bool((err <= 1e-6 * w.double().abs().sum(1)).all()), f"row_sum, step {step}"  # docs/ops.md
            x = x + w * 100  # the next step's input depends on every result so far
            torch.testing.assert_close(torch.from_dlpack(cuda.add(T(x, cuda), ts)), x + w, rtol=0, atol=0)


def test_strided_and_offset_views(cuda):
    big = torch.randn(64, 300, device="cuda")
    view = big[3:40, 17:270]  # a data pointer inside the allocation, row stride 300
    out = torch.empty(37, 253, device="cuda")
    got = torch.from_dlpack(cuda.softmax(T(view, cuda), out=T(out, cuda)))
    assert max_rel(got, torch.softmax(view.double(), dim=1)) <= 1e-5


def test_matmul_f16_transposed_operand(cuda):
    a = torch.randn(130, 70, device="cuda", dtype=torch.float16)
    b = torch.randn(90, 70, device="cuda", dtype=torch.float16)  # used as b.T: stored [N, K]
    c = torch.empty(130, 90, device="cuda", dtype=torch.float32)
    got = torch.from_dlpack(cuda.matmul(T(a, cuda), T(b.T, cuda), out=T(c, cuda)))
    ref = a.double() @ b.double().T
    assert ((got.double() - ref).norm() / ref.norm()).item() <= 1e-5


def test_export_back_to_torch(cuda):
    x = torch.randn(4096, device="cuda")
    x0 = x.double()
    t = T(x, cuda)
    back = torch.from_dlpack(t)
    assert back.data_ptr() == x.data_ptr() and back.device == x.device
    cuda.gelu(t, out=t)  # in place: seen through x and through the exported tensor, one memory
    back = torch.from_dlpack(t)  # the hand-over after trireme's write
    assert max_rel(back, gelu64(x0)) <= 1e-5
    assert torch.equal(back, x)


def test_copy_and_device_requests(cuda):
    x = torch.randn(33, 17, device="cuda")
    t = cuda.copy(T(x, cuda))
    c = torch.from_dlpack(t, copy=True)  # a device copy: other memory, same values
    assert c.data_ptr() != t._storage.address() + t.offset and torch.equal(c, x)
    h = torch.from_dlpack(t, device="cpu")  # a host copy
    assert h.device.type == "cpu" and torch.equal(h, x.cpu())


def test_wrap_checks_the_allocation(cuda):
    x = torch.empty(1024, device="cuda")
    lib = trireme._lib.lib()
    import ctypes

    buf = ctypes.c_void_p()
    # 4 KiB of a 4 KiB tensor's allocation is fine; reaching far past the allocation is not
    assert lib.trr_buffer_wrap(cuda._handle, x.data_ptr(), 4096, ctypes.byref(buf)) == 0
    lib.trr_buffer_destroy(buf)
    st = lib.trr_buffer_wrap(cuda._handle, x.data_ptr(), 1 << 40, ctypes.byref(buf))
    assert trireme.core._status_name(st) == "TRR_ERR_OUT_OF_BOUNDS", lib.trr_last_error(cuda._handle)
    st = lib.trr_buffer_wrap(cuda._handle, 0x1000, 64, ctypes.byref(buf))  # not device memory
    assert trireme.core._status_name(st) == "TRR_ERR_INVALID_ARGUMENT", lib.trr_last_error(cuda._handle)
