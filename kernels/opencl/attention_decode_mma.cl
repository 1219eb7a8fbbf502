/* attention (docs/ops.md, attention), the decode form on NVIDIA tensor cores through inline PTX: few query rows per
 * kv head and many keys, where the time is the read of K and V. The instruction forms are attention_mma.cl's
 * (mma.sync m16n8k16, ldmatrix, cp.async, shfl.sync, cvt pairs; common.cl's MMA, LDSM_X4, LDSM_X4_T and
 * smem_addr), which matmul_mma.cl's probe (backend_opencl/mma_probe.c) vouches for; the backend builds this
 * program only where that probe passed, and runs attention_decode.cl elsewhere.
 *
 * A work-group is one warp. It takes one chunk of the keys of one kv head (batch b, kv head g, split s) and 16 rows
 * of that kv head's group, row r being query r % Sq of head g·G + r / Sq (G = Hq / Hkv), so K and V are read once
 * for the G query heads; rows past G·Sq are zeros and never written. Many small work-groups, each streaming its own
 * chunk, keep the loads in flight: K and V pass through a ring of STAGES (K, V) blocks in local memory, filled by
 * cp.async STAGES - 1 blocks ahead, so a warp has several blocks of loads outstanding while it computes one, and
 * several warps share a compute unit. The host merges the chunks with attention.cl's attention_combine.
 *
 * Per block of BLOCK_N keys, as attention_mma.cl with one row tile: S = Q·Kᵀ from q's A fragments held in
 * registers and ldmatrix of K; keys past a row's last key (causal: i + Skv - Sq) or past the chunk score -inf; the
 * online softmax in base 2 with quad shuffles for the row maxima; O += P·V with P in two 16-bit parts (the
 * rounding of one part alone exceeds the half-output bound where o cancels) and ldmatrix.trans of V.
 * The epilogue: mode 0 (one chunk) writes o (rounded once) and lse; mode 1 writes the chunk's o / l and
 * m + log2 l (base 2) in f32 to part and part_lse, attention.cl's scratch layout.
 *
 * Build options: HEAD_DIM (64 or 128), BLOCK_N (a multiple of 16), STAGES (2 to 4), X_DT (1 f16, 2 bf16),
 * ADDR_MODE (common.cl), CP_ASYNC (1 where the probe found cp.async works). The host passes q with even element
 * offsets and strides, k and v with multiples of 8 (16-byte chunks), o with even ones (pair stores). */

#define LROW (HEAD_DIM + 8)       /* halves per local row of K and V (16 bytes of padding) */
#define NT (BLOCK_N / 8)          /* n8 tiles of S */
#define OT (HEAD_DIM / 8)         /* n8 tiles of O */
#define QK_STEPS (HEAD_DIM / 16)  /* k16 steps of Q·Kᵀ */
#define PV_STEPS (BLOCK_N / 16)   /* k16 steps of P·V */
#define CHUNKS_ROW (HEAD_DIM / 8) /* 16-byte chunks per key row */
#define TILE_BYTES (BLOCK_N * LROW * 2)

#if BLOCK_N % 16 != 0 || STAGES < 2 || STAGES > 4 || (HEAD_DIM != 64 && HEAD_DIM != 128)
#error "attention_decode_mma: BLOCK_N a multiple of 16, STAGES 2 to 4, HEAD_DIM 64 or 128"
#endif


#define LOAD_THREADS 32
#include "attention_blocks.cl"

/* The last key a row sees, -1 for a row past the group's rows (or one that sees none). */
static inline int row_limit(int r, int nrows, int Sq, int Skv, int causal) {
    return r >= nrows ? -1 : causal ? min(r % Sq + Skv - Sq, Skv - 1) : Skv - 1;
}

