/* attention (docs/ops.md, attention) on NVIDIA tensor cores: a FlashAttention-2 forward issued as inline PTX
 * (mma.sync m16n8k16, f16 or bf16 inputs, f32 accumulation; ldmatrix from local memory; shfl.sync for the row
 * statistics, which OpenCL 1.2 has no sub-group shuffle for). Only NVIDIA's OpenCL compiler takes it: the backend
 * selects the variant "mma" only where matmul_mma.cl's probe (backend_opencl/mma_probe.c, the same instruction
 * forms) computed right; attention.cl runs elsewhere, and for f32, unaligned views and other head dims.
 *
 * A work-group of BLOCK_M / 16 warps takes BLOCK_M query rows of one head (batch b, query head h, kv head
 * h / group); each warp owns 16 rows, whose q fragments it holds in registers for the whole key loop. Per block of
 * BLOCK_N keys:
 *   1. the work-items copy K and V (raw 16-bit patterns) into local memory in 16-byte chunks, zero past the keys
 *      any row of the work-group sees (a zero V row keeps 0·V finite where a masked weight is 0). With cp.async
 *      the copies overlap the math: V's during Q·Kᵀ and the softmax, the next block's K during P·V (one tile of
 *      each, two barriers a block);
 *   2. each warp computes its 16 x BLOCK_N scores S = Q·Kᵀ in registers (ldmatrix of K rows gives the col-major B
 *      fragments directly), scales them by scale·log2 e, and sets a key the row does not see (past Skv, or past
 *      the causal diagonal j <= i + Skv - Sq) to -inf;
 *   3. the online softmax in base 2 (ex2.approx through native_exp2: a relative error of about 2^-22, within
 *      what the two-part P of step 4 keeps; ex2.approx(-inf) is +0), per row: a lane holds two rows (lane / 4 and
 *      lane / 4 + 8) and reduces their block maximum over its quad with shfl.sync; weights p = 2^(s - m_new) (from 0, not -inf, while the row has
 *      seen no key: 2^-inf = 0 and no -inf - (-inf)); the lane's partial row sums and the O accumulator are
 *      rescaled by 2^(m_old - m_new); the quad's partial sums are added once, after the loop;
 *   4. P, as two 16-bit parts (pack_lo), is repacked from the S accumulator layout into A fragments (the m16n8k16
 *      C layout of two adjacent n8 tiles is the A layout of one k16 step) and O += P·V (ldmatrix.trans of V).
 * The epilogue divides by l, rounds once (cvt.rn.{f16,bf16}x2), writes o pairs through its strides, and
 * lse = (m + log2 l)·ln 2; a row without keys gets o = 0, lse = -inf.
 * Local rows are padded by 16 bytes, so the eight rows an ldmatrix phase reads fall in distinct banks.
 * Build options: HEAD_DIM (64 or 128), BLOCK_M (16·warps), BLOCK_N (multiple of 16), X_DT (1 f16, 2 bf16),
 * ADDR_MODE (as matmul_mma.cl: how a __local pointer becomes a shared-window address, as the probe found),
 * CP_ASYNC (1 where the probe found cp.async works: copies in flight; 0: through registers).
 * The host passes q with even element offsets and strides (4-byte fragment loads), k and v with multiples of 8
 * (16-byte chunks), o with even ones (pair stores). */

#if X_DT == DT_BF16
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#define CVT_PAIR "cvt.rn.bf16x2.f32 %0, %1, %2;"
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#define CVT_PAIR "cvt.rn.f16x2.f32 %0, %1, %2;"
#endif

#define WARPS (BLOCK_M / 16)
#define THREADS (WARPS * 32)
#define LROW (HEAD_DIM + 8)         /* halves per local row of K and V (16 bytes of padding) */
#define NT (BLOCK_N / 8)            /* n8 tiles of S per warp */
#define OT (HEAD_DIM / 8)           /* n8 tiles of O per warp */
#define QK_STEPS (HEAD_DIM / 16)    /* k16 steps of Q·Kᵀ */
#define PV_STEPS (BLOCK_N / 16)     /* k16 steps of P·V */
#define CHUNKS_ROW (HEAD_DIM / 8)   /* 16-byte chunks per key row */
#define LN2 0.69314718055994530942f

#if ADDR_MODE == 1
static inline uint smem_addr(__local const void *p) {
    ulong s;
    asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"((ulong)p));
    return (uint)s;
}
#else
static inline uint smem_addr(__local const void *p) { return (uint)(ulong)p; }
#endif

