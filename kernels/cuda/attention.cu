/*
 * attention's forward pass (docs/ops.md, attention): o = softmax(scale . q k^T + mask) v per (batch, head), with
 * an online softmax over blocks of keys (f32 statistics and accumulators, o rounded once on store), and lse.
 * One file, four kernels chosen by KIND:
 *   0  attention_mma: f16/bf16 on mma.sync.m16n8k16 (sm_80 and up), FlashAttention-2's scheme; BM 16 over
 *      several warps is its decode form, the warps splitting the keys inside the block (KEY_WARPS);
 *   1  attention_simt: any float dtype on the CUDA cores in f32 (the precise path: f32 products and weights);
 *   2  attention_combine: joins the partial results of a call split over the keys;
 *   3  attention_wgmma: f16/bf16 on Hopper's warpgroup MMA with TMA loads (sm_90a), FlashAttention-3's scheme.
 * Compile-time: DT (0 f32, 1 f16, 2 bf16: q, k, v and o), DP (the head dimension padded to a multiple of 16;
 * columns D..DP-1 are zeros in shared memory), BM (rows a block), BN (keys a step), WARPS, STAGES.
 *
 * Rows. Query heads that share a kv head (grouped-query attention, G = Hq / Hkv of them) are computed by one
 * block: its rows are the G x Sq pairs (i, head) of kv head g, row r being query i = r / G of head g*G + r % G.
 * Each loaded block of keys and values then serves every head of the group, and decode (Sq = 1) fills G rows of
 * a tile instead of one. Under causal, row r sees key j iff j <= i + (Skv - Sq) (bottom-right aligned); a block
 * visits keys only up to the last that its last row sees, and masks element by element only in blocks that reach
 * past the first row's limit or past Skv. A row that sees no key keeps m = -inf and l = 0 and is written as
 * o = 0, lse = -inf; no exponent ever takes (-inf) - (-inf): the running max used in exponents is 0 while the
 * row has seen nothing.
 *
 * Scores are kept in base 2: s = (q.k) * scale * log2(e), weights 2^(s - m) (ex2.approx), lse = (m + log2 l) ln 2.
 *
 * Split over the keys (flash-decoding, nsplit > 1): block `split` visits key blocks [split * split_blocks,
 * (split + 1) * split_blocks) and writes its rows' normalised o (f32) and base-2 lse into the backend's scratch
 * (part_o [nsplit][rows][D], part_lse [nsplit][rows], rows = B*Hq*Sq in (b, h, i) order) instead of o and lse;
 * attention_combine then weighs the splits by 2^(lse_s - lse). Every split block writes its partials, also when
 * its range holds no visible key (o = 0, lse = -inf).
 *
 * Operands: element (b, h, s, d) of q, k, v, o at base + b*x_b + h*x_h + s*x_s + d, strides in elements (any
 * positive values), D contiguous; lse's element (b, h, s) at b*l_b + h*l_h + s*l_s. The host passes pointers to
 * each view's first element. vec != 0 when the 16-byte path is safe: q, k and v start on 16-byte boundaries and
 * every stride that is followed is a multiple of 16 bytes; else tiles are filled element by element.
 *
 * Grid: one block per (query block, split, kv head, batch) in blockIdx.x, the query block fastest and the last
 * query block first (under causal the longest rows start first).
 */
#ifndef KIND
#define KIND 0
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef PSPLIT
#define PSPLIT 1
#endif

typedef trr_dt<DT>::type TE;

/* The kernel's argument, one struct passed by value (the host's mirror is in backend_cuda/ops_attention.c). */
struct attn_args {
    const void *q, *k, *v;
    void *o;
    float *lse;
    float *part_o, *part_lse;
    long long q_b, q_h, q_s, k_b, k_h, k_s, v_b, v_h, v_s, o_b, o_h, o_s, l_b, l_h, l_s;
    int batch, hq, hkv, group, sq, skv, d, rows; /* rows = Sq * G: a kv head's rows */
    int causal, has_lse, nsplit, split_blocks, vec;
    float scale_log2; /* scale * log2(e) */
};

#define ATTN_NEG_INF (-__int_as_float(0x7f800000))
#define ATTN_LN2 0.693147180559945309f

__device__ __forceinline__ float attn_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The block's place in the grid (see the header): query block mb (reversed), split, kv head g, batch b. */
struct attn_place {
    int mb, split, g, b;
};

__device__ __forceinline__ attn_place attn_locate(const attn_args &a, int bm) {
    const int nmb = (a.rows + bm - 1) / bm;
    unsigned id = blockIdx.x;
    attn_place p;
    p.mb = nmb - 1 - (int)(id % (unsigned)nmb);
    id /= (unsigned)nmb;
    p.split = (int)(id % (unsigned)a.nsplit);
    id /= (unsigned)a.nsplit;
    p.g = (int)(id % (unsigned)a.hkv);
    p.b = (int)(id / (unsigned)a.hkv);
    return p;
}

/* The key blocks [*kb0, *kb0 + return) of BN keys that a block of rows [m0, m0 + bm) visits in its split: up to
 * the last key its last row sees under causal. */
__device__ __forceinline__ int attn_key_blocks(const attn_args &a, int m0, int bm, int bn, int split, int *kb0) {
    const int rend = min(a.rows, m0 + bm);
    const int i_hi = (rend - 1) / a.group;
    const int key_end = a.causal ? min(a.skv, i_hi + (a.skv - a.sq) + 1) : a.skv;
    const int nkb_all = key_end > 0 ? (key_end + bn - 1) / bn : 0;
    const int first = split * a.split_blocks;
    *kb0 = first;
    const int last = min(nkb_all, first + a.split_blocks);
    return last > first ? last - first : 0;
}

/* The last key row r sees (-1: none): Skv - 1, or i + Skv - Sq under causal. */
__device__ __forceinline__ int attn_limit(const attn_args &a, int r) {
    if (!a.causal) return a.skv - 1;
    return min(a.skv - 1, r / a.group + (a.skv - a.sq));
}

/* Where row r's results go: o's element (b, h, i, 0), lse's (b, h, i), and the row's index in the split scratch. */
struct attn_out_row {
    long long o_off, l_off, part;
};

__device__ __forceinline__ attn_out_row attn_out(const attn_args &a, int b, int g, int r) {
    const int i = r / a.group, h = g * a.group + r % a.group;
    attn_out_row w;
    w.o_off = (long long)b * a.o_b + (long long)h * a.o_h + (long long)i * a.o_s;
    w.l_off = (long long)b * a.l_b + (long long)h * a.l_h + (long long)i * a.l_s;
    w.part = ((long long)b * a.hq + h) * a.sq + i;
    return w;
}

/* An element of a finished row: o / l, or exactly +0 where the row saw no key (l == 0; whatever non-finite values
 * the masked keys' v held). */
__device__ __forceinline__ float attn_norm(float v, float sum, float inv) { return sum > 0.0f ? v * inv : 0.0f; }

/* Writes element pair (col, col + 1) of a finished row: o (rounded to TE) or, split, the f32 partial. */
__device__ __forceinline__ void attn_store_pair(const attn_args &a, int split, const attn_out_row &w, int col,
                                                float v0, float v1) {
    if (col >= a.d) return;
    if (a.nsplit > 1) {
        float *p = a.part_o + ((long long)split * a.batch * a.hq * a.sq + w.part) * a.d + col;
        p[0] = v0;
        if (col + 1 < a.d) p[1] = v1;
        return;
    }
    TE *p = (TE *)a.o + w.o_off + col;
    if (col + 1 < a.d && ((unsigned long long)p & (2 * sizeof(TE) - 1)) == 0) {
        trr_store2(p, v0, v1);
    } else {
        p[0] = trr_from_f32<TE>(v0);
        if (col + 1 < a.d) p[1] = trr_from_f32<TE>(v1);
    }
}

