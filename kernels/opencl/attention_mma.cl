/* attention (docs/ops.md, attention) on NVIDIA tensor cores: a FlashAttention-2 forward issued as inline PTX
 * (mma.sync m16n8k16, f16 or bf16 inputs, f32 accumulation; ldmatrix from local memory; shfl.sync for the row
 * statistics, which OpenCL 1.2 has no sub-group shuffle for). Only NVIDIA's OpenCL compiler takes it: the backend
 * selects the variant "mma" only where matmul_mma.cl's probe (backend_opencl/mma_probe.c, the same instruction
 * forms, common.cl's) computed right; attention.cl runs elsewhere, and for f32, unaligned views and other head dims.
 *
 * A work-group of WARPS warps takes BLOCK_M query rows of one head (batch b, query head h, kv head h / group), and
 * each warp MT = BLOCK_M / (16 WARPS) consecutive m16 tiles of them: every K and V block staged in local memory
 * serves all BLOCK_M rows, and with MT = 2 every K and V fragment a warp reads from local memory feeds the MMAs of
 * two row tiles, which halves those reads (the limit of mma.sync attention where they are not shared). The q
 * fragments stay in registers for the whole key loop where MT · HEAD_DIM <= 128; past it q is staged once in local
 * memory and read by ldmatrix at each block. Per block of BLOCK_N keys:
 *   1. K and V (raw 16-bit patterns) arrive in local memory in 16-byte chunks, zero past the keys any row of the
 *      work-group sees (a zero V row keeps 0·V finite where a masked weight is 0). STAGES 1: one K and one V
 *      buffer, FlashAttention-2's order (V's copy overlaps Q·Kᵀ and the softmax, the next block's K overlaps P·V;
 *      two barriers a block). STAGES >= 2: a ring of (K, V) stages filled STAGES - 1 blocks ahead (one barrier a
 *      block, the copies in flight for whole blocks). Without cp.async the copies go through registers;
 *   2. each warp computes its MT·16 x BLOCK_N scores S = Q·Kᵀ in registers (ldmatrix of K rows gives the col-major
 *      B fragments directly) and sets a key the row does not see (past Skv, or past the causal diagonal
 *      j <= i + Skv - Sq) to -inf. A warp whose rows see no key of the block skips its math (barriers and copies
 *      still run);
 *   3. the online softmax in base 2 (ex2.approx through native_exp2: a relative error of about 2^-22, within
 *      what the two-part P of step 4 keeps; ex2.approx(-inf) is +0), per row: a lane holds two rows of each tile
 *      (lane / 4 and lane / 4 + 8) and reduces their block maximum over its quad with shfl.sync. The maximum is
 *      taken over the unscaled scores and scaled once (scale·log2 e > 0: q's fragments are negated where the
 *      scale is negative, exactly), and each weight is p = 2^(s·c - m_new) with one fma (from 0, not -inf, while
 *      the row has seen no key: 2^-inf = 0 and no -inf - (-inf)); the lane's partial row sums and the O
 *      accumulator are rescaled by 2^(m_old - m_new); the quad's partial sums are added once, after the loop;
 *   4. P, as two 16-bit parts (pack_lo), is repacked from the S accumulator layout into A fragments (the m16n8k16
 *      C layout of two adjacent n8 tiles is the A layout of one k16 step) and O += P·V (ldmatrix.trans of V).
 * The epilogue divides by l, rounds once (cvt.rn.{f16,bf16}x2), writes o pairs through its strides, and
 * lse = (m + log2 l)·ln 2; a row without keys gets o = 0, lse = -inf.
 * Local rows are padded by 16 bytes, so the eight rows an ldmatrix phase reads fall in distinct banks.
 * Build options: HEAD_DIM (64 or 128), BLOCK_M (16·MT·WARPS, MT 1 or 2), BLOCK_N (multiple of 16), WARPS, STAGES
 * (1 to 4), X_DT (1 f16, 2 bf16), ADDR_MODE (common.cl), CP_ASYNC (1 where the probe found cp.async works).
 * The host passes q with even element offsets and strides (4-byte fragment loads), k and v with multiples of 8
 * (16-byte chunks), o with even ones (pair stores). */

