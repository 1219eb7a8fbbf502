# Developer check (not run by ctest): runs kernels/opencl/matmul_mma.cl on PoCL with the warp-level PTX forms
# emulated through local memory (emu.cl), against a float64 reference: the 8-bit float programs (A and B e4m3 or
# e5m2 in every mix, widened to f16 in the kernel) in every layout, aligned and not, batched, odd shapes, every
# output dtype and epilogue, with the per-tensor scales; their special values (NaN, e5m2's infinities, the
# largest finite values, subnormals, signed zeros); and the f16 and bf16 programs' register path alongside.
# Needs pyopencl (pip --target /tmp/pyocl). Usage: python3 matmul_mma.py [--quick]
import os, sys, itertools
sys.path.insert(0, '/tmp/pyocl')
import numpy as np, pyopencl as cl

HERE = os.path.dirname(os.path.abspath(__file__))
K_DIR = os.path.join(HERE, '../../kernels/opencl/')
common = open(K_DIR + 'common.cl').read()
src = open(K_DIR + 'matmul_mma.cl').read()
decl = '__attribute__((aligned(128)));'
assert src.count(decl) == 1
src = src.replace(decl, decl + '\n    __local uint emu_x[THREADS / 32 * 32 * 6];\n    __local ushort *const sm = smem_;')
src = src.replace('#pragma unroll', '')
full = common + '\n' + open(os.path.join(HERE, 'emu.cl')).read() + '\n' + src
ctx = cl.create_some_context(interactive=False)
qu = cl.CommandQueue(ctx)
F32, F16, BF16, E4M3, E5M2 = 0, 1, 2, 4, 5
NAMES = {F32: 'f32', F16: 'f16', BF16: 'bf16', E4M3: 'e4m3', E5M2: 'e5m2'}
progs = {}


def prog(opts):
    key = tuple(sorted(opts.items()))
    if key not in progs:
        o = ' '.join(f'-D{k}={v}' for k, v in opts.items())
        progs[key] = cl.Program(ctx, full).build(options='-cl-std=CL1.2 -DCP_ASYNC=0 -DMMA_PIPE=0 ' + o)
    return progs[key]


# ---- element types: every code's exact value, and rounding float64 to the 16-bit outputs ----
def f8_table(dt):
    out = np.zeros(256)
    for b in range(256):
        s = -1.0 if b & 0x80 else 1.0
        if dt == E5M2:
            out[b] = float(np.array([b << 8], np.uint16).view(np.float16)[0])
        elif (b & 0x7f) == 0x7f:
            out[b] = np.copysign(np.nan, s)
        else:
            e, m = (b >> 3) & 15, b & 7
            out[b] = s * (m * 2.0 ** -9 if e == 0 else 2.0 ** (e - 7) * (1 + m / 8))
    return out


TABLE = {E4M3: f8_table(E4M3), E5M2: f8_table(E5M2)}
FINITE = {dt: np.array([b for b in range(256) if np.isfinite(TABLE[dt][b])], np.uint8) for dt in TABLE}
SUBNORMAL = {E4M3: np.array([b | s for b in range(1, 8) for s in (0, 0x80)], np.uint8),
             E5M2: np.array([b | s for b in range(1, 4) for s in (0, 0x80)], np.uint8)}
BIGGEST = {E4M3: np.array([0x7e, 0xfe], np.uint8), E5M2: np.array([0x7b, 0xfb], np.uint8)}


def round_out(x, dt):
    if dt == F32:
        return x.astype(np.float32).astype(np.float64)
    if dt == F16:
        return x.astype(np.float16).astype(np.float64)
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    r = np.where(np.isnan(x), 0x7fc00000, r).astype(np.uint32)
    return r.view(np.float32).astype(np.float64)


def out_bits(dt):
    return {F32: np.float32, F16: np.uint16, BF16: np.uint16}[dt]