/* A finished row's statistics: lse (natural log) or, split, the base-2 partial. m is the row's max in base 2, l
 * its sum; l == 0: the row saw no key. */
__device__ __forceinline__ void attn_store_lse(const attn_args &a, int split, const attn_out_row &w, float m,
                                               float l) {
    const float lse2 = l > 0.0f ? m + log2f(l) : ATTN_NEG_INF;
    if (a.nsplit > 1) a.part_lse[(long long)split * a.batch * a.hq * a.sq + w.part] = lse2;
    else if (a.has_lse) a.lse[w.l_off] = l > 0.0f ? lse2 * ATTN_LN2 : ATTN_NEG_INF;
}

#if KIND == 0 || KIND == 3
/* ---- shared by the tensor-core kernels ---- */

/* Two f32 as one register of two 16-bit values, lo in the low half (the fragment's lower column). */
__device__ __forceinline__ unsigned attn_pack2(float lo, float hi) {
    unsigned r;
#if DT == 2
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

/* The low and high 16-bit values of a packed pair, widened exactly. */
__device__ __forceinline__ float attn_lo16(unsigned r) {
#if DT == 2
    return __uint_as_float(r << 16);
#else
    return trr_h2f((unsigned short)(r & 0xffffu));
#endif
}
__device__ __forceinline__ float attn_hi16(unsigned r) {
#if DT == 2
    return __uint_as_float(r & 0xffff0000u);
#else
    return trr_h2f((unsigned short)(r >> 16));
#endif
}

#if DT == 2
#define ATTN_AB "bf16"
#else
#define ATTN_AB "f16"
#endif
#endif

#if KIND == 0
/* ================================ mma.sync (sm_80 and up) ================================
 * WARPS warps, each owning MT = BM / (16 WARPS) m16 tiles of consecutive rows. Shared memory: the Q tile, then
 * the K and V tiles of each stage; every tile row is DP halves plus 16 bytes of padding, so the 8 rows an
 * ldmatrix phase addresses at one column fall in 8 different 16-byte bank groups (a row is an odd number of
 * 16-byte chunks).
 * S = Q K^T: Q is the A operand (ldmatrix; kept in registers for the whole loop when MT * DP <= 128, else read
 * again from shared memory at each block), K rows the col-major B operand (ldmatrix). The S accumulators of two
 * adjacent 8-key tiles, rounded to 16 bits, are exactly the A fragment of P for 16 keys, so P . V takes P from
 * registers and V through ldmatrix.trans.
 * STAGES >= 2: a ring of (K, V) stages filled STAGES - 1 blocks ahead by cp.async. STAGES 1 (less shared memory):
 * one K and one V buffer, FlashAttention-2's order: V_t loads while S_t is computed, K_{t+1} while P_t V_t is.
 */
#define THREADS (WARPS * 32)
/* KEY_WARPS: BM 16 over several warps, the decode form (attention_mma below, second definition): every warp
 * holds the block's 16 rows and walks its own share of the key blocks. */
#define KEY_WARPS (BM == 16 && WARPS > 1)
#if KEY_WARPS
#define MT 1
#else
#define MT (BM / (WARPS * 16))
#endif
#define ROWB (DP * 2 + 16)
#define CPR (DP / 8)
#define Q_BYTES (BM * ROWB)
#define KV_BYTES (BN * ROWB)
#define Q_IN_REGS (MT * DP <= 128)

#if (!KEY_WARPS && BM % (WARPS * 16) != 0) || (MT != 1 && MT != 2) || DP % 16 != 0 || BN % 16 != 0
#error "attention_mma: BM must be 16 or 32 rows a warp (or 16 over key warps); DP and BN multiples of 16"
#endif

__device__ __forceinline__ void attn_mma(float *c, const unsigned *a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ATTN_AB "." ATTN_AB ".f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* One 16-byte chunk (8 elements from column e of a row at src) into shared memory at dst, zeros past D or for a
 * row that does not exist (ok == false). vec: cp.async (src 16-byte aligned); else element loads and a store. */
__device__ __forceinline__ void attn_chunk(unsigned dst, const unsigned short *src, bool ok, int e, int d, int vec) {
    if (vec) {
        const int bytes = ok ? min(8, d - e) * 2 : 0;
        trr_cp_async(dst, src, bytes); /* src is the row's base when !ok: a valid address, 0 bytes read */
        return;
    }
    unsigned w[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const unsigned lo = ok && e + 2 * q < d ? src[2 * q] : 0u;
        const unsigned hi = ok && e + 2 * q + 1 < d ? src[2 * q + 1] : 0u;
        w[q] = lo | (hi << 16);
    }
    asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                 : "memory");
}

/* The tile loaders: a thread copies one 16-byte column chunk c = tid % CP2 of rows tid / CP2, tid / CP2 + RSTEP,
 * ... (CP2: the chunks a row holds, rounded up to a power of two; threads whose c is past the row's chunks load
 * nothing), so that a thread's column and its address step from row to row are fixed. */
#define CP2 (CPR <= 2 ? 2 : CPR <= 4 ? 4 : CPR <= 8 ? 8 : CPR <= 16 ? 16 : 32)
#define RSTEP (THREADS / CP2)
#if THREADS % CP2 != 0
#error "attention_mma: a row's chunks must not outnumber the threads"
#endif

/* Keys [j0, j0 + BN) of one head's K or V (base: its key 0, ks: key stride) into a tile at dst. */
__device__ __forceinline__ void attn_load_kv(unsigned dst, const unsigned short *base, long long ks, int j0, int skv,
                                             int d, int vec, int tid) {
    const int c = tid % CP2, r0 = tid / CP2, e = c * 8;
    if (c >= CPR) return;
#pragma unroll 4
    for (int it = 0; it < (BN + RSTEP - 1) / RSTEP; it++) {
        const int r = r0 + it * RSTEP, j = j0 + r;
        if (BN % RSTEP == 0 || r < BN) {
            const bool ok = j < skv && e < d;
            attn_chunk(dst + r * ROWB + c * 16, base + (ok ? (long long)j * ks + e : 0), ok, e, d, vec);
        }
    }
}

/* Rows [m0, m0 + BM) of kv head g's query rows (row r: head r % G of the group, query r / G) into the Q tile. */
__device__ __forceinline__ void attn_load_q(const attn_args &a, unsigned dst, const unsigned short *qg, int m0, int tid) {
    const int c = tid % CP2, r0 = tid / CP2, e = c * 8;
    if (c >= CPR) return;
#pragma unroll 1
    for (int it = 0; it < (BM + RSTEP - 1) / RSTEP; it++) {
        const int r = r0 + it * RSTEP, row = m0 + r;
        if (BM % RSTEP == 0 || r < BM) {
            const bool ok = row < a.rows && e < a.d;
            long long off = 0;
            if (ok) off = (long long)(row % a.group) * a.q_h + (long long)(row / a.group) * a.q_s + e;
            attn_chunk(dst + r * ROWB + c * 16, qg + off, ok, e, a.d, a.vec);
        }
    }
}

/* One key block's scores for a warp's MT row tiles (rows wrow + ..., keys j0 .. j0 + BN - 1 in the K tile at
 * k_st), masked, and the online softmax: s receives the weights, and o, m, l are corrected for the new max. */
__device__ __forceinline__ void attn_scores(const attn_args &a, unsigned q_sm, unsigned k_st, int wrow, int lane,
                                            int j0, int first_limit, const int (&limit)[MT][2],
                                            const unsigned (&qf)[Q_IN_REGS ? MT : 1][Q_IN_REGS ? DP / 16 : 1][4],
                                            float (&s)[MT][BN / 8][4], float (&o)[MT][DP / 8][4],
                                            float (&m)[MT][2], float (&l)[MT][2]) {
    /* S = Q K^T for this warp's rows and the block's BN keys */
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[mt][nt][e] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < DP / 16; kc++) {
        unsigned qa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            if (Q_IN_REGS) {
#pragma unroll
                for (int e = 0; e < 4; e++) qa[mt][e] = qf[Q_IN_REGS ? mt : 0][Q_IN_REGS ? kc : 0][e];
            } else {
                trr_ldsm_x4(q_sm + (wrow + mt * 16 + (lane & 15)) * ROWB + (kc * 2 + (lane >> 4)) * 16, qa[mt]);
            }
        }
#pragma unroll
        for (int np = 0; np < BN / 16; np++) {
            /* matrices (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15) */
            unsigned kf[4];
            trr_ldsm_x4(k_st + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * ROWB +
                             (kc * 2 + ((lane >> 3) & 1)) * 16,
                         kf);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                attn_mma(s[mt][2 * np], qa[mt], kf[0], kf[1]);
                attn_mma(s[mt][2 * np + 1], qa[mt], kf[2], kf[3]);
            }
        }
    }

    /* Scores in base 2, masked where the block reaches past the first row's limit or past Skv. Element e of
     * tile nt is (row lane/4 + 8 (e/2), key j0 + 8 nt + 2 (lane%4) + e%2). */
    const bool need_mask = j0 + BN > a.skv || (a.causal && j0 + BN - 1 > first_limit);
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v = s[mt][nt][e] * a.scale_log2;
                if (need_mask && j0 + nt * 8 + 2 * (lane & 3) + (e & 1) > limit[mt][e >> 1]) v = ATTN_NEG_INF;
                s[mt][nt][e] = v;
            }

    /* Online softmax: each row's max over the block (the quad of lanes that holds the row), the correction of
     * what came before, the weights 2^(s - m) in place of the scores, and this thread's part of the sum. */
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float mx = ATTN_NEG_INF;
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[mt][h], mx);
            const float m_use = m_new == ATTN_NEG_INF ? 0.0f : m_new;
            const float alpha = attn_ex2(m[mt][h] - m_use);
            m[mt][h] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++) {
                const float p0 = attn_ex2(s[mt][nt][2 * h] - m_use), p1 = attn_ex2(s[mt][nt][2 * h + 1] - m_use);
                s[mt][nt][2 * h] = p0;
                s[mt][nt][2 * h + 1] = p1;
                sum += p0 + p1;
            }
            l[mt][h] = l[mt][h] * alpha + sum;
