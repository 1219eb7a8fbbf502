# Developer check (not run by ctest): runs kernels/opencl/attention_decode_mma.cl on PoCL with the warp-level PTX
# forms emulated through local memory (emu.cl), against a float64 reference. Needs pyopencl (pip --target /tmp/pyocl).
import sys, re, itertools
sys.path.insert(0, '/tmp/pyocl')
import numpy as np, pyopencl as cl
K = __import__('os').path.join(__import__('os').path.dirname(__file__), '../../kernels/opencl/')
common = open(K + 'common.cl').read()
src = open(K + 'attention_decode_mma.cl').read()
src = src.replace('__attribute__((aligned(128)));', '__attribute__((aligned(128)));\n    __local uint emu_x[32 * 6];', 1)
src = src.replace('#pragma unroll', '')
full = common + '\n' + open(__import__('os').path.join(__import__('os').path.dirname(__file__), 'emu.cl')).read() + '\n' + src
ctx = cl.create_some_context(interactive=False)
qu = cl.CommandQueue(ctx)
progs = {}
def prog(D, BN, ST, dt):
    key = (D, BN, ST, dt)
    if key not in progs:
        progs[key] = cl.Program(ctx, full).build(options=f'-cl-std=CL1.2 -I {K} -DHEAD_DIM={D} -DBLOCK_N={BN} -DSTAGES={ST} -DX_DT={dt} -DCP_ASYNC=0')
    return progs[key]
def tobits(x, dt):
    if dt == 1: return x.astype(np.float16).view(np.uint16)
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
def frombits(u, dt):
    if dt == 1: return u.view(np.float16).astype(np.float64)
    return (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
rng = np.random.default_rng(1)
def case(B, Hq, Hkv, Sq, Skv, D, causal, nsplit_req, BN, ST, dt, scale=None, big=False):
    G = Hq // Hkv
    scale = 1 / np.sqrt(D) if scale is None else scale
    mag = 8 if big else 1
    qb = tobits(rng.standard_normal((B, Hq, Sq, D)) * mag, dt); kb = tobits(rng.standard_normal((B, Hkv, Skv, D)) * mag, dt)
    vb = tobits(rng.standard_normal((B, Hkv, Skv, D)), dt)
    q, k, v = frombits(qb, dt), frombits(kb, dt), frombits(vb, dt)
    # reference
    ref = np.zeros((B, Hq, Sq, D)); rlse = np.full((B, Hq, Sq), -np.inf)
    for bb in range(B):
        for h in range(Hq):
            s = q[bb, h] @ k[bb, h // G].T * scale
            if causal:
                i = np.arange(Sq)[:, None]; j = np.arange(Skv)[None, :]
                s = np.where(j <= i + Skv - Sq, s, -np.inf)
            m = s.max(1, keepdims=True); ok = np.isfinite(m[:, 0])
            m = np.where(np.isfinite(m), m, 0); p = np.exp(s - m); l = p.sum(1)
            ref[bb, h] = np.where(ok[:, None], (p @ v[bb, h // G]) / np.where(l > 0, l, 1)[:, None], 0)
            rlse[bb, h] = np.where(ok, np.log(np.where(l > 0, l, 1)) + m[:, 0], -np.inf)
    keys = -(-(-(-Skv // nsplit_req)) // BN) * BN; nsplit = -(-Skv // keys)
    rows = B * Hq * Sq
    mf = cl.mem_flags
    bq = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=qb); bk = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=kb); bv = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=vb)
    ob = np.zeros((B, Hq, Sq, D), np.uint16); bo = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=ob)
    lse = np.zeros((B, Hq, Sq), np.float32); bl = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=lse)
    part = np.zeros(nsplit * rows * D, np.float32); bp = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=part)
    pl = np.zeros(nsplit * rows, np.float32); bpl = cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=pl)
    kern = prog(D, BN, ST, dt).attention_decode_mma
    L = np.int64; I = np.int32
    views = [L(0), L(Hq*Sq*D), L(Sq*D), L(D), L(0), L(Hkv*Skv*D), L(Skv*D), L(D), L(0), L(Hkv*Skv*D), L(Skv*D), L(D),
             L(0), L(Hq*Sq*D), L(Sq*D), L(D), L(0), L(Hq*Sq), L(Sq), L(1)]
    args = [bq, bk, bv, bo, bl, bp, bpl] + views + [I(Hq), I(G), I(Sq), I(Skv), I(causal), I(1), I(nsplit), I(keys), I(nsplit > 1), np.float32(scale * 1.4426950408889634)]
    rb = -(-(G * Sq) // 16)
    kern(qu, (rb * 32, Hkv, B * nsplit), (32, 1, 1), *args)
    cl.enqueue_copy(qu, ob, bo); cl.enqueue_copy(qu, lse, bl); cl.enqueue_copy(qu, part, bp); cl.enqueue_copy(qu, pl, bpl); qu.finish()
    if nsplit == 1:
        out = frombits(ob, dt); olse = lse.astype(np.float64)
    else:
        part = part.reshape(nsplit, rows, D).astype(np.float64); pl = pl.reshape(nsplit, rows).astype(np.float64)
        M = pl.max(0); okm = np.isfinite(M); Ms = np.where(okm, M, 0)
        w = np.where(np.isfinite(pl), np.exp2(pl - Ms), 0); tot = w.sum(0)
        out = np.where(okm[:, None], (w[:, :, None] * part).sum(0) / np.where(tot > 0, tot, 1)[:, None], 0).reshape(B, Hq, Sq, D)
        olse = np.where(okm, (Ms + np.log2(np.where(tot > 0, tot, 1))) * np.log(2), -np.inf).reshape(B, Hq, Sq)
    err = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-30)
    le = np.where(np.isfinite(rlse), np.abs(olse - rlse), np.where(olse == rlse, 0, np.inf)).max()
    ok = err < (2e-2 if dt == 2 else 4e-3) and le < 1e-3
    print(f"{'ok ' if ok else 'BAD'} B{B} Hq{Hq} Hkv{Hkv} Sq{Sq} Skv{Skv} D{D} causal{causal} split{nsplit} keys{keys} BN{BN} ST{ST} dt{dt}: err {err:.2e} lse {le:.2e}", flush=True)
    return ok
allok = True
for c in [
    (2, 8, 2, 1, 100, 128, 0, 1, 16, 4, 1),
    (2, 8, 2, 1, 1000, 128, 0, 3, 16, 4, 1),
    (1, 8, 1, 1, 77, 64, 0, 2, 16, 2, 2),
    (1, 4, 4, 1, 333, 128, 1, 4, 32, 2, 1),
    (1, 8, 2, 3, 200, 64, 1, 3, 16, 3, 1),
    (1, 32, 2, 1, 150, 64, 0, 2, 16, 4, 2),
    (1, 16, 2, 3, 150, 64, 1, 5, 16, 4, 1),
    (1, 4, 1, 5, 5, 64, 1, 2, 16, 4, 1),
    (1, 2, 1, 4, 2, 64, 1, 1, 16, 2, 2),
]:
    allok &= case(*c)
allok &= case(1, 8, 2, 1, 300, 128, 0, 2, 16, 4, 1, big=True)
allok &= case(1, 8, 2, 1, 300, 64, 0, 2, 16, 4, 2, scale=-0.3)
print('ALL OK' if allok else 'FAILURES')