/* four 8x8 b16 matrices; lane l gives the row address of matrix l / 8, row l % 8 */
#define LDSM_X4(r, addr)                                                                                       \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"                             \
                 : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])                                      \
                 : "r"(addr))
#define LDSM_X4_T(r, addr)                                                                                     \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"                       \
                 : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])                                      \
                 : "r"(addr))
/* d (4 f32) += a (16x16, 4 regs) · b (16x8, 2 regs) */
#define MMA(d, a, b0, b1)                                                                                      \
    asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                             \
                 : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3])                                      \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"(b0), "r"(b1))

/* v0 in the low half, v1 in the high, each rounded to nearest even */
static inline uint pack_pair(float v0, float v1) {
    uint w;
    asm volatile(CVT_PAIR : "=r"(w) : "f"(v1), "f"(v0));
    return w;
}

/* the two weights of a packed pair back in f32 (exact: bf16 is f32's top half; f16 through cvt) */
static inline float2 unpack_pair(uint w) {
#if X_DT == DT_BF16
    return (float2)(as_float(w << 16), as_float(w & 0xffff0000u));
#else
    float a, b;
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
        : "=f"(a), "=f"(b) : "r"(w));
    return (float2)(a, b);
#endif
}

/* P's A fragment as two 16-bit parts: hi the weights rounded once, lo what that rounding left (rounded in turn),
 * so P·V = hi·V + lo·V keeps ~22 (f16) or ~16 (bf16) bits of each weight. One rounding puts 2^-12 (f16) or 2^-9
 * (bf16) of each weight into o, which elements of o that cancel to near zero cannot absorb within docs/ops.md's
 * element bound for half outputs (the CUDA kernels split the weights the same way). */
static inline uint pack_lo(float v0, float v1, uint hi) {
    const float2 h = unpack_pair(hi);
    return pack_pair(v0 - h.x, v1 - h.y);
}

/* v from the lane whose index differs from this one's by the bits of m (all 32 lanes take part) */
static inline float shfl_xor(float v, int m) {
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(as_uint(v)), "r"(m));
    return as_float(r);
}

static inline float quad_max(float v) {
    v = fmax(v, shfl_xor(v, 1));
    return fmax(v, shfl_xor(v, 2));
}

static inline float quad_sum(float v) {
    v += shfl_xor(v, 1);
    return v + shfl_xor(v, 2);
}

#if CP_ASYNC
#define CP_WAIT_ALL() asm volatile("cp.async.wait_group 0;" ::: "memory")
#else
#define CP_WAIT_ALL()
#endif

/* Starts the copy of keys j0.. of K or V (rows `stride` apart from base) into a local tile (`at` its shared-window
 * address): cp.async of 16-byte chunks, the rows at and past kend zero-filled (one commit group); without cp.async
 * through registers, done on return. */
static inline void load_block(__local ushort *tile, uint at, __global const ushort *base, long stride, int j0,
                              int kend, int tid) {
    for (int e = tid; e < BLOCK_N * CHUNKS_ROW; e += THREADS) {
        const int row = e / CHUNKS_ROW, col = (e % CHUNKS_ROW) * 8, in = j0 + row < kend;
        __global const ushort *src = in ? base + (long)(j0 + row) * stride + col : base;
#if CP_ASYNC
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(at + (uint)((row * LROW + col) * 2)),
                     "l"(src), "r"(in ? 16 : 0)
                     : "memory");
#else
        *(__local uint4 *)(tile + row * LROW + col) = in ? *(__global const uint4 *)src : (uint4)(0u);
#endif
    }