#pragma unroll
            for (int t2 = 0; t2 < DP / 8; t2++) {
                o[mt][t2][2 * h] *= alpha;
                o[mt][t2][2 * h + 1] *= alpha;
            }
        }
}

/* O += P V for one key block (the V tile at v_st), P the weights in s. */
__device__ __forceinline__ void attn_pv(unsigned v_st, int lane, const float (&s)[MT][BN / 8][4],
                                        float (&o)[MT][DP / 8][4]) {
    /* O += P V: P's A fragment for keys 16 kc .. 16 kc + 15 is S tiles 2 kc and 2 kc + 1. With PSPLIT the
     * weights go in as two 16-bit parts, the rounded weight and the rounding's remainder (exact in f32), so P
     * keeps ~22 bits (f16) or ~16 bits (bf16) instead of 11 or 8. */
#pragma unroll
    for (int kc = 0; kc < BN / 16; kc++) {
        unsigned pa[MT][4], pb[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const float *e = &s[mt][2 * kc + (q >> 1)][2 * (q & 1)];
                pa[mt][q] = attn_pack2(e[0], e[1]);
                if (PSPLIT) pb[mt][q] = attn_pack2(e[0] - attn_lo16(pa[mt][q]), e[1] - attn_hi16(pa[mt][q]));
            }
#pragma unroll
        for (int dp = 0; dp < DP / 16; dp++) {
            /* matrices (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15),
             * transposed on load: each thread gets V[2t..2t+1][g] as the col-major B fragment wants */
            unsigned vf[4];
            trr_ldsm_x4_trans(v_st + (kc * 16 + (lane & 7) + (((lane >> 3) & 1) << 3)) * ROWB +
                                   (dp * 2 + (lane >> 4)) * 16,
                               vf);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                attn_mma(o[mt][2 * dp], pa[mt], vf[0], vf[1]);
                attn_mma(o[mt][2 * dp + 1], pa[mt], vf[2], vf[3]);
                if (PSPLIT) {
                    attn_mma(o[mt][2 * dp], pb[mt], vf[0], vf[1]);
                    attn_mma(o[mt][2 * dp + 1], pb[mt], vf[2], vf[3]);
                }
            }
        }
    }
}

#if !KEY_WARPS
extern "C" __global__ void __launch_bounds__(THREADS) attention_mma(const attn_args a) {
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned q_sm = trr_smem_addr(smem);
    const unsigned kv_sm = q_sm + Q_BYTES;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const attn_place pl = attn_locate(a, BM);
    const int m0 = pl.mb * BM;
    int kb0 = 0;
    const int nkb = attn_key_blocks(a, m0, BM, BN, pl.split, &kb0);

    const unsigned short *qg = (const unsigned short *)a.q + (long long)pl.b * a.q_b + (long long)pl.g * a.group * a.q_h;
    const unsigned short *kg = (const unsigned short *)a.k + (long long)pl.b * a.k_b + (long long)pl.g * a.k_h;
    const unsigned short *vg = (const unsigned short *)a.v + (long long)pl.b * a.v_b + (long long)pl.g * a.v_h;

    /* this thread's rows: (mt, h) is row m0 + warp*MT*16 + mt*16 + lane/4 + 8h */
    const int wrow = warp * MT * 16;
    int limit[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) limit[mt][h] = attn_limit(a, m0 + wrow + mt * 16 + (lane >> 2) + 8 * h);
    const int i_lo = m0 / a.group;                  /* the block's first query */
    const int first_limit = i_lo + (a.skv - a.sq);  /* the least limit of the block's rows under causal */

    float o[MT][DP / 8][4];
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int t = 0; t < DP / 8; t++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[mt][t][e] = 0.0f;
        m[mt][0] = m[mt][1] = ATTN_NEG_INF;
        l[mt][0] = l[mt][1] = 0.0f;
    }
    unsigned qf[Q_IN_REGS ? MT : 1][Q_IN_REGS ? DP / 16 : 1][4];

    if (nkb > 0) {
        attn_load_q(a, q_sm, qg, m0, tid);
#if STAGES == 1
        attn_load_kv(kv_sm, kg, a.k_s, kb0 * BN, a.skv, a.d, a.vec, tid);
        trr_cp_commit();
#else
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < nkb) {
                attn_load_kv(kv_sm + s * 2 * KV_BYTES, kg, a.k_s, (kb0 + s) * BN, a.skv, a.d, a.vec, tid);
                attn_load_kv(kv_sm + s * 2 * KV_BYTES + KV_BYTES, vg, a.v_s, (kb0 + s) * BN, a.skv, a.d, a.vec, tid);
            }
            trr_cp_commit();
        }
