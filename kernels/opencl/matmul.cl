/* C = act(A·B), one work-group per BLOCK_M x BLOCK_N tile of C, in the grouped order of docs/ops.md; a batched
 * call's batch is grid dimension 2.
 * Build options: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M; RT x CT work-items, each owning TM x TN outputs
 * (TM = BLOCK_M / RT, TN = BLOCK_N / CT, both multiples of 4); X_DT (A), Y_DT (B), Z_DT (C). 8-bit float
 * operands are widened to f32 as they are loaded; scale (their per-tensor scales' product, 1 for other dtypes)
 * multiplies the f32 sum before the epilogue.
 * A work-item's rows are ty·4 + i·RT·4 + {0..3} (columns likewise), so a warp reads local memory as float4s
 * that are either broadcast or contiguous, and stores C in contiguous runs.
 * Each work-item moves the tiles in chunks of four elements consecutive in memory: one 16-byte load (8 for
 * halves) where the operand's rows keep that alignment (VEC_A, VEC_B; VEC_C for an f32 C), four masked scalar
 * loads at an edge or otherwise. Tiles go through registers into two local buffers: the next tile's global loads
 * are in flight while the current one is multiplied, and one barrier per step suffices.
 * TRANS_A, TRANS_B, VEC_A, VEC_B, VEC_C are build options on GPUs, so each layout compiles to straight-line
 * code; without them (PoCL, where a compile takes about a second) the kernel's last five arguments carry the
 * same flags as uniform branches, and one program serves every layout. The epilogue is always an argument.
 * Arithmetic is true f32: fma() only, no fast-math or mad-enable.
 * FOLD (build option, long K with an f32 C; core/matmul_fold.h says why): every FOLD K tiles the accumulators are
 * added into a second set and restarted. */
#ifndef FOLD
#define FOLD 0
#endif

#define THREADS (RT * CT)
#define TM (BLOCK_M / RT)
#define TN (BLOCK_N / CT)
/* four-element chunks per work-item of the A and B tiles */
#define CA (BLOCK_M * BLOCK_K / 4 / THREADS)
#define CB (BLOCK_N * BLOCK_K / 4 / THREADS)
/* +4 keeps rows 16-byte aligned for float4 reads and spreads the column writes of a transposed load. */
#define LDA_S (BLOCK_M + 4)
#define LDB_S (BLOCK_N + 4)

#ifdef TRANS_A
#define TA TRANS_A
#define TB TRANS_B
#define VA VEC_A
#define VB VEC_B
#define VC VEC_C
#else
#define TA trans_a
#define TB trans_b
#define VA vec_a
#define VB vec_b
#define VC vec_c
#endif

/* Four elements from an address aligned to four of them, as floats (halves: vloada_half4 reads 8 aligned bytes). */
#define VLOAD4_DT_0(p) (*(__global const float4 *)(p))
#define VLOAD4_DT_1(p) vloada_half4(0, (p))
#define VLOAD4_DT_2(p) as_float4(convert_uint4(*(__global const ushort4 *)(p)) << 16)
#define VLOAD4_DT_4(p) trr_vload4_e4m3(*(__global const uchar4 *)(p))
#define VLOAD4_DT_5(p) trr_vload4_e5m2(*(__global const uchar4 *)(p))
inline float4 trr_vload4_e4m3(uchar4 b) {
    return (float4)(trr_e4m3_to_f32(b.x), trr_e4m3_to_f32(b.y), trr_e4m3_to_f32(b.z), trr_e4m3_to_f32(b.w));
}
inline float4 trr_vload4_e5m2(uchar4 b) {
    return (float4)(trr_e5m2_to_f32(b.x), trr_e5m2_to_f32(b.y), trr_e5m2_to_f32(b.z), trr_e5m2_to_f32(b.w));
}

/* p[0..3] as floats where only the first n (any int) lie inside the matrix; the rest read as 0. vec: p is
 * aligned to four elements. One definition per operand (load4_x, load4_y), each with its own element type. */
#define DEFINE_LOAD4(op, OP)                                                                                   \
    static inline float4 load4_##op(__global const op##_t *p, int n, int vec) {                                \
        if (vec && n >= 4) return CAT(VLOAD4_DT_, OP##_DT)(p);                                                 \
        float4 r = (float4)(0.0f);                                                                             \
        if (n > 0) r.x = LOAD_##OP(p, 0);                                                                      \
        if (n > 1) r.y = LOAD_##OP(p, 1);                                                                      \
        if (n > 2) r.z = LOAD_##OP(p, 2);                                                                      \
        if (n > 3) r.w = LOAD_##OP(p, 3);                                                                      \
        return r;                                                                                              \
    }