#if CP_ASYNC
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void attention_mma(
    __global const ushort *q, __global const ushort *k, __global const ushort *v, __global ushort *o,
    __global float *lse, long qo, long qb, long qh, long qs, long ko, long kb, long kh, long ks, long vo, long vb,
    long vh, long vs, long oo, long ob, long oh, long os, long lo, long lb, long lh, long ls, int group, int Sq,
    int Skv, int causal, int has_lse, float qscale) {
    __local ushort kt[BLOCK_N * LROW] __attribute__((aligned(128)));
    __local ushort vt[BLOCK_N * LROW] __attribute__((aligned(128)));
    const int tid = (int)get_local_id(0), lane = tid % 32, warp = tid / 32;
    const int h = (int)get_group_id(1), b = (int)get_group_id(2), g = h / group;
    /* the last query block first: under causal it has the most keys, and a late start would leave a tail */
    const int i0 = ((int)get_num_groups(0) - 1 - (int)get_group_id(0)) * BLOCK_M;
    const int wrow = i0 + warp * 16;     /* the warp's first row */
    const int r0 = wrow + lane / 4;      /* this lane's rows: r0 and r0 + 8 */
    const int c2 = (lane % 4) * 2;       /* its column pair within an n8 tile */
    const int in0 = r0 < Sq, in1 = r0 + 8 < Sq;

    /* q's A fragments: {row r0, cols c2..}, {r0 + 8, c2..}, {r0, c2 + 8..}, {r0 + 8, c2 + 8..} per k16 step */
    uint qa[QK_STEPS][4];
    {
        const long qrow = qo + (long)b * qb + (long)h * qh;
        __global const ushort *q0 = q + qrow + (long)(in0 ? r0 : 0) * qs;
        __global const ushort *q1 = q + qrow + (long)(in1 ? r0 + 8 : 0) * qs;
#pragma unroll
        for (int kk = 0; kk < QK_STEPS; kk++) {
            qa[kk][0] = in0 ? *(__global const uint *)(q0 + kk * 16 + c2) : 0u;
            qa[kk][1] = in1 ? *(__global const uint *)(q1 + kk * 16 + c2) : 0u;
            qa[kk][2] = in0 ? *(__global const uint *)(q0 + kk * 16 + 8 + c2) : 0u;
            qa[kk][3] = in1 ? *(__global const uint *)(q1 + kk * 16 + 8 + c2) : 0u;
        }
    }

    float acc[OT][4];
#pragma unroll
    for (int t = 0; t < OT; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    /* the keys any row of the work-group sees: up to the last row's limit under causal */
    const int last = min(i0 + BLOCK_M, Sq) - 1;
    const int kend = causal ? clamp(last + Skv - Sq + 1, 0, Skv) : Skv;
    /* the last key each of this lane's rows sees, and the least of the warp's (a block past it needs the mask) */
    const int lim0 = causal ? min(r0 + Skv - Sq, Skv - 1) : Skv - 1;
    const int lim1 = causal ? min(r0 + 8 + Skv - Sq, Skv - 1) : Skv - 1;
    const int wlim = causal ? min(wrow + Skv - Sq, Skv - 1) : Skv - 1;
    __global const ushort *kbase = k + ko + (long)b * kb + (long)g * kh;
    __global const ushort *vbase = v + vo + (long)b * vb + (long)g * vh;
    const uint kaddr = smem_addr(kt), vaddr = smem_addr(vt);
    /* ldmatrix row addresses (bytes from the tile's start, before the step offsets):
     * K, not transposed: matrices {keys 0-7, d 0-7}, {keys 0-7, d 8-15}, {keys 8-15, d 0-7}, {keys 8-15, d 8-15},
     *   i.e. the b fragments of two n8 key tiles for one k16 step of d;
     * V, transposed: {keys 0-7, d 0-7}, {keys 8-15, d 0-7}, {keys 0-7, d 8-15}, {keys 8-15, d 8-15},
     *   i.e. the b fragments of two n8 tiles of d for one k16 step of keys. */
    const uint koff = (uint)((((lane % 8) + (lane / 16) * 8) * LROW + ((lane / 8) % 2) * 8) * 2);
    const uint voff = (uint)((((lane % 8) + ((lane / 8) % 2) * 8) * LROW + (lane / 16) * 8) * 2);

    if (kend > 0) load_block(kt, kaddr, kbase, ks, 0, kend, tid);
    for (int j0 = 0; j0 < kend; j0 += BLOCK_N) {
        CP_WAIT_ALL();
        barrier(CLK_LOCAL_MEM_FENCE); /* this block's K is in place; every warp is done with the last block's V */
        load_block(vt, vaddr, vbase, vs, j0, kend, tid); /* in flight during Q·Kᵀ and the softmax */

        float s[NT][4];
#pragma unroll
        for (int t = 0; t < NT; t++) s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < QK_STEPS; kk++) {
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint kf[4];
                LDSM_X4(kf, kaddr + koff + (uint)((np * 16 * LROW + kk * 16) * 2));
                MMA(s[2 * np], qa[kk], kf[0], kf[1]);
                MMA(s[2 * np + 1], qa[kk], kf[2], kf[3]);
            }
        }
#pragma unroll
        for (int t = 0; t < NT; t++) {
            s[t][0] *= qscale;
            s[t][1] *= qscale;
            s[t][2] *= qscale;
            s[t][3] *= qscale;
        }
        if (j0 + BLOCK_N - 1 > wlim) { /* some key of the block is past a row's limit */
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int jj = j0 + t * 8 + c2;
                if (jj > lim0) s[t][0] = -INFINITY;
                if (jj + 1 > lim0) s[t][1] = -INFINITY;
                if (jj > lim1) s[t][2] = -INFINITY;
                if (jj + 1 > lim1) s[t][3] = -INFINITY;
            }
        }

        float bm0 = -INFINITY, bm1 = -INFINITY;