#endif
    }

    for (int t = 0; t < nkb; t++) {
        const int j0 = (kb0 + t) * BN;
#if STAGES == 1
        const unsigned k_st = kv_sm, v_st = kv_sm + KV_BYTES;
        trr_cp_wait<0>();
        __syncthreads(); /* K_t (and Q) landed; every warp is done reading V_{t-1} */
        attn_load_kv(v_st, vg, a.v_s, j0, a.skv, a.d, a.vec, tid);
        trr_cp_commit();
#else
        const int st = t % STAGES;
        const unsigned k_st = kv_sm + st * 2 * KV_BYTES, v_st = k_st + KV_BYTES;
        trr_cp_wait<STAGES - 2>();
        __syncthreads(); /* block t landed; every warp is done with the stage refilled below (block t - 1's) */
        {
            const int nt = t + STAGES - 1;
            if (nt < nkb) {
                const unsigned dst = kv_sm + (nt % STAGES) * 2 * KV_BYTES;
                attn_load_kv(dst, kg, a.k_s, (kb0 + nt) * BN, a.skv, a.d, a.vec, tid);
                attn_load_kv(dst + KV_BYTES, vg, a.v_s, (kb0 + nt) * BN, a.skv, a.d, a.vec, tid);
            }
            trr_cp_commit();
        }
#endif
        if (Q_IN_REGS && t == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int kc = 0; kc < DP / 16; kc++)
                    trr_ldsm_x4(q_sm + (wrow + mt * 16 + (lane & 15)) * ROWB + (kc * 2 + (lane >> 4)) * 16,
                                 qf[Q_IN_REGS ? mt : 0][Q_IN_REGS ? kc : 0]);
        }

        float s[MT][BN / 8][4];
        attn_scores(a, q_sm, k_st, wrow, lane, j0, first_limit, limit, qf, s, o, m, l);

#if STAGES == 1
        trr_cp_wait<0>();
        __syncthreads(); /* V_t landed; every warp is done reading K_t */
        if (t + 1 < nkb) attn_load_kv(k_st, kg, a.k_s, j0 + BN, a.skv, a.d, a.vec, tid);
        trr_cp_commit();
#endif

        attn_pv(v_st, lane, s, o);
    }
    trr_cp_wait<0>();

    /* epilogue: the quad's sums, then o / l and lse for every row that exists */
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float sum = l[mt][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const int r = m0 + wrow + mt * 16 + (lane >> 2) + 8 * h;
            if (r >= a.rows) continue;
            const attn_out_row w = attn_out(a, pl.b, pl.g, r);
            const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
            for (int t2 = 0; t2 < DP / 8; t2++)
                attn_store_pair(a, pl.split, w, t2 * 8 + 2 * (lane & 3), attn_norm(o[mt][t2][2 * h], sum, inv),
                                attn_norm(o[mt][t2][2 * h + 1], sum, inv));
            if ((lane & 3) == 0) attn_store_lse(a, pl.split, w, m[mt][h], sum);
        }
}
#else /* KEY_WARPS */
/* The decode form (BM 16, WARPS > 1): a kv head's few query rows (G x Sq <= 16) against many keys, where the
 * speed is how many bytes of K and V stay in flight. Every warp holds the block's 16 rows and walks its own key
 * blocks of the split, warp w taking blocks w, w + WARPS, ... (the block's warps together read K and V in order),
 * each through its own ring of STAGES (K, V) stages filled STAGES - 1 blocks ahead by cp.async, so the warps never
 * wait for one another inside the loop. At the end every warp leaves its unnormalised o, its max and its sum in its
 * own ring, and the block joins them as the combine kernel joins splits: o = sum_w 2^(m_w - M) o_w / L.
 * Shared memory: the Q tile, then WARPS rings of 2 STAGES tiles of BN keys. */
#define RING_BYTES (2 * STAGES * KV_BYTES)
#define WRSTEP (32 / CP2)
#if STAGES < 2
#error "attention_mma (key warps): a ring of 2 to 4 stages a warp"
#endif
#if RING_BYTES < 16 * DP * 4 + 2 * 16 * 4
#error "attention_mma (key warps): a warp's ring must hold its partial o, max and sum"
#endif

/* Keys [j0, j0 + BN) of one head's K or V into a warp's tile at dst, by the warp's 32 lanes alone (attn_load_kv's
 * scheme over 32 threads). */
