"""trireme.torch: trireme's ops as torch.library custom ops on CPU tensors and, where torch sees one, CUDA tensors:
values against float64 references with docs/ops.md's bounds, torch.library.opcheck for each (schema, fake
implementation, torch.compile's dispatch), and a torch.compile'd function that calls them. Skipped, with the
reason, without torch or with a torch older than torch.library.opcheck (2.4)."""

import pytest

import trireme

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "opcheck"):
    pytest.skip(f"torch.library.opcheck needs torch 2.4 or later; this is {torch.__version__}",
                allow_module_level=True)
import trireme.torch as ttorch  # noqa: E402  (after the skips: it needs torch.library.custom_op)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    try:
        ttorch.context(request.param)
    except trireme.TriremeError as e:
        pytest.skip(f"trireme has no {request.param} device: {e}")
    return request.param


def rand(shape, device, dtype=torch.float32, lo=-4.0, hi=4.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype).to(device)


def max_rel(got, ref):
    return ((got.double() - ref).abs() / ref.abs().clamp_min(1.1754944e-38)).max().item()


def frob(got, ref):
    return ((got.double() - ref).norm() / ref.norm()).item()


def gelu64(x):
    x = x.double()
    return x / (1 + torch.exp(-2 * 0.7978845608 * (x + 0.044715 * x ** 3)))


def cases(device):
    """(op name, args, float64 reference, check) for each op of trireme.torch."""
    x = rand((17, 127), device, seed=1)
    y = rand((17, 127), device, seed=2)
    w = rand((127,), device, lo=0.5, hi=2.0, seed=3)
    b = rand((127,), device, seed=4)
    a16 = rand((33, 70), device, torch.float16, -1, 1, seed=5)
    b16 = rand((70, 45), device, torch.float16, -1, 1, seed=6)
    img = (rand((3, 9, 13), device, lo=0, hi=255.99, seed=7)).to(torch.uint8)
    xd = x.double()
    mean = xd.mean(1, keepdim=True)
    var = ((xd - mean) ** 2).mean(1, keepdim=True)
    mm = a16.double() @ b16.double()
    return [
        ("copy", (x,), lambda: xd, lambda g, r: torch.equal(g.double(), r)),
        ("add", (x, y), lambda: (x + y).double(), lambda g, r: torch.equal(g.double(), r)),
        ("gelu", (x,), lambda: gelu64(x), lambda g, r: max_rel(g, r) <= 1e-5),
        ("silu", (x,), lambda: xd / (1 + torch.exp(-xd)), lambda g, r: max_rel(g, r) <= 1e-5),
        ("softmax", (x,), lambda: torch.softmax(xd, 1), lambda g, r: max_rel(g, r) <= 1e-5),
        ("row_sum", (x,), lambda: xd.sum(1),
         lambda g, r: g.dtype == torch.float32 and bool(((g.double() - r).abs() <= 1e-6 * xd.abs().sum(1)).all())),
        ("rms_norm", (x, w, 1e-6), lambda: xd / torch.sqrt((xd ** 2).mean(1, keepdim=True) + 1e-6) * w.double(),
         lambda g, r: max_rel(g, r) <= 1e-5),
        ("layer_norm", (x, w, b, 1e-5), lambda: (xd - mean) / torch.sqrt(var + 1e-5) * w.double() + b.double(),
         lambda g, r: (g.double() - r).abs().max().item() <= 1e-5 * (1 + r.abs().max().item())),
        ("matmul", (a16, b16, "leaky_relu", 0.1, False, False), lambda: torch.where(mm > 0, mm, 0.1 * mm),
         lambda g, r: g.dtype == torch.float16 and frob(g, r) <= 2e-3),
        ("matmul", (a16, b16, "none", 0.01, False, True), lambda: mm,
         lambda g, r: g.dtype == torch.float32 and frob(g, r) <= 1e-5),
        ("rgb_to_grey", (img, True), lambda: (0.2989 * img[0].double() + 0.5870 * img[1].double()
                                              + 0.1140 * img[2].double()),
         lambda g, r: g.shape == r.shape and max_rel(g, r) <= 1e-5),
    ]


def test_values(device):
    for name, args, ref, check in cases(device):
        got = getattr(torch.ops.trireme, name)(*args)
        assert got.device.type == device
        assert check(got, ref()), f"{name} on {device}"


def test_opcheck(device):
    for name, args, _, _ in cases(device):
        torch.library.opcheck(getattr(torch.ops.trireme, name).default, args)


def test_inside_torch_compile(device):
    x = rand((64, 100), device, seed=9)
    w = rand((100,), device, lo=0.5, hi=2.0, seed=10)

    def block(x, w):
        h = torch.ops.trireme.rms_norm(x, w, 1e-6)
        return torch.ops.trireme.softmax(torch.ops.trireme.gelu(h) * 2.0)

    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    xd, wd = x.double(), w.double()
    h = xd / torch.sqrt((xd ** 2).mean(1, keepdim=True) + 1e-6) * wd
    ref = torch.softmax(gelu64(h.float()) * 2.0, 1)
    assert max_rel(compiled(x, w), ref) <= 1e-4


def test_cuda_ops_follow_torchs_stream():
    """On a side stream kept busy, each op waits for torch's work and torch for the op: no synchronize."""
    if "cuda" not in DEVICES:
        pytest.skip("torch sees no CUDA device")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.rand(2048, 1024, device="cuda") * 8 - 4
        for step in range(6):
            m = torch.randn(4096, 4096, device="cuda")
            m = m @ m  # keeps the stream busy before x's update
            x = x * 0.5 + m[:2048, :1024] * 0
            y = torch.ops.trireme.gelu(x)
            assert max_rel(y, gelu64(x)) <= 1e-5, step
            x = torch.ops.trireme.add(y, x)
            assert torch.equal(x, (y + (x - y)))