def read_out(raw, dt):
    if dt == F32:
        return raw.astype(np.float64)
    if dt == F16:
        return raw.view(np.float16).astype(np.float64)
    return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def gelu(v):
    with np.errstate(over='ignore'):
        return v / (1 + np.exp(-2 * (0.7978845608 * (v + 0.044715 * v ** 3))))


def epilogue(v, epi, alpha):
    if epi == 1:
        return np.where(v <= 0, 0.0, v)
    if epi == 2:
        return np.where(v >= 0, v, alpha * v)
    if epi == 3:
        return gelu(v)
    return v


rng = np.random.default_rng(7)


def draw(dt, shape, kind):
    """Input codes: 'int' small integers (every sum exact in f32), 'rand' values of every magnitude (subnormals
    included), 'special' that plus a sprinkling of the largest finite values and subnormals."""
    if dt in (F16, BF16):
        x = rng.standard_normal(shape)
        if dt == F16:
            return x.astype(np.float16).view(np.uint16)
        u = x.astype(np.float32).view(np.uint32)
        return (u >> 16).astype(np.uint16)
    if kind == 'int':
        vals = rng.integers(-8, 9, shape).astype(np.float64)
        lut = {v: b for b, v in enumerate(TABLE[dt]) if np.isfinite(v) and v == int(v) and -8 <= v <= 8}
        lut[0.0] = 0
        return np.vectorize(lambda v: lut[v])(vals).astype(np.uint8)
    codes = rng.choice(FINITE[dt], shape)
    # keep magnitudes moderate so that f16 outputs do not overflow: at most 2^3 (e4m3) / 2^4 (e5m2)
    mag = np.abs(TABLE[dt][codes])
    codes = np.where(mag > (8 if dt == E4M3 else 16), codes & 0x80, codes).astype(np.uint8)
    if kind == 'special':
        flat = codes.reshape(-1)
        n = flat.size
        idx = rng.choice(n, max(1, n // 8), replace=False)
        flat[idx] = rng.choice(SUBNORMAL[dt], idx.size)
        idx = rng.choice(n, max(1, n // 64), replace=False)
        flat[idx] = rng.choice(BIGGEST[dt], idx.size)
        flat[rng.choice(n, 2, replace=False)] = [0x00, 0x80]
    return codes


def value(codes, dt):
    if dt == F16:
        return codes.view(np.float16).astype(np.float64)
    if dt == BF16:
        return (codes.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return TABLE[dt][codes]


def store(mat, trans, ld, off, batch, bstride, rows, cols, fill):
    """A [batch, rows, cols] operand as stored: transposed if trans, leading dimension ld, first element at off."""
    srows, scols = (cols, rows) if trans else (rows, cols)
    total = off + (batch - 1) * bstride + (srows - 1) * ld + scols + 16
    buf = np.full(total, fill, mat.dtype)
    for b in range(batch):
        m = mat[b].T if trans else mat[b]
        for r in range(srows):
            base = off + b * bstride + r * ld
            buf[base:base + scols] = m[r]
    return buf


def case(xd, yd, zd, M, N, K, ta, tb, tile, batch=1, pad=0, off=0, epi=0, alpha=0.01, sa=1.0, sb=1.0,
         kind='rand', nan_a=(), nan_b=(), inf_a=()):
    BM, BN, BK, WM, WN = tile
    f8 = xd in (E4M3, E5M2)
    el = np.uint8 if f8 else np.uint16
    a = draw(xd, (batch, M, K), kind)
    b = draw(yd, (batch, K, N), kind)
    for (bb, i, k) in nan_a:
        a[bb, i, k] = 0xff if xd == E4M3 else 0x7e
    for (bb, k, j) in nan_b:
        b[bb, k, j] = 0x7f if yd == E4M3 else 0xfe
    for (bb, i, k, neg) in inf_a:
        a[bb, i, k] = 0xfc if neg else 0x7c
    av, bv = value(a, xd), value(b, yd)
    with np.errstate(invalid='ignore', over='ignore'):
        ref = np.einsum('bik,bkj->bij', av, bv) if K else np.zeros((batch, M, N))
        # NaN products where an infinity meets a zero, as IEEE sums them (einsum does too)
        ref = ref * sa * sb
        ref = epilogue(ref, epi, alpha)
    want = round_out(ref, zd)
    # stored operands: leading dimensions padded by `pad`, offset `off` elements, batches one after the other
    lda = (M if ta else K) + pad
    ldb = (K if tb else N) + pad
    asz = (K if ta else M) * lda
    bsz = (N if tb else K) * ldb
    nanbyte = {E4M3: 0x7f, E5M2: 0x7e, F16: 0x7e00, BF16: 0x7fc0}
    abuf = store(a, ta, lda, off, batch, asz, M, K, nanbyte[xd])
    bbuf = store(b, tb, ldb, off, batch, bsz, K, N, nanbyte[yd])
    ldc = N + pad
    csz = M * ldc
    craw = np.full(off + batch * csz + 16, 0x7e7e if zd != F32 else np.nan, out_bits(zd))
    mf = cl.mem_flags
    ba = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=abuf)
    bb_ = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=bbuf)
    bc = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=craw)
    esz = 1 if f8 else 2
    vec_unit = 8
    va = int(lda % vec_unit == 0 and off % vec_unit == 0 and asz % vec_unit == 0)
    vb = int(ldb % vec_unit == 0 and off % vec_unit == 0 and bsz % vec_unit == 0)
    cpair = int(ldc % 2 == 0 and off % 2 == 0 and csz % 2 == 0)
    opts = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, WARPS_M=WM, WARPS_N=WN, STAGES=2, TRANS_A=ta,
                TRANS_B=tb, X_DT=xd, Y_DT=yd, Z_DT=zd, VEC_A=va, VEC_B=vb)
    kern = cl.Kernel(prog(opts), 'matmul_mma')
    L, I = np.int64, np.int32
    tiles = -(-M // BM) * -(-N // BN)
    threads = WM * WN * 32
    kern(qu, (tiles * threads, 1, batch), (threads, 1, 1), ba, L(off), I(lda), bb_, L(off), I(ldb), bc, L(off),
         I(ldc), I(M), I(N), I(K), I(epi), np.float32(alpha), L(asz), L(bsz), L(csz), I(cpair),
         np.float32(sa * sb))
    cl.enqueue_copy(qu, craw, bc)
    qu.finish()
    got = np.zeros((batch, M, N))
    for bq in range(batch):
        for r in range(M):
            base = off + bq * csz + r * ldc
            got[bq, r] = read_out(craw[base:base + N], zd)
    # everything around the views untouched
    mask = np.ones(craw.size, bool)
    for bq in range(batch):
        for r in range(M):
            base = off + bq * csz + r * ldc
            mask[base:base + N] = False
    poison = craw[mask]
    guard_ok = np.all(np.isnan(poison)) if zd == F32 else np.all(poison == 0x7e7e)
    nan_ok = np.array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    inf_ok = np.array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)]) and np.all(np.isfinite(got[fin]))
    g, w = got[fin], want[fin]
    if kind == 'int' and zd == F32:
        err = np.abs(g - w).max(initial=0.0)
        ok_vals = err == 0
        what = f'max |err| {err:g} (exact wanted)'
    else:
        ref_fin = ref[fin]
        rms = np.sqrt(np.mean(ref_fin ** 2)) if ref_fin.size else 0.0
        frob = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-300)
        bound = {F32: 1e-5, F16: 2e-3, BF16: 8e-3}[zd]
        rel = {F32: 1e-5, F16: 1e-2, BF16: 4e-2}[zd]
        floor = max(2.0 ** -10 * rms / rel, 1e-300)
        elem = (np.abs(g - w) / np.maximum(np.abs(w), floor)).max(initial=0.0)
        ok_vals = frob <= bound * 4 and elem <= rel * 4
        what = f'frob {frob:.2e} elem {elem:.2e}'
    ok = guard_ok and nan_ok and inf_ok and ok_vals
    print(f"{'ok ' if ok else 'BAD'} {NAMES[xd]}x{NAMES[yd]}->{NAMES[zd]} {batch}x{M}x{N}x{K} ta{ta} tb{tb} "
          f"tile{BM}x{BN}x{BK}/{WM}x{WN} pad{pad} off{off} vec{va}{vb} epi{epi} s{sa * sb:g} {kind}: {what}"
          f"{'' if nan_ok else ' NaN-mismatch'}{'' if inf_ok else ' inf-mismatch'}{'' if guard_ok else ' guard'}",
          flush=True)
    return ok