__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void attention_decode_mma(
    __global const ushort *q, __global const ushort *k, __global const ushort *v, __global ushort *o,
    __global float *lse, __global float *part, __global float *part_lse, long qo, long qb, long qh, long qs, long ko,
    long kb, long kh, long ks, long vo, long vb, long vh, long vs, long oo, long ob, long oh, long os, long lo,
    long lb, long lh, long ls, int Hq, int group, int Sq, int Skv, int causal, int has_lse, int nsplit, int kps,
    int mode, float qscale) {
    /* the ring: K of stage s at tile 2s, its V at 2s + 1 */
    __local ushort sm[2 * STAGES * BLOCK_N * LROW] __attribute__((aligned(128)));
    const int lane = (int)get_local_id(0);
    const int g = (int)get_group_id(1), b = (int)get_group_id(2) / nsplit, split = (int)get_group_id(2) % nsplit;
    const int nrows = group * Sq, r0 = (int)get_group_id(0) * 16;
    const int c2 = (lane % 4) * 2; /* this lane's column pair within an n8 tile */
    /* this lane's two rows (lane / 4 and lane / 4 + 8 of the tile): valid, head, query */
    int rr[2], in[2], hd[2], qi[2], lim[2];
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        rr[hh] = r0 + lane / 4 + 8 * hh;
        in[hh] = rr[hh] < nrows;
        hd[hh] = g * group + (in[hh] ? rr[hh] : 0) / Sq;
        qi[hh] = (in[hh] ? rr[hh] : 0) % Sq;
        lim[hh] = row_limit(rr[hh], nrows, Sq, Skv, causal);
    }
    /* the chunk's keys that any row of the tile sees: up to the greatest of the tile's limits */
    int most = -1;
    for (int r = 0; r < 16; r++) most = max(most, row_limit(r0 + r, nrows, Sq, Skv, causal));
    const int kbeg = split * kps, kstop = min(most + 1, kbeg + kps);
    /* a key of the next chunk is masked as a key past the row's limit */
    lim[0] = min(lim[0], kstop - 1);
    lim[1] = min(lim[1], kstop - 1);
    const int nblk = kstop > kbeg ? (kstop - kbeg + BLOCK_N - 1) / BLOCK_N : 0;

    /* exp2's argument is s·c - m with c > 0: a negative scale negates q instead (sign bits, exact); c is kept
     * nonzero so that a masked -inf never meets a zero */
    const uint qflip = qscale < 0.0f ? 0x80008000u : 0u;
    const float c = fmax(fabs(qscale), FLT_MIN);
    /* q's A fragments: {row a, cols c2..}, {row b, c2..}, {a, c2 + 8..}, {b, c2 + 8..} per k16 step */
    uint qa[QK_STEPS][4];
    {
        __global const ushort *q0 = q + qo + (long)b * qb + (long)hd[0] * qh + (long)qi[0] * qs;
        __global const ushort *q1 = q + qo + (long)b * qb + (long)hd[1] * qh + (long)qi[1] * qs;
#pragma unroll
        for (int kk = 0; kk < QK_STEPS; kk++) {
            qa[kk][0] = in[0] ? *(__global const uint *)(q0 + kk * 16 + c2) ^ qflip : 0u;
            qa[kk][1] = in[1] ? *(__global const uint *)(q1 + kk * 16 + c2) ^ qflip : 0u;
            qa[kk][2] = in[0] ? *(__global const uint *)(q0 + kk * 16 + 8 + c2) ^ qflip : 0u;
            qa[kk][3] = in[1] ? *(__global const uint *)(q1 + kk * 16 + 8 + c2) ^ qflip : 0u;
        }
    }

    float acc[OT][4], m[2], l[2];
#pragma unroll
    for (int t = 0; t < OT; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;

    __global const ushort *kbase = k + ko + (long)b * kb + (long)g * kh;
    __global const ushort *vbase = v + vo + (long)b * vb + (long)g * vh;
    const uint kv_at = smem_addr(sm);
    /* ldmatrix row addresses (bytes from the tile's start, before the step offsets), attention_mma.cl's:
     * K, not transposed: {keys 0-7, d 0-7}, {keys 0-7, d 8-15}, {keys 8-15, d 0-7}, {keys 8-15, d 8-15};
     * V, transposed: {keys 0-7, d 0-7}, {keys 8-15, d 0-7}, {keys 0-7, d 8-15}, {keys 8-15, d 8-15}. */
    const uint koff = (uint)((((lane % 8) + (lane / 16) * 8) * LROW + ((lane / 8) % 2) * 8) * 2);
    const uint voff = (uint)((((lane % 8) + ((lane / 8) % 2) * 8) * LROW + (lane / 16) * 8) * 2);

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nblk) {
            load_block(sm + 2 * s * BLOCK_N * LROW, kv_at + (uint)(2 * s * TILE_BYTES), kbase, ks,
                       kbeg + s * BLOCK_N, kstop, lane);
            load_block(sm + (2 * s + 1) * BLOCK_N * LROW, kv_at + (uint)((2 * s + 1) * TILE_BYTES), vbase, vs,
                       kbeg + s * BLOCK_N, kstop, lane);
        }
        CP_COMMIT(); /* one group per block, empty past the last: the wait below counts groups */
    }
    for (int t = 0; t < nblk; t++) {
        const int j0 = kbeg + t * BLOCK_N;
        const uint k_at = kv_at + (uint)(2 * (t % STAGES) * TILE_BYTES), v_at = k_at + TILE_BYTES;
        CP_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE); /* block t is in place; the warp is done with block t - 1's stage */
        {
            const int nt = t + STAGES - 1, ns = nt % STAGES;
            if (nt < nblk) {
                load_block(sm + 2 * ns * BLOCK_N * LROW, kv_at + (uint)(2 * ns * TILE_BYTES), kbase, ks,
                           kbeg + nt * BLOCK_N, kstop, lane);
                load_block(sm + (2 * ns + 1) * BLOCK_N * LROW, kv_at + (uint)((2 * ns + 1) * TILE_BYTES), vbase,
                           vs, kbeg + nt * BLOCK_N, kstop, lane);
            }
            CP_COMMIT();
        }
        float s[NT][4];
