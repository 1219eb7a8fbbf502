"""CUDA tensors of PyTorch shared with a trireme CUDA context through DLPack (trr_buffer_wrap): no copy in
either direction. Skipped without torch, a CUDA device or trireme's CUDA backend."""

import pytest

import trireme

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch sees no CUDA device", allow_module_level=True)


@pytest.fixture(scope="module")
def cuda():
    try:
        c = trireme.Context(f"cuda:{torch.cuda.current_device()}")
    except trireme.TriremeError as e:
        pytest.skip(f"trireme has no CUDA device: {e}")
    yield c
    c.close()


def test_ops_write_into_torch_memory(cuda):
    x = torch.randn(1000, 129, device="cuda")
    y = torch.randn(1000, 129, device="cuda")
    z = torch.full_like(x, float("nan"))
    torch.cuda.synchronize()
    tz = trireme.from_dlpack(z, cuda)
    assert tz._storage.native + tz.offset == z.data_ptr()
    cuda.add(trireme.from_dlpack(x, cuda), trireme.from_dlpack(y, cuda), out=tz)
    cuda.synchronize()
    assert torch.equal(z, x + y)  # f32 add is bit-exact


def test_strided_and_offset_views(cuda):
    big = torch.randn(64, 300, device="cuda")
    view = big[3:40, 17:270]  # a data pointer inside the allocation, row stride 300
    out = torch.empty(37, 253, device="cuda")
    torch.cuda.synchronize()
    cuda.softmax(trireme.from_dlpack(view, cuda), out=trireme.from_dlpack(out, cuda))
    cuda.synchronize()
    ref = torch.softmax(view.double(), dim=1)
    assert ((out.double() - ref).abs() / ref.abs()).max().item() <= 1e-5


def test_matmul_f16_transposed_operand(cuda):
    a = torch.randn(130, 70, device="cuda", dtype=torch.float16)
    b = torch.randn(90, 70, device="cuda", dtype=torch.float16)  # used as b.T: stored [N, K]
    c = torch.empty(130, 90, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    cuda.matmul(trireme.from_dlpack(a, cuda), trireme.from_dlpack(b.T, cuda), out=trireme.from_dlpack(c, cuda))
    cuda.synchronize()
    ref = a.double() @ b.double().T
    assert ((c.double() - ref).norm() / ref.norm()).item() <= 1e-5


def test_export_back_to_torch(cuda):
    x = torch.randn(4096, device="cuda")
    x0 = x.double()
    torch.cuda.synchronize()
    t = trireme.from_dlpack(x, cuda)
    back = torch.from_dlpack(t)
    assert back.data_ptr() == x.data_ptr() and back.device == x.device
    cuda.gelu(t, out=t)  # in place: seen through x and through the exported tensor, one memory
    cuda.synchronize()
    u = 0.7978845608 * (x0 + 0.044715 * x0 ** 3)
    ref = x0 / (1 + torch.exp(-2 * u))
    assert ((back.double() - ref).abs() / ref.abs().clamp_min(1.1754944e-38)).max().item() <= 1e-5
    assert torch.equal(back, x)


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