quick = '--quick' in sys.argv
allok = True
F8S = [(E4M3, E4M3), (E5M2, E4M3), (E4M3, E5M2), (E5M2, E5M2)]
T32 = (32, 32, 16, 1, 1)
T64 = (64, 64, 32, 2, 2)
T128 = (128, 128, 32, 2, 2)
# every pair and layout on the small tile: exact integer sums into f32, then random values into each output
for (xd, yd), ta, tb in itertools.product(F8S, (0, 1), (0, 1)):
    allok &= case(xd, yd, F32, 37, 45, 53, ta, tb, T32, kind='int')
    if not quick:
        allok &= case(xd, yd, BF16, 40, 33, 70, ta, tb, T32, kind='special', sa=0.5, sb=3.0)
# the default tiles, odd shapes, padding, offsets (unaligned: the byte-by-byte loads), batches, epilogues
for (xd, yd), zd in zip(F8S[:3], (BF16, F16, F32)):
    for ta, tb in ((0, 1), (0, 0), (1, 1), (1, 0)):
        allok &= case(xd, yd, zd, 130, 140, 75, ta, tb, T64, kind='special', epi=ta + 2 * tb, sa=0.125, sb=2.0)
        if quick:
            break
# whole 8-byte rows in every layout: the one-load path
for ta, tb in itertools.product((0, 1), (0, 1)):
    allok &= case(E4M3, E4M3, BF16, 136, 120, 80, ta, tb, T64, kind='special')
    if quick:
        break