__device__ __forceinline__ void attn_load_kv_warp(unsigned dst, const unsigned short *base, long long ks, int j0,
                                                  int skv, int d, int vec, int lane) {
    const int c = lane % CP2, r0 = lane / CP2, e = c * 8;
    if (c >= CPR) return;
#pragma unroll 4
    for (int r = r0; r < BN; r += WRSTEP) {
        const int j = j0 + r;
        const bool ok = j < skv && e < d;
        attn_chunk(dst + r * ROWB + c * 16, base + (ok ? (long long)j * ks + e : 0), ok, e, d, vec);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) attention_mma(const attn_args a) {
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned q_sm = trr_smem_addr(smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned ring = q_sm + Q_BYTES + warp * RING_BYTES;
    const attn_place pl = attn_locate(a, BM);
    const int m0 = pl.mb * BM;
    int kb0 = 0;
    const int nkb = attn_key_blocks(a, m0, BM, BN, pl.split, &kb0);
    /* this warp's key blocks: kb0 + warp + WARPS t for t < nw */
    const int nw = nkb > warp ? (nkb - warp + WARPS - 1) / WARPS : 0;

    const unsigned short *qg = (const unsigned short *)a.q + (long long)pl.b * a.q_b + (long long)pl.g * a.group * a.q_h;
    const unsigned short *kg = (const unsigned short *)a.k + (long long)pl.b * a.k_b + (long long)pl.g * a.k_h;
    const unsigned short *vg = (const unsigned short *)a.v + (long long)pl.b * a.v_b + (long long)pl.g * a.v_h;

    /* this thread's rows: h is row m0 + lane/4 + 8h, in every warp */
    int limit[1][2];
#pragma unroll
    for (int h = 0; h < 2; h++) limit[0][h] = attn_limit(a, m0 + (lane >> 2) + 8 * h);
    const int first_limit = m0 / a.group + (a.skv - a.sq);

    float o[1][DP / 8][4];
    float m[1][2], l[1][2];
#pragma unroll
    for (int t = 0; t < DP / 8; t++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[0][t][e] = 0.0f;
    m[0][0] = m[0][1] = ATTN_NEG_INF;
    l[0][0] = l[0][1] = 0.0f;
    unsigned qf[1][Q_IN_REGS ? DP / 16 : 1][4];

    if (nkb > 0) attn_load_q(a, q_sm, qg, m0, tid);
    trr_cp_commit(); /* Q: the oldest group */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nw) {
            const int j = (kb0 + warp + s * WARPS) * BN;
            attn_load_kv_warp(ring + s * 2 * KV_BYTES, kg, a.k_s, j, a.skv, a.d, a.vec, lane);
            attn_load_kv_warp(ring + s * 2 * KV_BYTES + KV_BYTES, vg, a.v_s, j, a.skv, a.d, a.vec, lane);
        }
        trr_cp_commit();
    }
    trr_cp_wait<STAGES - 1>();
    __syncthreads(); /* Q landed, from every thread's copies */
    if (Q_IN_REGS && nw > 0) {
#pragma unroll
        for (int kc = 0; kc < DP / 16; kc++)
            trr_ldsm_x4(q_sm + (lane & 15) * ROWB + (kc * 2 + (lane >> 4)) * 16, qf[0][Q_IN_REGS ? kc : 0]);
    }

    for (int t = 0; t < nw; t++) {
        const int j0 = (kb0 + warp + t * WARPS) * BN;
        const unsigned k_st = ring + (t % STAGES) * 2 * KV_BYTES, v_st = k_st + KV_BYTES;
        trr_cp_wait<STAGES - 2>();
        __syncwarp(); /* block t landed from every lane; every lane is done with the stage refilled below */
        {
            const int nt = t + STAGES - 1;
            if (nt < nw) {
                const unsigned dst = ring + (nt % STAGES) * 2 * KV_BYTES;
                const int j = (kb0 + warp + nt * WARPS) * BN;
                attn_load_kv_warp(dst, kg, a.k_s, j, a.skv, a.d, a.vec, lane);
                attn_load_kv_warp(dst + KV_BYTES, vg, a.v_s, j, a.skv, a.d, a.vec, lane);
            }
            trr_cp_commit();
        }
        float s[1][BN / 8][4];
        attn_scores(a, q_sm, k_st, 0, lane, j0, first_limit, limit, qf, s, o, m, l);
        attn_pv(v_st, lane, s, o);
    }
    trr_cp_wait<0>();
    __syncwarp(); /* every lane is done reading the ring, which now takes the warp's partials */

    /* the warp's partials in its ring: o [16][DP] (f32, unnormalised), then max [16] and sum [16] */
    float *po = (float *)(smem + Q_BYTES + warp * RING_BYTES);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float sum = l[0][h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int r = (lane >> 2) + 8 * h;
#pragma unroll
        for (int t2 = 0; t2 < DP / 8; t2++)
            *(float2 *)(po + r * DP + t2 * 8 + 2 * (lane & 3)) = make_float2(o[0][t2][2 * h], o[0][t2][2 * h + 1]);
        if ((lane & 3) == 0) {
            po[16 * DP + r] = m[0][h];
            po[16 * DP + 16 + r] = sum;
        }
    }
    __syncthreads(); /* every warp's partials are written */

    /* the join: a thread per (row, column pair) at a time, the row's max and sum recomputed from the warps' */
    const float *p0 = (const float *)(smem + Q_BYTES);
    for (int idx = tid; idx < 16 * (DP / 2); idx += THREADS) {
        const int r = idx / (DP / 2), col = (idx % (DP / 2)) * 2;
        if (m0 + r >= a.rows) continue;
        float mx = ATTN_NEG_INF;
#pragma unroll
        for (int w = 0; w < WARPS; w++) mx = fmaxf(mx, p0[w * (RING_BYTES / 4) + 16 * DP + r]);
        const float m_use = mx == ATTN_NEG_INF ? 0.0f : mx;
        float sum = 0.0f, v0 = 0.0f, v1 = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) {
            /* a warp whose keys the row did not see (sum 0) is left out: its o may hold 0 x inf from masked v */
            const float *pw = p0 + w * (RING_BYTES / 4);
            const float lw = pw[16 * DP + 16 + r];
            if (lw > 0.0f) {
                const float f = attn_ex2(pw[16 * DP + r] - m_use);
                sum += lw * f;
                v0 += pw[r * DP + col] * f;
                v1 += pw[r * DP + col + 1] * f;
            }
        }
        const attn_out_row w = attn_out(a, pl.b, pl.g, m0 + r);
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        attn_store_pair(a, pl.split, w, col, attn_norm(v0, sum, inv), attn_norm(v1, sum, inv));
        if (col == 0) attn_store_lse(a, pl.split, w, mx, sum);
    }
}
#endif /* KEY_WARPS */
#endif /* KIND == 0 */

#if KIND == 1
/* ================================ CUDA cores, f32 ================================
 * 128 threads as 8 row groups (ty) x 16 lanes (tx); BM = 32 rows, 4 a row group; BN keys a step (16 or 32).
 * Tiles in shared memory as f32: Q [BM][DP+1], K [BN][DP+1] (odd row strides: the 16 lanes of a row group read
 * 16 different keys at one d from 16 different banks), V [BN][DP], P [BM][BN+1]. A thread computes the scores
 * of its 4 rows at keys tx, tx + 16, ..., owns o for its 4 rows at columns tx, tx + 16, ..., and the 16 lanes of
 * a row group reduce its rows' max by shuffles. Products, weights and sums are all f32: no rounding of P.
 */
#define THREADS 128
#define SBM 32
#define QS (DP + 1)
#define KS (DP + 1)
#define PS (BN + 1)
#define NK (BN / 16)
#define ND (DP / 16)

__device__ __forceinline__ float attn_ld(const TE *p) { return trr_to_f32(*p); }

extern "C" __global__ void __launch_bounds__(THREADS) attention_simt(const attn_args a) {
    extern __shared__ float fsm[];
    float *qs = fsm, *ks = qs + SBM * QS, *vs = ks + BN * KS, *ps = vs + BN * DP;
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const attn_place pl = attn_locate(a, SBM);
    const int m0 = pl.mb * SBM;
    int kb0 = 0;
    const int nkb = attn_key_blocks(a, m0, SBM, BN, pl.split, &kb0);
    const TE *qg = (const TE *)a.q + (long long)pl.b * a.q_b + (long long)pl.g * a.group * a.q_h;
    const TE *kg = (const TE *)a.k + (long long)pl.b * a.k_b + (long long)pl.g * a.k_h;
    const TE *vg = (const TE *)a.v + (long long)pl.b * a.v_b + (long long)pl.g * a.v_h;

    /* Q once, zeros past D and past the last row */
    for (int idx = tid; idx < SBM * DP; idx += THREADS) {
        const int r = idx / DP, e = idx % DP, row = m0 + r;
        float v = 0.0f;
        if (row < a.rows && e < a.d)
            v = attn_ld(qg + (long long)(row % a.group) * a.q_h + (long long)(row / a.group) * a.q_s + e);
        qs[r * QS + e] = v;
    }
    int limit[4];
#pragma unroll
    for (int i = 0; i < 4; i++) limit[i] = attn_limit(a, m0 + ty * 4 + i);
    const int first_limit = m0 / a.group + (a.skv - a.sq);

    float o[4][ND], m[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int c = 0; c < ND; c++) o[i][c] = 0.0f;
        m[i] = ATTN_NEG_INF;
        l[i] = 0.0f;
    }

    for (int t = 0; t < nkb; t++) {
        const int j0 = (kb0 + t) * BN;
        __syncthreads(); /* every thread is done with the previous block's K, V and P (and Q is written) */
        for (int idx = tid; idx < BN * DP; idx += THREADS) {
            const int r = idx / DP, e = idx % DP, j = j0 + r;
            const bool ok = j < a.skv && e < a.d;
            ks[r * KS + e] = ok ? attn_ld(kg + (long long)j * a.k_s + e) : 0.0f;
            vs[r * DP + e] = ok ? attn_ld(vg + (long long)j * a.v_s + e) : 0.0f;
        }
        __syncthreads();

        float s[4][NK];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int c = 0; c < NK; c++) s[i][c] = 0.0f;
#pragma unroll 4
        for (int e = 0; e < DP; e++) {
            float kv[NK];
#pragma unroll
            for (int c = 0; c < NK; c++) kv[c] = ks[(tx + 16 * c) * KS + e];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float qv = qs[(ty * 4 + i) * QS + e];
#pragma unroll
                for (int c = 0; c < NK; c++) s[i][c] = fmaf(qv, kv[c], s[i][c]);
            }
        }
        const bool need_mask = j0 + BN > a.skv || (a.causal && j0 + BN - 1 > first_limit);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float mx = ATTN_NEG_INF;