#define THREADS (WARPS * 32)
#define MT (BLOCK_M / (WARPS * 16)) /* m16 row tiles per warp */
#define LROW (HEAD_DIM + 8)         /* halves per local row of Q, K and V (16 bytes of padding) */
#define NT (BLOCK_N / 8)            /* n8 tiles of S per row tile */
#define OT (HEAD_DIM / 8)           /* n8 tiles of O per row tile */
#define QK_STEPS (HEAD_DIM / 16)    /* k16 steps of Q·Kᵀ */
#define PV_STEPS (BLOCK_N / 16)     /* k16 steps of P·V */
#define CHUNKS_ROW (HEAD_DIM / 8)   /* 16-byte chunks per key row */
#define Q_IN_REGS (MT * HEAD_DIM <= 128)
#define Q_ROWS (Q_IN_REGS ? 0 : BLOCK_M)             /* local rows of the staged q */
#define KV_TILES (STAGES == 1 ? 2 : 2 * STAGES)      /* K and V tiles of BLOCK_N rows */
#define TILE_BYTES (BLOCK_N * LROW * 2)

#if (MT != 1 && MT != 2) || BLOCK_M != MT * WARPS * 16 || BLOCK_N % 16 != 0 || STAGES < 1 || STAGES > 4
#error "attention_mma: BLOCK_M is 16 or 32 rows a warp, BLOCK_N a multiple of 16, STAGES 1 to 4"
#endif