#pragma unroll
        for (int t2 = 0; t2 < NT; t2++) s[t2][0] = s[t2][1] = s[t2][2] = s[t2][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < QK_STEPS; kk++) {
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint kf[4];
                LDSM_X4(kf, k_at + koff + (uint)((np * 16 * LROW + kk * 16) * 2));
                MMA(s[2 * np], qa[kk], kf[0], kf[1]);
                MMA(s[2 * np + 1], qa[kk], kf[2], kf[3]);
            }
        }
        /* keys past a row's limit or the chunk; every block, as the rows' limits differ (causal, GQA) */
#pragma unroll
        for (int t2 = 0; t2 < NT; t2++) {
            const int jj = j0 + t2 * 8 + c2;
            if (jj > lim[0]) s[t2][0] = -INFINITY;
            if (jj + 1 > lim[0]) s[t2][1] = -INFINITY;
            if (jj > lim[1]) s[t2][2] = -INFINITY;
            if (jj + 1 > lim[1]) s[t2][3] = -INFINITY;
        }
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            float bm = -INFINITY;
#pragma unroll
            for (int t2 = 0; t2 < NT; t2++) bm = fmax(bm, fmax(s[t2][2 * hh], s[t2][2 * hh + 1]));
            bm = quad_max(bm);
            const float mn = fmax(m[hh], bm * c);
            const float base = mn == -INFINITY ? 0.0f : mn;
            const float alpha = native_exp2(m[hh] - base);
            m[hh] = mn;
            float sum = 0.0f;
#pragma unroll
            for (int t2 = 0; t2 < NT; t2++) {
                const float p0 = native_exp2(fma(s[t2][2 * hh], c, -base));
                const float p1 = native_exp2(fma(s[t2][2 * hh + 1], c, -base));
                s[t2][2 * hh] = p0;
                s[t2][2 * hh + 1] = p1;
                sum += p0 + p1;
            }
            l[hh] = l[hh] * alpha + sum;
#pragma unroll
            for (int t2 = 0; t2 < OT; t2++) {
                acc[t2][2 * hh] *= alpha;
                acc[t2][2 * hh + 1] *= alpha;
            }
        }
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
                LDSM_X4_T(vf, v_at + voff + (uint)((kk * 16 * LROW + dp * 16) * 2));
                MMA(acc[2 * dp], pa, vf[0], vf[1]);
                MMA(acc[2 * dp + 1], pa, vf[2], vf[3]);
                MMA(acc[2 * dp], pb, vf[0], vf[1]);
                MMA(acc[2 * dp + 1], pb, vf[2], vf[3]);
            }
        }
    }
    CP_WAIT(0); /* no copy outlives the work-group (the ring's trailing groups are empty) */

    const long rows = (long)get_num_groups(2) / nsplit * Hq * Sq; /* B·Hq·Sq, the scratch's rows a chunk */
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        const float lr = quad_sum(l[hh]);
        if (!in[hh]) continue;
        const float inv = lr > 0.0f ? 1.0f / lr : 0.0f;
        const int h = hd[hh], i = qi[hh];
        if (mode == 0) {
            __global ushort *orow = o + oo + (long)b * ob + (long)h * oh + (long)i * os;
#pragma unroll
            for (int t = 0; t < OT; t++)
                *(__global uint *)(orow + t * 8 + c2) = pack_pair(acc[t][2 * hh] * inv, acc[t][2 * hh + 1] * inv);
            if (has_lse && lane % 4 == 0)
                lse[lo + (long)b * lb + (long)h * lh + (long)i * ls] =
                    lr > 0.0f ? (m[hh] + log2(lr)) * TRR_LN2 : -INFINITY;
        } else {
            const long row = ((long)b * Hq + h) * Sq + i;
            __global float *prow = part + ((long)split * rows + row) * HEAD_DIM;
#pragma unroll
            for (int t = 0; t < OT; t++)
                *(__global float2 *)(prow + t * 8 + c2) = (float2)(acc[t][2 * hh] * inv, acc[t][2 * hh + 1] * inv);
            if (lane % 4 == 0) part_lse[(long)split * rows + row] = lr > 0.0f ? m[hh] + log2(lr) : -INFINITY;
        }
    }
}
