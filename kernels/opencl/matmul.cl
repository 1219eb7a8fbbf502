/* C = act(A·B), one work-group per BLOCK_M x BLOCK_N tile of C, in the grouped order of SPEC.md; a batched
 * call's batch is grid dimension 2.
 * Build options: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M; RT x CT work-items, each owning TM x TN outputs
 * (TM = BLOCK_M / RT, TN = BLOCK_N / CT, both multiples of 4); X_DT (A), Y_DT (B), Z_DT (C).
 * A work-item's rows are ty·4 + i·RT·4 + {0..3} (columns likewise), so a warp reads local memory as float4s
 * that are either broadcast or contiguous, and stores C in contiguous runs.
 * Tiles go through registers into two local buffers: the next tile's global loads are in flight while the
 * current one is multiplied, and one barrier per step suffices. Layout and epilogue are run-time arguments (a
 * uniform branch each) so a device compiles one program per dtype and tile shape, not sixteen.
 * Arithmetic is true f32: fma() only, no fast-math or mad-enable. */

#define THREADS (RT * CT)
#define TM (BLOCK_M / RT)
#define TN (BLOCK_N / CT)
#define A_LOADS (BLOCK_M * BLOCK_K / THREADS)
#define B_LOADS (BLOCK_N * BLOCK_K / THREADS)
/* +4 keeps rows 16-byte aligned for float4 reads and spreads the column writes of a transposed load. */
#define LDA_S (BLOCK_M + 4)
#define LDB_S (BLOCK_N + 4)

static inline float epilogue(float v, int epi, float alpha) {
    if (epi == 1) return v > 0.0f ? v : 0.0f;
    if (epi == 2) return v >= 0.0f ? v : alpha * v;
    if (epi == 3) return GELU(v);
    return v;
}

__kernel __attribute__((reqd_work_group_size(RT * CT, 1, 1))) void matmul(
    __global const x_t *a, long aoff, int lda, __global const y_t *b, long boff, int ldb, __global z_t *c, long coff,
    int ldc, int M, int N, int K, int epi, float alpha, long a_bstride, long b_bstride, long c_bstride, int trans_a,
    int trans_b) {
    __local float4 as4[2 * BLOCK_K * LDA_S / 4];
    __local float4 bs4[2 * BLOCK_K * LDB_S / 4];
    __local float *as = (__local float *)as4;
    __local float *bs = (__local float *)bs4;

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

    /* Which tile element each of this work-item's loads fetches: consecutive work-items walk the operand's
     * contiguous dimension so global reads coalesce. */
    int a_m[A_LOADS], a_k[A_LOADS], b_k[B_LOADS], b_n[B_LOADS];
#pragma unroll
    for (int i = 0; i < A_LOADS; i++) {
        int e = tid + i * THREADS;
        a_m[i] = trans_a ? e % BLOCK_M : e / BLOCK_K;
        a_k[i] = trans_a ? e / BLOCK_M : e % BLOCK_K;
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; i++) {
        int e = tid + i * THREADS;
        b_n[i] = trans_b ? e / BLOCK_K : e % BLOCK_N;
        b_k[i] = trans_b ? e % BLOCK_K : e / BLOCK_N;
    }

    float ra[A_LOADS], rb[B_LOADS];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

#define LOAD_TILES(k0)                                                                                         \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < A_LOADS; i++) {                                                  \
            int gm = m0 + a_m[i], gk = (k0) + a_k[i];                                                          \
            ra[i] = (gm < M && gk < K) ? LOAD_X(a, trans_a ? gk * lda + gm : gm * lda + gk) : 0.0f;           \
        }                                                                                                      \
        _Pragma("unroll") for (int i = 0; i < B_LOADS; i++) {                                                  \
            int gn = n0 + b_n[i], gk = (k0) + b_k[i];                                                          \
            rb[i] = (gn < N && gk < K) ? LOAD_Y(b, trans_b ? gn * ldb + gk : gk * ldb + gn) : 0.0f;           \
        }                                                                                                      \
    } while (0)
#define STORE_TILES(buf)                                                                                       \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < A_LOADS; i++) as[(buf) * BLOCK_K * LDA_S + a_k[i] * LDA_S + a_m[i]] = ra[i]; \
        _Pragma("unroll") for (int i = 0; i < B_LOADS; i++) bs[(buf) * BLOCK_K * LDB_S + b_k[i] * LDB_S + b_n[i]] = rb[i]; \
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
        if (t + 1 < ktiles) STORE_TILES(cur ^ 1);
        barrier(CLK_LOCAL_MEM_FENCE);
    }

#pragma unroll
    for (int i = 0; i < TM; i++) {
        int gm = m0 + (i / 4) * RT * 4 + ty * 4 + i % 4;
        if (gm >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            int gn = n0 + (j / 4) * CT * 4 + tx * 4 + j % 4;
            if (gn < N) STORE_Z(epilogue(acc[i][j], epi, alpha), c, gm * ldc + gn);
        }
    }
}