#pragma unroll
            for (int c = 0; c < NK; c++) {
                float v = s[i][c] * a.scale_log2;
                if (need_mask && j0 + tx + 16 * c > limit[i]) v = ATTN_NEG_INF;
                s[i][c] = v;
                mx = fmaxf(mx, v);
            }
#pragma unroll
            for (int off = 1; off < 16; off <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float m_new = fmaxf(m[i], mx);
            const float m_use = m_new == ATTN_NEG_INF ? 0.0f : m_new;
            const float alpha = attn_ex2(m[i] - m_use);
            m[i] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < NK; c++) {
                const float p = attn_ex2(s[i][c] - m_use);
                ps[(ty * 4 + i) * PS + tx + 16 * c] = p;
                sum += p;
            }
            l[i] = l[i] * alpha + sum;
#pragma unroll
            for (int c = 0; c < ND; c++) o[i][c] *= alpha;
        }
        __syncthreads(); /* P of every row group is written */
#pragma unroll 4
        for (int j = 0; j < BN; j++) {
            float vv[ND];
#pragma unroll
            for (int c = 0; c < ND; c++) vv[c] = vs[j * DP + tx + 16 * c];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float p = ps[(ty * 4 + i) * PS + j];
#pragma unroll
                for (int c = 0; c < ND; c++) o[i][c] = fmaf(p, vv[c], o[i][c]);
            }
        }
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
        float sum = l[i];
#pragma unroll
        for (int off = 1; off < 16; off <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        const int r = m0 + ty * 4 + i;
        if (r >= a.rows) continue;
        const attn_out_row w = attn_out(a, pl.b, pl.g, r);
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
        for (int c = 0; c < ND; c++) {
            const int col = tx + 16 * c;
            if (col >= a.d) continue;
            if (a.nsplit > 1)
                a.part_o[((long long)pl.split * a.batch * a.hq * a.sq + w.part) * a.d + col] = attn_norm(o[i][c], sum, inv);
            else
                ((TE *)a.o)[w.o_off + col] = trr_from_f32<TE>(attn_norm(o[i][c], sum, inv));
        }
        if (tx == 0) attn_store_lse(a, pl.split, w, m[i], sum);
    }
}
#endif /* KIND == 1 */

#if KIND == 2
/* ================================ combine the splits ================================
 * A warp per row (blockDim.x / 32 rows a block): lse = log2 sum_s 2^lse_s over the splits, o = sum_s
 * 2^(lse_s - lse) o_s, each o_s already normalised by its own sum. A row that no split saw gives o = 0 and
 * lse = -inf.
 */
extern "C" __global__ void attention_combine(const attn_args a) {
    const int lane = threadIdx.x & 31;
    const long long total = (long long)a.batch * a.hq * a.sq;
    const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= total) return;
    const float *pls = a.part_lse + row;
    float mx = ATTN_NEG_INF;
    for (int s = lane; s < a.nsplit; s += 32) mx = fmaxf(mx, pls[(long long)s * total]);
    mx = trr_warp_max(mx);
    float lse2 = ATTN_NEG_INF;
    if (mx != ATTN_NEG_INF) {
        float sum = 0.0f;
        for (int s = lane; s < a.nsplit; s += 32) sum += attn_ex2(pls[(long long)s * total] - mx);
        sum = trr_warp_sum(sum);
        lse2 = mx + log2f(sum);
    }
    const int i = (int)(row % a.sq);
    const long long bh = row / a.sq;
    const int h = (int)(bh % a.hq), b = (int)(bh / a.hq);
    TE *op = (TE *)a.o + (long long)b * a.o_b + (long long)h * a.o_h + (long long)i * a.o_s;
    for (int d = lane; d < a.d; d += 32) {
        float acc = 0.0f;
        if (lse2 != ATTN_NEG_INF)
            for (int s = 0; s < a.nsplit; s++) {
                const float w = attn_ex2(pls[(long long)s * total] - lse2);
                acc = fmaf(w, a.part_o[((long long)s * total + row) * a.d + d], acc);
            }
        op[d] = trr_from_f32<TE>(acc);
    }
    if (a.has_lse && lane == 0)
        a.lse[(long long)b * a.l_b + (long long)h * a.l_h + (long long)i * a.l_s] =
            lse2 == ATTN_NEG_INF ? ATTN_NEG_INF : lse2 * ATTN_LN2;
}
#endif /* KIND == 2 */

#if KIND == 3
/* ================================ Hopper: wgmma + TMA (sm_90a) ================================
 * FlashAttention-3's division of labour: 3 warpgroups, the first a producer whose one thread streams K and V
 * blocks through a ring of STAGES stages with TMA (K and V each with a "full" mbarrier the copies complete and an
 * "empty" one the consumers release), the other two consumers of 64 rows each (BM = 128 rows a block, packed as
 * the mma kernel packs them). A consumer computes S = Q K^T with wgmma (both operands in shared memory), the online
 * softmax on S in registers, and O += P V with wgmma taking P from registers (the S accumulator of a warp's 16 rows
 * is, rounded to 16 bits, the A fragment of P) and V from shared memory. Two overlaps keep the tensor cores
 * busy during the softmax: within a consumer, block t's softmax runs while its P_{t-1} V_{t-1} does (the loop
 * below); between the consumers, named barriers make them take turns issuing their wgmma (ping-pong), so that
 * one's softmax runs while the other's products do. setmaxnreg moves registers from the producer to the
 * consumers. Compile-time: DT (1 f16, 2 bf16), DP (64 or 128: D up to DP, the TMA fills columns past D with zeros),
 * BN (64 or 128 keys a step), STAGES, PSPLIT.
 * Requirements the host checks: compute capability 9.0 (sm_90a), q, k and v 16-byte aligned with 16-byte row,
 * head and batch strides (TMA's rules; q is loaded by the consumers with cp.async), k and v rows that do not
 * overlap.
 *
 * Shared memory (128-byte swizzle: 16-byte chunk c of a 128-byte row r at chunk c ^ (r % 8), every box
 * 1024-byte aligned): Q as DP/64 boxes of [128 rows][64 columns], each consumer's 64 rows at +8 KB (K-major A:
 * SBO 1024, k step of 16 at +32 bytes, next box at +16 KB); K and V stages as DP/64 boxes of [BN keys][64 columns]
 * (the TMA box). K is S's B operand K-major like Q; V is O's B operand N-major (d contiguous): LBO from one
 * 64-column box to the next (BN * 128 bytes), SBO 1024 from 8 keys to the next 8, a step of 16 keys at +2048.
 */
#include "hopper.cuh"

#define BM 128
#define AWG_THREADS 384
#define QBOX (BM * 128)
#define KVBOX (BN * 128)
#define Q_SMEM ((DP / 64) * QBOX)
#define KV_STAGE ((DP / 64) * KVBOX)
#define CPR (DP / 8)

#if (DP != 64 && DP != 128) || (BN != 64 && BN != 128)
#error "attention_wgmma: DP and BN must be 64 or 128"
#endif

#if DT == 2
#define AWG_AB "bf16"
#else
#define AWG_AB "f16"
#endif

/* Which coordinate of the K and V maps (1 to 3; 0 is d) holds the key, the kv head and the batch: the host orders
 * the maps' dimensions by stride. */
struct awg_coords {
    int s, h, b;
};