#define LOAD_THREADS THREADS
#include "attention_blocks.cl"

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void attention_mma(
    __global const ushort *q, __global const ushort *k, __global const ushort *v, __global ushort *o,
    __global float *lse, long qo, long qb, long qh, long qs, long ko, long kb, long kh, long ks, long vo, long vb,
    long vh, long vs, long oo, long ob, long oh, long os, long lo, long lb, long lh, long ls, int group, int Sq,
    int Skv, int causal, int has_lse, float qscale) {
    /* the staged q (Q_ROWS rows), then the K and V tiles: K of stage s at tile 2s, its V at 2s + 1 */
    __local ushort sm[(Q_ROWS + KV_TILES * BLOCK_N) * LROW] __attribute__((aligned(128)));
    const int tid = (int)get_local_id(0), lane = tid % 32, warp = tid / 32;
    const int h = (int)get_group_id(1), b = (int)get_group_id(2), g = h / group;
    /* the last query block first: under causal it has the most keys, and a late start would leave a tail */
    const int i0 = ((int)get_num_groups(0) - 1 - (int)get_group_id(0)) * BLOCK_M;
    const int wrow = i0 + warp * MT * 16; /* the warp's first row; this lane's rows: wrow + 16 mt + lane / 4 (+ 8) */
    const int c2 = (lane % 4) * 2;        /* its column pair within an n8 tile */
    /* exp2's argument is s·c - m with c > 0: a negative scale negates q instead (sign bits, exact); c is kept
     * nonzero so that a masked -inf never meets a zero */
    const uint qflip = qscale < 0.0f ? 0x80008000u : 0u;
    const float c = fmax(fabs(qscale), FLT_MIN);
    const long qrow = qo + (long)b * qb + (long)h * qh;

#if Q_IN_REGS
    /* q's A fragments: {row r, cols c2..}, {r + 8, c2..}, {r, c2 + 8..}, {r + 8, c2 + 8..} per k16 step */
    uint qa[MT][QK_STEPS][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int r = wrow + mt * 16 + lane / 4, in0 = r < Sq, in1 = r + 8 < Sq;
        __global const ushort *q0 = q + qrow + (long)(in0 ? r : 0) * qs;
        __global const ushort *q1 = q + qrow + (long)(in1 ? r + 8 : 0) * qs;
#pragma unroll
        for (int kk = 0; kk < QK_STEPS; kk++) {
            qa[mt][kk][0] = in0 ? *(__global const uint *)(q0 + kk * 16 + c2) ^ qflip : 0u;
            qa[mt][kk][1] = in1 ? *(__global const uint *)(q1 + kk * 16 + c2) ^ qflip : 0u;
            qa[mt][kk][2] = in0 ? *(__global const uint *)(q0 + kk * 16 + 8 + c2) ^ qflip : 0u;
            qa[mt][kk][3] = in1 ? *(__global const uint *)(q1 + kk * 16 + 8 + c2) ^ qflip : 0u;
        }
    }
#else
    /* the work-group's q rows into local memory once, through registers (the first block's barrier orders
     * these stores before any ldmatrix of them); rows past Sq are zeros */
    for (int e = tid; e < BLOCK_M * (HEAD_DIM / 2); e += THREADS) {
        const int row = e / (HEAD_DIM / 2), col = (e % (HEAD_DIM / 2)) * 2;
        const uint w = i0 + row < Sq ? *(__global const uint *)(q + qrow + (long)(i0 + row) * qs + col) ^ qflip : 0u;
        *(__local uint *)(sm + row * LROW + col) = w;
    }
#endif

    float acc[MT][OT][4], m[MT][2], l[MT][2];
    int lim[MT][2]; /* the last key each of this lane's rows sees */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int t = 0; t < OT; t++) acc[mt][t][0] = acc[mt][t][1] = acc[mt][t][2] = acc[mt][t][3] = 0.0f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
        const int r = wrow + mt * 16 + lane / 4;
        lim[mt][0] = causal ? min(r + Skv - Sq, Skv - 1) : Skv - 1;
        lim[mt][1] = causal ? min(r + 8 + Skv - Sq, Skv - 1) : Skv - 1;
    }

    /* the keys any row of the work-group sees: up to the last row's limit under causal */
    const int last = min(i0 + BLOCK_M, Sq) - 1;
    const int kend = causal ? clamp(last + Skv - Sq + 1, 0, Skv) : Skv;
    const int nblk = (kend + BLOCK_N - 1) / BLOCK_N;
    /* the least limit of the warp's rows (a block past it needs the mask) and the greatest (a block past it has
     * nothing for the warp; -1 where the warp has no row) */
    const int wlim_lo = causal ? min(wrow + Skv - Sq, Skv - 1) : Skv - 1;
    const int wlim_hi = wrow >= Sq ? -1 : causal ? min(min(wrow + MT * 16, Sq) - 1 + Skv - Sq, Skv - 1) : Skv - 1;
    __global const ushort *kbase = k + ko + (long)b * kb + (long)g * kh;
    __global const ushort *vbase = v + vo + (long)b * vb + (long)g * vh;
    const uint q_at = smem_addr(sm), kv_at = q_at + (uint)(Q_ROWS * LROW * 2);
    __local ushort *kv = sm + Q_ROWS * LROW;
    /* ldmatrix row addresses (bytes from the tile's start, before the step offsets):
     * Q (staged): matrices {rows 0-7, d 0-7}, {rows 8-15, d 0-7}, {rows 0-7, d 8-15}, {rows 8-15, d 8-15},
     *   i.e. the A fragment of one row tile for one k16 step of d;
     * K, not transposed: {keys 0-7, d 0-7}, {keys 0-7, d 8-15}, {keys 8-15, d 0-7}, {keys 8-15, d 8-15},
     *   i.e. the b fragments of two n8 key tiles for one k16 step of d;
     * V, transposed: {keys 0-7, d 0-7}, {keys 8-15, d 0-7}, {keys 0-7, d 8-15}, {keys 8-15, d 8-15},
     *   i.e. the b fragments of two n8 tiles of d for one k16 step of keys. */
#if !Q_IN_REGS
    const uint qoff = (uint)(((warp * MT * 16 + lane % 16) * LROW + (lane / 16) * 8) * 2);
#endif
    const uint koff = (uint)((((lane % 8) + (lane / 16) * 8) * LROW + ((lane / 8) % 2) * 8) * 2);
    const uint voff = (uint)((((lane % 8) + ((lane / 8) % 2) * 8) * LROW + (lane / 16) * 8) * 2);