#pragma unroll
        for (int t = 0; t < NT; t++) {
            bm0 = fmax(bm0, fmax(s[t][0], s[t][1]));
            bm1 = fmax(bm1, fmax(s[t][2], s[t][3]));
        }
        const float mn0 = fmax(m0, quad_max(bm0)), mn1 = fmax(m1, quad_max(bm1));
        const float base0 = mn0 == -INFINITY ? 0.0f : mn0, base1 = mn1 == -INFINITY ? 0.0f : mn1;
        const float a0 = native_exp2(m0 - base0), a1 = native_exp2(m1 - base1);
        m0 = mn0;
        m1 = mn1;
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int t = 0; t < NT; t++) {
            s[t][0] = native_exp2(s[t][0] - base0);
            s[t][1] = native_exp2(s[t][1] - base0);
            s[t][2] = native_exp2(s[t][2] - base1);
            s[t][3] = native_exp2(s[t][3] - base1);
            sum0 += s[t][0] + s[t][1];
            sum1 += s[t][2] + s[t][3];
        }
        l0 = l0 * a0 + sum0;
        l1 = l1 * a1 + sum1;
#pragma unroll
        for (int t = 0; t < OT; t++) {
            acc[t][0] *= a0;
            acc[t][1] *= a0;
            acc[t][2] *= a1;
            acc[t][3] *= a1;
        }

        CP_WAIT_ALL();
        barrier(CLK_LOCAL_MEM_FENCE); /* this block's V is in place; every warp is done with its K */
        if (j0 + BLOCK_N < kend) load_block(kt, kaddr, kbase, ks, j0 + BLOCK_N, kend, tid); /* during P·V */
#pragma unroll
        for (int kk = 0; kk < PV_STEPS; kk++) {
            uint pa[4], pb[4];
            pa[0] = pack_pair(s[2 * kk][0], s[2 * kk][1]);
            pa[1] = pack_pair(s[2 * kk][2], s[2 * kk][3]);
            pa[2] = pack_pair(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pa[3] = pack_pair(s[2 * kk + 1][2], s[2 * kk + 1][3]);
            pb[0] = pack_lo(s[2 * kk][0], s[2 * kk][1], pa[0]);
            pb[1] = pack_lo(s[2 * kk][2], s[2 * kk][3], pa[1]);
            pb[2] = pack_lo(s[2 * kk + 1][0], s[2 * kk + 1][1], pa[2]);
            pb[3] = pack_lo(s[2 * kk + 1][2], s[2 * kk + 1][3], pa[3]);
#pragma unroll
            for (int dp = 0; dp < OT / 2; dp++) {
                uint vf[4];
                LDSM_X4_T(vf, vaddr + voff + (uint)((kk * 16 * LROW + dp * 16) * 2));
                MMA(acc[2 * dp], pa, vf[0], vf[1]);
                MMA(acc[2 * dp + 1], pa, vf[2], vf[3]);
                MMA(acc[2 * dp], pb, vf[0], vf[1]);
                MMA(acc[2 * dp + 1], pb, vf[2], vf[3]);
            }
        }
    }

    l0 = quad_sum(l0);
    l1 = quad_sum(l1);
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    const long orow = oo + (long)b * ob + (long)h * oh;
    __global ushort *o0 = o + orow + (long)(in0 ? r0 : 0) * os;
    __global ushort *o1 = o + orow + (long)(in1 ? r0 + 8 : 0) * os;
#pragma unroll
    for (int t = 0; t < OT; t++) {
        if (in0) *(__global uint *)(o0 + t * 8 + c2) = pack_pair(acc[t][0] * inv0, acc[t][1] * inv0);
        if (in1) *(__global uint *)(o1 + t * 8 + c2) = pack_pair(acc[t][2] * inv1, acc[t][3] * inv1);
    }
    if (has_lse && lane % 4 == 0) {
        const long lrow = lo + (long)b * lb + (long)h * lh;
        if (in0) lse[lrow + (long)r0 * ls] = l0 > 0.0f ? (m0 + log2(l0)) * LN2 : -INFINITY;
        if (in1) lse[lrow + (long)(r0 + 8) * ls] = l1 > 0.0f ? (m1 + log2(l1)) * LN2 : -INFINITY;
    }
}