allok &= case(E4M3, E4M3, BF16, 129, 131, 96, 0, 1, T128, kind='rand')
allok &= case(E4M3, E4M3, F32, 129, 131, 96, 0, 1, T128, kind='int')
allok &= case(E5M2, E4M3, F16, 70, 66, 41, 0, 1, T64, batch=3, pad=3, off=5, epi=1, kind='special')
allok &= case(E4M3, E5M2, BF16, 70, 66, 41, 1, 0, T64, batch=2, pad=8, off=8, epi=3, sa=4.0, kind='special')
allok &= case(E4M3, E4M3, F32, 1, 1, 1, 0, 1, T32, kind='int')
allok &= case(E4M3, E4M3, F16, 17, 3, 0, 0, 1, T32, kind='rand')
# special values: NaN in A (a row of C) and in B (a column), e5m2 infinities (a row of ±inf, NaN where they meet a
# zero or each other's sign)
allok &= case(E4M3, E4M3, BF16, 50, 40, 64, 0, 1, T64, kind='special', nan_a=[(0, 3, 10)], nan_b=[(0, 20, 7)])
allok &= case(E4M3, E5M2, F32, 50, 40, 64, 1, 0, T64, kind='special', nan_a=[(0, 49, 63)], nan_b=[(0, 0, 39)])
allok &= case(E5M2, E4M3, F16, 33, 20, 48, 0, 1, T32, kind='int', inf_a=[(0, 5, 7, 0), (0, 9, 1, 1)])
allok &= case(E5M2, E4M3, F32, 33, 20, 48, 0, 0, T32, kind='int', inf_a=[(0, 5, 7, 0), (0, 5, 8, 1)])
# the f16 and bf16 programs on the register path (no cp.async), as devices without it run them
allok &= case(F16, F16, F32, 70, 66, 41, 0, 1, T64, kind='rand')
allok &= case(BF16, BF16, BF16, 70, 66, 41, 1, 0, T64, kind='rand')
print('ALL OK' if allok else 'FAILURES')
sys.exit(0 if allok else 1)