#if STAGES == 1
    if (nblk > 0) load_block(kv, kv_at, kbase, ks, 0, kend, tid);
    CP_COMMIT();
#else
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nblk) {
            load_block(kv + 2 * s * BLOCK_N * LROW, kv_at + (uint)(2 * s * TILE_BYTES), kbase, ks, s * BLOCK_N, kend,
                       tid);
            load_block(kv + (2 * s + 1) * BLOCK_N * LROW, kv_at + (uint)((2 * s + 1) * TILE_BYTES), vbase, vs,
                       s * BLOCK_N, kend, tid);
        }
        CP_COMMIT(); /* one group per block, empty past the last: the wait below counts groups */
    }
#endif
    for (int t = 0; t < nblk; t++) {
        const int j0 = t * BLOCK_N;
#if STAGES == 1
        const uint k_at = kv_at, v_at = kv_at + TILE_BYTES;
        CP_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE); /* this block's K is in place; every warp is done with the last block's V */
        load_block(kv + BLOCK_N * LROW, v_at, vbase, vs, j0, kend, tid); /* in flight during Q·Kᵀ and the softmax */
        CP_COMMIT();
#else
        const uint k_at = kv_at + (uint)(2 * (t % STAGES) * TILE_BYTES), v_at = k_at + TILE_BYTES;
        CP_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE); /* block t is in place; every warp is done with block t - 1's stage */
        {
            const int nt = t + STAGES - 1, ns = nt % STAGES;
            if (nt < nblk) {
                load_block(kv + 2 * ns * BLOCK_N * LROW, kv_at + (uint)(2 * ns * TILE_BYTES), kbase, ks,
                           nt * BLOCK_N, kend, tid);
                load_block(kv + (2 * ns + 1) * BLOCK_N * LROW, kv_at + (uint)((2 * ns + 1) * TILE_BYTES), vbase, vs,
                           nt * BLOCK_N, kend, tid);
            }
            CP_COMMIT();
        }
#endif
        const int live = j0 <= wlim_hi; /* the same for the warp's lanes */
        float s[MT][NT][4];
        if (live) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int t2 = 0; t2 < NT; t2++) s[mt][t2][0] = s[mt][t2][1] = s[mt][t2][2] = s[mt][t2][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < QK_STEPS; kk++) {
                uint qf[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#if Q_IN_REGS
                    qf[mt][0] = qa[mt][kk][0];
                    qf[mt][1] = qa[mt][kk][1];
                    qf[mt][2] = qa[mt][kk][2];
                    qf[mt][3] = qa[mt][kk][3];
#else
                    LDSM_X4(qf[mt], q_at + qoff + (uint)((mt * 16 * LROW + kk * 16) * 2));
#endif
                }
#pragma unroll
                for (int np = 0; np < NT / 2; np++) {
                    uint kf[4];
                    LDSM_X4(kf, k_at + koff + (uint)((np * 16 * LROW + kk * 16) * 2));
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        MMA(s[mt][2 * np], qf[mt], kf[0], kf[1]);
                        MMA(s[mt][2 * np + 1], qf[mt], kf[2], kf[3]);
                    }
                }
            }
            if (j0 + BLOCK_N - 1 > wlim_lo) { /* some key of the block is past a row's limit */
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int t2 = 0; t2 < NT; t2++) {
                        const int jj = j0 + t2 * 8 + c2;
                        if (jj > lim[mt][0]) s[mt][t2][0] = -INFINITY;
                        if (jj + 1 > lim[mt][0]) s[mt][t2][1] = -INFINITY;
                        if (jj > lim[mt][1]) s[mt][t2][2] = -INFINITY;
                        if (jj + 1 > lim[mt][1]) s[mt][t2][3] = -INFINITY;
                    }
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    float bm = -INFINITY;
#pragma unroll
                    for (int t2 = 0; t2 < NT; t2++) bm = fmax(bm, fmax(s[mt][t2][2 * hh], s[mt][t2][2 * hh + 1]));
                    bm = quad_max(bm);
                    const float mn = fmax(m[mt][hh], bm * c);
                    const float base = mn == -INFINITY ? 0.0f : mn;
                    const float alpha = native_exp2(m[mt][hh] - base);
                    m[mt][hh] = mn;
                    float sum = 0.0f;
