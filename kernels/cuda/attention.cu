/*
 * attention's forward pass (docs/ops.md, attention): o = softmax(scale . q k^T + mask) v per (batch, head), with
 * an online softmax over blocks of keys (f32 statistics and accumulators, o rounded once on store), and lse.
 * One file, four kernels chosen by KIND:
 *   0  attention_mma: f16/bf16 on mma.sync.m16n8k16 (sm_80 and up), FlashAttention-2's scheme;
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
__device__ __forceinline__ unsigned attn_smem_addr(const void *p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

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
#define MT (BM / (WARPS * 16))
#define ROWB (DP * 2 + 16)
#define CPR (DP / 8)
#define Q_BYTES (BM * ROWB)
#define KV_BYTES (BN * ROWB)
#define Q_IN_REGS (MT * DP <= 128)

#if BM % (WARPS * 16) != 0 || (MT != 1 && MT != 2) || DP % 16 != 0 || BN % 16 != 0
#error "attention_mma: BM must be 16 or 32 rows a warp; DP and BN multiples of 16"
#endif

__device__ __forceinline__ void attn_cp_async(unsigned dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void attn_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int n> __device__ __forceinline__ void attn_cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory");
}

__device__ __forceinline__ void attn_ldsm_x4(unsigned addr, unsigned *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void attn_ldsm_x4_trans(unsigned addr, unsigned *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

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
        attn_cp_async(dst, src, bytes); /* src is the row's base when !ok: a valid address, 0 bytes read */
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

extern "C" __global__ void __launch_bounds__(THREADS) attention_mma(const attn_args a) {
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned q_sm = attn_smem_addr(smem);
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
        attn_cp_commit();
#else
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < nkb) {
                attn_load_kv(kv_sm + s * 2 * KV_BYTES, kg, a.k_s, (kb0 + s) * BN, a.skv, a.d, a.vec, tid);
                attn_load_kv(kv_sm + s * 2 * KV_BYTES + KV_BYTES, vg, a.v_s, (kb0 + s) * BN, a.skv, a.d, a.vec, tid);
            }
            attn_cp_commit();
        }
#endif
    }

    for (int t = 0; t < nkb; t++) {
        const int j0 = (kb0 + t) * BN;
#if STAGES == 1
        const unsigned k_st = kv_sm, v_st = kv_sm + KV_BYTES;
        attn_cp_wait<0>();
        __syncthreads(); /* K_t (and Q) landed; every warp is done reading V_{t-1} */
        attn_load_kv(v_st, vg, a.v_s, j0, a.skv, a.d, a.vec, tid);
        attn_cp_commit();
#else
        const int st = t % STAGES;
        const unsigned k_st = kv_sm + st * 2 * KV_BYTES, v_st = k_st + KV_BYTES;
        attn_cp_wait<STAGES - 2>();
        __syncthreads(); /* block t landed; every warp is done with the stage refilled below (block t - 1's) */
        {
            const int nt = t + STAGES - 1;
            if (nt < nkb) {
                const unsigned dst = kv_sm + (nt % STAGES) * 2 * KV_BYTES;
                attn_load_kv(dst, kg, a.k_s, (kb0 + nt) * BN, a.skv, a.d, a.vec, tid);
                attn_load_kv(dst + KV_BYTES, vg, a.v_s, (kb0 + nt) * BN, a.skv, a.d, a.vec, tid);
            }
            attn_cp_commit();
        }
#endif
        if (Q_IN_REGS && t == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int kc = 0; kc < DP / 16; kc++)
                    attn_ldsm_x4(q_sm + (wrow + mt * 16 + (lane & 15)) * ROWB + (kc * 2 + (lane >> 4)) * 16,
                                 qf[Q_IN_REGS ? mt : 0][Q_IN_REGS ? kc : 0]);
        }

        /* S = Q K^T for this warp's rows and the block's BN keys */
        float s[MT][BN / 8][4];
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
                    attn_ldsm_x4(q_sm + (wrow + mt * 16 + (lane & 15)) * ROWB + (kc * 2 + (lane >> 4)) * 16, qa[mt]);
                }
            }
#pragma unroll
            for (int np = 0; np < BN / 16; np++) {
                /* matrices (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15) */
                unsigned kf[4];
                attn_ldsm_x4(k_st + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * ROWB +
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

#if STAGES == 1
        attn_cp_wait<0>();
        __syncthreads(); /* V_t landed; every warp is done reading K_t */
        if (t + 1 < nkb) attn_load_kv(k_st, kg, a.k_s, j0 + BN, a.skv, a.d, a.vec, tid);
        attn_cp_commit();
#endif

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
                attn_ldsm_x4_trans(v_st + (kc * 16 + (lane & 7) + (((lane >> 3) & 1) << 3)) * ROWB +
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
    attn_cp_wait<0>();

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
                attn_store_pair(a, pl.split, w, t2 * 8 + 2 * (lane & 3), o[mt][t2][2 * h] * inv,
                                o[mt][t2][2 * h + 1] * inv);
            if ((lane & 3) == 0) attn_store_lse(a, pl.split, w, m[mt][h], sum);
        }
}
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
                a.part_o[((long long)pl.split * a.batch * a.hq * a.sq + w.part) * a.d + col] = o[i][c] * inv;
            else
                ((TE *)a.o)[w.o_off + col] = trr_from_f32<TE>(o[i][c] * inv);
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