/* The consumers' turns on the tensor cores (ping-pong): named barrier AWG_TURN + cw, of 256 threads, is consumer
 * cw's turn; its own 128 threads wait there (bar.sync) and the other consumer's 128 arrive (bar.arrive) once they
 * have issued a turn's wgmma. Barrier 0 is __syncthreads', 1 the consumers' Q barrier. The ids are immediates
 * (a register id makes ptxas reserve all 16 barriers). */
#define AWG_TURN 2
__device__ __forceinline__ void awg_turn_wait(int cw) {
    if (cw == 0) asm volatile("bar.sync %0, 256;" ::"n"(AWG_TURN) : "memory");
    else asm volatile("bar.sync %0, 256;" ::"n"(AWG_TURN + 1) : "memory");
}
/* Hands the tensor cores to the other consumer (1 - cw). */
__device__ __forceinline__ void awg_turn_pass(int cw) {
    if (cw == 0) asm volatile("bar.arrive %0, 256;" ::"n"(AWG_TURN + 1) : "memory");
    else asm volatile("bar.arrive %0, 256;" ::"n"(AWG_TURN) : "memory");
}

/* D[64 x n] (+)= A (shared, K-major) . B (shared, K-major); scale 0 overwrites D. */
TRR_WG_SS_FN(awg_ss_n64, 64, "k16", AWG_AB, AWG_AB, ", 1, 1, 0, 0")
TRR_WG_SS_FN(awg_ss_n128, 128, "k16", AWG_AB, AWG_AB, ", 1, 1, 0, 0")

/* D[64 x n] (+)= A (registers: each warp's 16 rows as the m16n8k16 A fragment) . B (shared, N-major): the
 * accumulator first (%0 up), then A's four registers, B's descriptor and scale-d's flag. */
__device__ __forceinline__ void awg_rs_n64(float *d, const unsigned *a, unsigned long long db, int scale) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." AWG_AB "." AWG_AB " {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : TRR_WG_BIND_64
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale));
}
__device__ __forceinline__ void awg_rs_n128(float *d, const unsigned *a, unsigned long long db, int scale) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." AWG_AB "." AWG_AB " {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : TRR_WG_BIND_128
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale));
}

#if BN == 128
#define AWG_SS awg_ss_n128
#else
#define AWG_SS awg_ss_n64
#endif
#if DP == 128
#define AWG_RS awg_rs_n128
#else
#define AWG_RS awg_rs_n64
#endif

extern "C" __global__ void __launch_bounds__(AWG_THREADS, 1)
    attention_wgmma(const __grid_constant__ trr_tensor_map tmk, const __grid_constant__ trr_tensor_map tmv,
                    const awg_coords co, const attn_args a) {
    extern __shared__ unsigned char awg_smem[];
    __shared__ __align__(8) unsigned long long kfull[STAGES], kempty[STAGES], vfull[STAGES], vempty[STAGES];
    /* swizzle atoms repeat every 1024 bytes: the tiles start on such a boundary (the host adds 1 KB) */
    const unsigned q_sm = (trr_smem_addr(awg_smem) + 1023u) & ~1023u;
    const unsigned k_sm = q_sm + Q_SMEM, v_sm = k_sm + STAGES * KV_STAGE;
    const unsigned kf0 = trr_smem_addr(kfull), ke0 = trr_smem_addr(kempty), vf0 = trr_smem_addr(vfull),
                   ve0 = trr_smem_addr(vempty);
    const int tid = threadIdx.x, wg = tid >> 7;
    const attn_place pl = attn_locate(a, BM);
    const int m0 = pl.mb * BM;
    int kb0 = 0;
    const int nkb = attn_key_blocks(a, m0, BM, BN, pl.split, &kb0);

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++) {
            trr_mbar_init(kf0 + 8 * s, 1);
            trr_mbar_init(vf0 + 8 * s, 1);
            trr_mbar_init(ke0 + 8 * s, 256);
            trr_mbar_init(ve0 + 8 * s, 256);
        }
        trr_mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {
        /* producer: one thread streams K and V */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
        if (tid == 0 && nkb > 0) {
            trr_prefetch_map(&tmk);
            trr_prefetch_map(&tmv);
            for (int t = 0; t < nkb; t++) {
                const int s = t % STAGES;
                const unsigned reuse = (unsigned)((t / STAGES) - 1) & 1u; /* the phase that freed the stage */
                /* coordinates 1..3: the key, kv head and batch in the maps' order */
                const int key = (kb0 + t) * BN;
                int c[4];
#pragma unroll
                for (int i = 1; i < 4; i++) c[i] = co.s == i ? key : co.h == i ? pl.g : pl.b;
                if (t >= STAGES) trr_mbar_wait(ke0 + 8 * s, reuse);
                trr_mbar_expect(kf0 + 8 * s, KV_STAGE);
#pragma unroll
                for (int x = 0; x < DP / 64; x++) {
                    c[0] = 64 * x;
                    trr_tma_load_4d(k_sm + s * KV_STAGE + x * KVBOX, &tmk, c, kf0 + 8 * s);
                }
                if (t >= STAGES) trr_mbar_wait(ve0 + 8 * s, reuse);
                trr_mbar_expect(vf0 + 8 * s, KV_STAGE);
#pragma unroll
                for (int x = 0; x < DP / 64; x++) {
                    c[0] = 64 * x;
                    trr_tma_load_4d(v_sm + s * KV_STAGE + x * KVBOX, &tmv, c, vf0 + 8 * s);
                }
            }
        }
        return;
    }

    /* consumers: warpgroup cw owns rows cw*64 .. cw*64 + 63 of the block */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    const int cw = wg - 1, ct = tid - 128, t128 = tid & 127, warp = t128 >> 5, lane = tid & 31;

    /* Q by the 256 consumer threads (cp.async, 16-byte chunks into the swizzled boxes), visible to wgmma */
    if (nkb > 0) {
        const unsigned short *qg =
            (const unsigned short *)a.q + (long long)pl.b * a.q_b + (long long)pl.g * a.group * a.q_h;
        for (int idx = ct; idx < BM * CPR; idx += 256) {
            const int r = idx / CPR, cc = idx % CPR, e = cc * 8, row = m0 + r;
            const bool ok = row < a.rows && e < a.d;
            const unsigned short *src =
                qg + (ok ? (long long)(row % a.group) * a.q_h + (long long)(row / a.group) * a.q_s + e : 0);
            const unsigned dst = q_sm + (cc >> 3) * QBOX + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
            trr_cp_async(dst, src, ok ? min(8, a.d - e) * 2 : 0);
        }
        trr_cp_commit();
        trr_cp_wait<0>();
        /* a negative scale: Q negated (exactly: the sign bits), so that S holds scale's sign and the softmax
         * scales by |scale| inside its exponent's fma, its max taken over S as it comes */
        if (a.scale_log2 < 0.0f)
            for (int idx = ct; idx < BM * CPR; idx += 256) {
                const int r = idx / CPR, cc = idx % CPR;
                const unsigned dst = q_sm + (cc >> 3) * QBOX + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
                unsigned w[4];
                asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                             : "r"(dst)
                             : "memory");
                asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(dst), "r"(w[0] ^ 0x80008000u),
                             "r"(w[1] ^ 0x80008000u), "r"(w[2] ^ 0x80008000u), "r"(w[3] ^ 0x80008000u)
                             : "memory");
            }
        trr_fence_proxy_async();
    }
    asm volatile("bar.sync 1, 256;" ::: "memory");
    const float sl = fabsf(a.scale_log2); /* |scale| log2(e) */

    int limit[2];