DEFINE_LOAD4(x, X)
DEFINE_LOAD4(y, Y)

/* One 4-element chunk into a k-major local tile: a float4 store where the chunk runs along m (n), else four
 * stores down a column of stride ld. */
static inline void store_chunk(__local float *p, float4 v, int ld, int along) {
    if (along) {
        *(__local float4 *)p = v;
    } else {
        p[0] = v.x;
        p[ld] = v.y;
        p[2 * ld] = v.z;
        p[3 * ld] = v.w;
    }
}

static inline float epilogue(float v, int epi, float alpha) {
    if (epi == 1) return v <= 0.0f ? 0.0f : v; /* a NaN stays NaN */
    if (epi == 2) return v >= 0.0f ? v : alpha * v;
    if (epi == 3) return GELU(v);
    return v;
}

__kernel __attribute__((reqd_work_group_size(RT * CT, 1, 1))) void matmul(
    __global const x_t *a, long aoff, int lda, __global const y_t *b, long boff, int ldb, __global z_t *c, long coff,
    int ldc, int M, int N, int K, int epi, float alpha, long a_bstride, long b_bstride, long c_bstride, int trans_a,
    int trans_b, int vec_a, int vec_b, int vec_c, __global float *part, int part_mode, float scale) {
    __local float4 as4[2 * BLOCK_K * LDA_S / 4];
    __local float4 bs4[2 * BLOCK_K * LDB_S / 4];
    __local float *as = (__local float *)as4;
    __local float *bs = (__local float *)bs4;
#ifdef TRANS_A
    (void)trans_a;
    (void)trans_b;
    (void)vec_a;
    (void)vec_b;
    (void)vec_c;
#endif

    /* dimension 2 of the grid is the batch: each batch's matrices start one batch stride further on */
    const long batch = (long)get_group_id(2);
    a += aoff + batch * a_bstride;
    b += boff + batch * b_bstride;
    c += coff + batch * c_bstride;
    int tid = (int)get_local_id(0);
    int tx = tid % CT, ty = tid / CT;

    int pm, pn;
    trr_grouped_block((int)get_group_id(0), (M + BLOCK_M - 1) / BLOCK_M, (N + BLOCK_N - 1) / BLOCK_N, GROUP_M, &pm, &pn);
    int m0 = pm * BLOCK_M, n0 = pn * BLOCK_N;

    /* The tile element that starts each of this work-item's chunks: chunks run along the operand's contiguous
     * dimension, and consecutive work-items take consecutive chunks, so global reads coalesce. */
    int a_m[CA], a_k[CA], b_k[CB], b_n[CB];
#pragma unroll
    for (int i = 0; i < CA; i++) {
        int e = tid + i * THREADS;
        a_m[i] = TA ? (e % (BLOCK_M / 4)) * 4 : e / (BLOCK_K / 4);
        a_k[i] = TA ? e / (BLOCK_M / 4) : (e % (BLOCK_K / 4)) * 4;
    }
#pragma unroll
    for (int i = 0; i < CB; i++) {
        int e = tid + i * THREADS;
        b_n[i] = TB ? e / (BLOCK_K / 4) : (e % (BLOCK_N / 4)) * 4;
        b_k[i] = TB ? (e % (BLOCK_K / 4)) * 4 : e / (BLOCK_N / 4);
    }

    float4 ra[CA], rb[CB];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
#if FOLD
    float folded[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) folded[i][j] = 0.0f;
#endif

    /* Global -> registers for the K tile at k0. A stored row is m (k when transposed), its chunk runs along the
     * other index; so for B with n and k swapped. */
#define LOAD_TILES(k0)                                                                                          \
    do {                                                                                                        \
        _Pragma("unroll") for (int i = 0; i < CA; i++) {                                                        \
            int gr = TA ? (k0) + a_k[i] : m0 + a_m[i], gc = TA ? m0 + a_m[i] : (k0) + a_k[i];                 \
            int n = gr < (TA ? K : M) ? (TA ? M : K) - gc : 0;                                                  \
            ra[i] = load4_x(a + (long)gr * lda + gc, n, VA);                                                    \
        }                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < CB; i++) {                                                        \
            int gr = TB ? n0 + b_n[i] : (k0) + b_k[i], gc = TB ? (k0) + b_k[i] : n0 + b_n[i];                 \
            int n = gr < (TB ? N : K) ? (TB ? K : N) - gc : 0;                                                  \
            rb[i] = load4_y(b + (long)gr * ldb + gc, n, VB);                                                    \
        }                                                                                                       \
    } while (0)
    /* Registers -> local buffer buf, both tiles k-major: a chunk along m (n) is one float4 store, a chunk along
     * k four scalar stores down a column. */