#pragma unroll
                    for (int t2 = 0; t2 < NT; t2++) {
                        const float p0 = native_exp2(fma(s[mt][t2][2 * hh], c, -base));
                        const float p1 = native_exp2(fma(s[mt][t2][2 * hh + 1], c, -base));
                        s[mt][t2][2 * hh] = p0;
                        s[mt][t2][2 * hh + 1] = p1;
                        sum += p0 + p1;
                    }
                    l[mt][hh] = l[mt][hh] * alpha + sum;
#pragma unroll
                    for (int t2 = 0; t2 < OT; t2++) {
                        acc[mt][t2][2 * hh] *= alpha;
                        acc[mt][t2][2 * hh + 1] *= alpha;
                    }
                }
        }
#if STAGES == 1
        CP_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE); /* this block's V is in place; every warp is done with its K */
        if (t + 1 < nblk) load_block(kv, kv_at, kbase, ks, j0 + BLOCK_N, kend, tid); /* during P·V */
        CP_COMMIT();
#endif
        if (live) {
#pragma unroll
            for (int kk = 0; kk < PV_STEPS; kk++) {
                uint pa[MT][4], pb[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    pa[mt][0] = pack_pair(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                    pa[mt][1] = pack_pair(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                    pa[mt][2] = pack_pair(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                    pa[mt][3] = pack_pair(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
                    pb[mt][0] = pack_lo(s[mt][2 * kk][0], s[mt][2 * kk][1], pa[mt][0]);
                    pb[mt][1] = pack_lo(s[mt][2 * kk][2], s[mt][2 * kk][3], pa[mt][1]);
                    pb[mt][2] = pack_lo(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1], pa[mt][2]);
                    pb[mt][3] = pack_lo(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3], pa[mt][3]);
                }
#pragma unroll
                for (int dp = 0; dp < OT / 2; dp++) {
                    uint vf[4];
                    LDSM_X4_T(vf, v_at + voff + (uint)((kk * 16 * LROW + dp * 16) * 2));
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
                        MMA(acc[mt][2 * dp], pa[mt], vf[0], vf[1]);
                        MMA(acc[mt][2 * dp + 1], pa[mt], vf[2], vf[3]);
                        MMA(acc[mt][2 * dp], pb[mt], vf[0], vf[1]);
                        MMA(acc[mt][2 * dp + 1], pb[mt], vf[2], vf[3]);
                    }
                }
            }
        }
    }
    CP_WAIT(0); /* no copy outlives the work-group (the ring's trailing groups are empty) */

    const long orow = oo + (long)b * ob + (long)h * oh, lrow = lo + (long)b * lb + (long)h * lh;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int r0 = wrow + mt * 16 + lane / 4, in0 = r0 < Sq, in1 = r0 + 8 < Sq;
        const float l0 = quad_sum(l[mt][0]), l1 = quad_sum(l[mt][1]);
        const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
        __global ushort *o0 = o + orow + (long)(in0 ? r0 : 0) * os;
        __global ushort *o1 = o + orow + (long)(in1 ? r0 + 8 : 0) * os;
#pragma unroll
        for (int t = 0; t < OT; t++) {
            if (in0) *(__global uint *)(o0 + t * 8 + c2) = pack_pair(acc[mt][t][0] * inv0, acc[mt][t][1] * inv0);
            if (in1) *(__global uint *)(o1 + t * 8 + c2) = pack_pair(acc[mt][t][2] * inv1, acc[mt][t][3] * inv1);
        }
        if (has_lse && lane % 4 == 0) {
            if (in0) lse[lrow + (long)r0 * ls] = l0 > 0.0f ? (m[mt][0] + log2(l0)) * TRR_LN2 : -INFINITY;
            if (in1) lse[lrow + (long)(r0 + 8) * ls] = l1 > 0.0f ? (m[mt][1] + log2(l1)) * TRR_LN2 : -INFINITY;
        }
    }
}