#pragma unroll
    for (int h = 0; h < 2; h++) limit[h] = attn_limit(a, m0 + cw * 64 + warp * 16 + (lane >> 2) + 8 * h);
    const int first_limit = m0 / a.group + (a.skv - a.sq);

    float o[DP / 2];
#pragma unroll
    for (int i = 0; i < DP / 2; i++) o[i] = 0.0f;
    float m[2] = {ATTN_NEG_INF, ATTN_NEG_INF}, l[2] = {0.0f, 0.0f};

    /* The loop keeps one block's P . V in flight while the next block's scores go through the softmax: block t's
     * S = Q K_t is issued, then O += P_{t-1} V_{t-1}; once S_t is done its max, weights and sum are computed while
     * the P . V still runs, and only the rescaling of O (and the new P, whose registers the running wgmma reads)
     * waits for it. */
    float sc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) sc[i] = 0.0f;
    unsigned pa[BN / 16][4], pb[PSPLIT ? BN / 16 : 1][4];
    float alpha[2] = {1.0f, 1.0f};

    /* S_t = Q K_t, issued and committed */
    auto issue_s = [&](int t) {
        const int s = t % STAGES;
        trr_mbar_wait(kf0 + 8 * s, (unsigned)(t / STAGES) & 1u);
        trr_wg_fence();
#pragma unroll
        for (int kk = 0; kk < DP / 16; kk++)
            AWG_SS(sc, trr_wg_desc(q_sm + (kk >> 2) * QBOX + cw * (64 * 128) + (kk & 3) * 32, 16, 1024),
                      trr_wg_desc(k_sm + s * KV_STAGE + (kk >> 2) * KVBOX + (kk & 3) * 32, 16, 1024), kk > 0);
        trr_wg_commit();
    };
    /* O += P V_t, issued and committed (P from pa, pb) */
    auto issue_pv = [&](int t) {
        const int s = t % STAGES;
        trr_mbar_wait(vf0 + 8 * s, (unsigned)(t / STAGES) & 1u);
        trr_wg_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            const unsigned long long dv = trr_wg_desc(v_sm + s * KV_STAGE + kk * 2048, KVBOX, 1024);
            AWG_RS(o, pa[kk], dv, 1);
            if (PSPLIT) AWG_RS(o, pb[PSPLIT ? kk : 0], dv, 1);
        }
        trr_wg_commit();
    };
    /* block t's scores (done) into weights: mask, the rows' new max, the correction alpha of what came before,
     * the sums; O is not touched */
    auto softmax = [&](int t) {
        const int j0 = (kb0 + t) * BN;
        /* element e of 8-key group nt is (row lane/4 + 8 (e/2) of the warp's 16, key j0 + 8 nt + 2 (lane%4) + e%2) */
        const bool need_mask = j0 + BN > a.skv || (a.causal && j0 + BN - 1 > first_limit);
        if (need_mask)
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (j0 + nt * 8 + 2 * (lane & 3) + (e & 1) > limit[e >> 1]) sc[4 * nt + e] = ATTN_NEG_INF;
        /* S is scale's sign times q.k and sl > 0, so the max of the scaled scores is sl times S's max (rounding
         * is monotonic) and each weight's argument one fma */
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float mx = ATTN_NEG_INF;
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++) mx = fmaxf(mx, fmaxf(sc[4 * nt + 2 * h], sc[4 * nt + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx * sl);
            const float m_use = m_new == ATTN_NEG_INF ? 0.0f : m_new;
            alpha[h] = attn_ex2(m[h] - m_use);
            m[h] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int nt = 0; nt < BN / 8; nt++) {
                const float p0 = attn_ex2(fmaf(sc[4 * nt + 2 * h], sl, -m_use)),
                            p1 = attn_ex2(fmaf(sc[4 * nt + 2 * h + 1], sl, -m_use));
                sc[4 * nt + 2 * h] = p0;
                sc[4 * nt + 2 * h + 1] = p1;
                sum += p0 + p1;
            }
            l[h] = l[h] * alpha[h] + sum;
        }
    };
    /* with no P . V in flight: O rescaled, and the weights as P's A fragments (16 keys each: groups 2 kk and
     * 2 kk + 1), two parts with PSPLIT */
    auto rescale_and_pack = [&]() {
#pragma unroll
        for (int j = 0; j < DP / 8; j++) {
            o[4 * j] *= alpha[0];
            o[4 * j + 1] *= alpha[0];
            o[4 * j + 2] *= alpha[1];
            o[4 * j + 3] *= alpha[1];
        }
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const float *e = &sc[4 * (2 * kk + (q >> 1)) + 2 * (q & 1)];
                pa[kk][q] = attn_pack2(e[0], e[1]);
                if (PSPLIT) pb[PSPLIT ? kk : 0][q] = attn_pack2(e[0] - attn_lo16(pa[kk][q]), e[1] - attn_hi16(pa[kk][q]));
            }
    };
    auto pv_done = [&](int t) {
        trr_pin<DP / 2>(o);
        trr_pin_u<(BN / 16) * 4>(&pa[0][0]);
        if (PSPLIT) trr_pin_u<(PSPLIT ? BN / 16 : 1) * 4>(&pb[0][0]);
        trr_mbar_arrive(ve0 + 8 * (t % STAGES));
    };

    /* The consumers take turns issuing (ping-pong): consumer 0 issues a turn's wgmma, then consumer 1, then 0
     * again, so that the tensor cores run one consumer's products while the other computes its softmax, instead
     * of both waiting for their scores at once. Each consumer has nkb + 1 turns (S_0; S_t with P_{t-1} V_{t-1};
     * P_{nkb-1} V_{nkb-1}); consumer 1 opens consumer 0's first turn and does not pass its last, so every arrival
     * on a turn barrier meets a wait (nkb, a block's key blocks, is the same for both). */
    if (nkb > 0) {
        if (cw == 1) awg_turn_pass(cw);
        awg_turn_wait(cw);
        issue_s(0);
        awg_turn_pass(cw);
        trr_wg_wait<0>();
        trr_pin<BN / 2>(sc);
        trr_mbar_arrive(ke0);
        softmax(0);
        rescale_and_pack();
        for (int t = 1; t < nkb; t++) {
            awg_turn_wait(cw);
            issue_s(t);
            issue_pv(t - 1);
            awg_turn_pass(cw);
            trr_wg_wait<1>(); /* S_t done; P_{t-1} V_{t-1} may still run */
            trr_pin<BN / 2>(sc);
            trr_mbar_arrive(ke0 + 8 * (t % STAGES));
            softmax(t);
            trr_wg_wait<0>();
            pv_done(t - 1);
            rescale_and_pack();
        }
        awg_turn_wait(cw);
        issue_pv(nkb - 1);
        if (cw == 0) awg_turn_pass(cw);
        trr_wg_wait<0>();
        pv_done(nkb - 1);
    }

    /* epilogue: as attention_mma's, the accumulator's 8-column group j holding columns 8 j + 2 (lane%4) + {0, 1} */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float sum = l[h];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int r = m0 + cw * 64 + warp * 16 + (lane >> 2) + 8 * h;
        if (r >= a.rows) continue;
        const attn_out_row w = attn_out(a, pl.b, pl.g, r);
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
        for (int j = 0; j < DP / 8; j++)
            attn_store_pair(a, pl.split, w, j * 8 + 2 * (lane & 3), attn_norm(o[4 * j + 2 * h], sum, inv),
                            attn_norm(o[4 * j + 2 * h + 1], sum, inv));
        if ((lane & 3) == 0) attn_store_lse(a, pl.split, w, m[h], sum);
    }
}
#endif /* KIND == 3 */