#define STORE_TILES(buf)                                                                                        \
    do {                                                                                                        \
        _Pragma("unroll") for (int i = 0; i < CA; i++)                                                          \
            store_chunk(as + (buf) * BLOCK_K * LDA_S + a_k[i] * LDA_S + a_m[i], ra[i], LDA_S, TA);              \
        _Pragma("unroll") for (int i = 0; i < CB; i++)                                                          \
            store_chunk(bs + (buf) * BLOCK_K * LDB_S + b_k[i] * LDB_S + b_n[i], rb[i], LDB_S, !TB);             \
    } while (0)

    int ktiles = (K + BLOCK_K - 1) / BLOCK_K;
    LOAD_TILES(0);
    STORE_TILES(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < ktiles; t++) {
        int cur = t & 1;
        if (t + 1 < ktiles) LOAD_TILES((t + 1) * BLOCK_K);
        __local const float4 *ap = as4 + (cur * BLOCK_K * LDA_S) / 4 + ty;
        __local const float4 *bp = bs4 + (cur * BLOCK_K * LDB_S) / 4 + tx;
#pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk++) {
            float av[TM], bv[TN];
#pragma unroll
            for (int i = 0; i < TM / 4; i++) {
                float4 v = ap[kk * (LDA_S / 4) + i * RT];
                av[4 * i] = v.x;
                av[4 * i + 1] = v.y;
                av[4 * i + 2] = v.z;
                av[4 * i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN / 4; j++) {
                float4 v = bp[kk * (LDB_S / 4) + j * CT];
                bv[4 * j] = v.x;
                bv[4 * j + 1] = v.y;
                bv[4 * j + 2] = v.z;
                bv[4 * j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
#if FOLD
        if ((t + 1) % FOLD == 0) {
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    folded[i][j] += acc[i][j];
                    acc[i][j] = 0.0f;
                }
        }
#endif
        if (t + 1 < ktiles) STORE_TILES(cur ^ 1);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#if FOLD
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] += folded[i][j];
#endif

    /* C in runs of four columns: one 16-byte store where an f32 C keeps the alignment (VC) and the run is whole */
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int gm = m0 + (i / 4) * RT * 4 + ty * 4 + i % 4;
        if (gm >= M) continue;
        __global z_t *crow = c + (long)gm * ldc;
#pragma unroll
        for (int q = 0; q < TN / 4; q++) {
            int gn = n0 + q * CT * 4 + tx * 4;
            float4 s = (float4)(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
            /* K split across launches (part_mode 1 first, 2 middle, 3 last): the sums so far, f32 [batch][M][N] */
            if (part_mode) {
                __global float *pp = part + (batch * M + gm) * (long)N + gn;
                if (part_mode >= 2) {
                    if (gn < N) s.x += pp[0];
                    if (gn + 1 < N) s.y += pp[1];
                    if (gn + 2 < N) s.z += pp[2];
                    if (gn + 3 < N) s.w += pp[3];
                }
                if (part_mode <= 2) {
                    if (gn < N) pp[0] = s.x;
                    if (gn + 1 < N) pp[1] = s.y;
                    if (gn + 2 < N) pp[2] = s.z;
                    if (gn + 3 < N) pp[3] = s.w;
                    continue;
                }
            }
            s *= scale;
            float4 v = (float4)(epilogue(s.x, epi, alpha), epilogue(s.y, epi, alpha), epilogue(s.z, epi, alpha),
                                epilogue(s.w, epi, alpha));
#if Z_DT == DT_F32
            if (VC && gn + 3 < N) {
                *(__global float4 *)(crow + gn) = v;
                continue;
            }
#endif
            if (gn < N) STORE_Z(v.x, crow, gn);
            if (gn + 1 < N) STORE_Z(v.y, crow, gn + 1);
            if (gn + 2 < N) STORE_Z(v.z, crow, gn + 2);
            if (gn + 3 < N) STORE_Z(v.w, crow, gn + 3);
        }
    }
}
