/*
 * matmul on the CUDA cores: C = act(A . B) with f32 accumulation, true f32 multiply-adds (no TF32).
 * The path for f32, and for f16 operands the tensor-core kernel cannot take (transposed A, unaligned strides).
 * Compile-time: DT_IN (0 f32, 1 f16, 2 bf16), DT_OUT (0 f32, 1 f16, 2 bf16), BM, BN, BK, THREADS, TRANS_A,
 * TRANS_B, ALIGNED.
 * Each thread owns TM x 8 outputs of C (TM = BM * BN / THREADS / 8: 8 or 16) as 4 x 4 quarters RT*4 rows and
 * CT*4 columns apart, so its shared-memory reads are 16-byte vectors. A warp is a 4 x 8 grid of threads (rows x
 * columns) where the tile allows: each of its reads then touches 4 (A) or 8 (B) consecutive vectors, one
 * wavefront, no bank conflict; its C stores are whole 128-byte rows.
 * Tiles move global -> registers -> shared memory, double-buffered: the next tile's global loads are in flight
 * while the current one is multiplied, and one barrier per K step suffices. The operands of each k step are
 * read from shared memory one step ahead, into a second register set, so those reads overlap the multiply-adds
 * (across the barrier too: the next tile's first step is read right after it).
 * ALIGNED: leading dimensions are multiples of 4 and A, B are 16-byte (f32) or 8-byte (f16) aligned, so four
 * consecutive elements load as one vector. Edges are masked (zero fill), so any M, N, K works either way.
 */
typedef trr_dt<DT_IN>::type TI;
typedef trr_dt<DT_OUT>::type TO;

#define TN 8
#define TM (BM * BN / (THREADS * TN))
/* threads down the tile's rows and across its columns */
#define RT (BM / TM)
#define CT (BN / TN)
/* a warp's grid of threads: 8 columns (fewer in a narrow tile) by 32 / WC rows */
#define WC (CT < 8 ? CT : 8)
#define WR (32 / WC)
#define WARP_GRID (RT % WR == 0 && CT % WC == 0)
/* +4 keeps rows 16-byte aligned and puts the scalar column stores of a chunk along k in distinct banks */
#define PAD 4
/* 4-element chunks per thread for the A and B tiles */
#define CA (BM * BK / 4 / THREADS)
#define CB (BK * BN / 4 / THREADS)
#define KQ (BK / 4)

#if TM * TN * THREADS != BM * BN || (TM != 8 && TM != 16) || BM % (4 * RT) || BN % (4 * CT) || BK % 4 || \
    (KQ > 1 && KQ % 2)
#error "matmul_simt: THREADS must be BM*BN/64 or BM*BN/128, the tile must split into 4x4 quarters, BK 4 or 8*n"
#endif

struct __align__(16) simt_f4 {
    float v[4];
};
struct __align__(8) simt_h4 {
    unsigned short v[4];
};

/* Four consecutive elements p[0..3] as f32: the row is valid (in_row) and the first column index is c of an
 * extent `ext`; elements past the edge read as 0. */
__device__ __forceinline__ void simt_load4(const TI *p, bool in_row, int c, int ext, float *out) {
#if ALIGNED
    if (in_row && c + 3 < ext) {
#if DT_IN == 0
        simt_f4 w = *(const simt_f4 *)p;
#pragma unroll
        for (int j = 0; j < 4; j++) out[j] = w.v[j];
#else
        simt_h4 w = *(const simt_h4 *)p;
#pragma unroll
        for (int j = 0; j < 4; j++) out[j] = DT_IN == 2 ? trr_bf2f(w.v[j]) : trr_h2f(w.v[j]);
#endif
        return;
    }
#endif
#pragma unroll
    for (int j = 0; j < 4; j++) out[j] = (in_row && c + j < ext) ? trr_to_f32(p[j]) : 0.0f;
}

/* Chunk e of a tile stored with its rows along k (A, or B transposed), `rows` rows of BK: row r, first k kc.
 * A warp takes 16 rows by 2 chunks, so its scalar column stores (row stride = 4 mod 32 banks) fill 32 banks. */
__device__ __forceinline__ void simt_chunk_along_k(int e, int rows, int *r, int *kc) {
    if (KQ == 1) {
        *r = e;
        *kc = 0;
    } else {
        *r = (e >> 1) % rows;
        *kc = (((e >> 1) / rows) * 2 + (e & 1)) * 4;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_simt(const TI *A, long long lda, const TI *B, long long ldb, TO *C, long long ldc, int M, int N, int K,
                int epi, float alpha, int group_m, long long a_bs, long long b_bs, long long c_bs, float scale) {
    (void)scale; /* the 8-bit floats' scales (matmul_mma.cu, matmul_wgmma.cu): this kernel takes none of them */
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN + PAD];

    /* the batch is blockIdx.z: each matrix starts one batch stride further on (0 for a shared input) */
    A += (long long)blockIdx.z * a_bs;
    B += (long long)blockIdx.z * b_bs;
    C += (long long)blockIdx.z * c_bs;

    int npm = (M + BM - 1) / BM, npn = (N + BN - 1) / BN;
    int pm, pn;
    trr_grouped_block(blockIdx.x, npm, npn, group_m, &pm, &pn);
    int m0 = pm * BM, n0 = pn * BN;
    int tid = threadIdx.x;
#if WARP_GRID
    int lane = tid & 31, warp = tid >> 5;
    int ty = (warp / (CT / WC)) * WR + lane / WC, tx = (warp % (CT / WC)) * WC + lane % WC;
#else
    int tx = tid % CT, ty = tid / CT;
#endif

    float ra[CA][4], rb[CB][4];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

    /* Where each of this thread's chunks starts in the first K tile: chunks along k are A's (B's) rows m (n) from
     * k = kc, chunks along m (n) are the stored rows k from m = mc (n = nc). */
    const TI *pa[CA], *pb[CB];
    int a_r[CA], a_c[CA], b_r[CB], b_c[CB];
#pragma unroll
    for (int i = 0; i < CA; i++) {
        int idx = tid + i * THREADS;
#if TRANS_A == 0 /* A[m][k]: chunks run along k */
        simt_chunk_along_k(idx, BM, &a_r[i], &a_c[i]);
        a_r[i] += m0;
#else /* stored [K][M]: chunks run along m */
        a_r[i] = idx / (BM / 4);
        a_c[i] = m0 + (idx % (BM / 4)) * 4;
#endif
        pa[i] = A + (long long)a_r[i] * lda + a_c[i];
    }
#pragma unroll
    for (int i = 0; i < CB; i++) {
        int idx = tid + i * THREADS;
#if TRANS_B == 0 /* B[k][n]: chunks run along n */
        b_r[i] = idx / (BN / 4);
        b_c[i] = n0 + (idx % (BN / 4)) * 4;
#else /* stored [N][K]: chunks run along k */
        simt_chunk_along_k(idx, BN, &b_r[i], &b_c[i]);
        b_r[i] += n0;
#endif
        pb[i] = B + (long long)b_r[i] * ldb + b_c[i];
    }
    /* A block whose tile lies inside M and N loads whole K tiles without masks: its address arithmetic is a
     * fraction of the masked path's, which the edges keep. */
    const bool interior = ALIGNED && m0 + BM <= M && n0 + BN <= N;

    /* Global -> registers for the K tile starting at k0. */
    auto load_tile = [&](int k0) {
        if (interior && k0 + BK <= K) {
            const long long a_off = TRANS_A ? (long long)k0 * lda : k0, b_off = TRANS_B ? k0 : (long long)k0 * ldb;
#pragma unroll
            for (int i = 0; i < CA; i++) simt_load4(pa[i] + a_off, true, 0, 4, ra[i]);
#pragma unroll
            for (int i = 0; i < CB; i++) simt_load4(pb[i] + b_off, true, 0, 4, rb[i]);
            return;
        }
#pragma unroll
        for (int i = 0; i < CA; i++) {
#if TRANS_A == 0
            simt_load4(pa[i] + k0, a_r[i] < M, k0 + a_c[i], K, ra[i]);
#else
            simt_load4(pa[i] + (long long)k0 * lda, k0 + a_r[i] < K, a_c[i], M, ra[i]);
#endif
        }
#pragma unroll
        for (int i = 0; i < CB; i++) {
#if TRANS_B == 0
            simt_load4(pb[i] + (long long)k0 * ldb, k0 + b_r[i] < K, b_c[i], N, rb[i]);
#else
            simt_load4(pb[i] + k0, b_r[i] < N, k0 + b_c[i], K, rb[i]);
#endif
        }
    };
    /* Registers -> shared buffer s, both tiles stored k-major. */
    auto store_tile = [&](int s) {
#pragma unroll
        for (int i = 0; i < CA; i++) {
            int idx = tid + i * THREADS;
#if TRANS_A == 0
            int m, kc;
            simt_chunk_along_k(idx, BM, &m, &kc);
#pragma unroll
            for (int j = 0; j < 4; j++) As[s][kc + j][m] = ra[i][j];
#else
            int k = idx / (BM / 4), mc = (idx % (BM / 4)) * 4;
            simt_f4 w;
#pragma unroll
            for (int j = 0; j < 4; j++) w.v[j] = ra[i][j];
            *(simt_f4 *)&As[s][k][mc] = w;
#endif
        }
#pragma unroll
        for (int i = 0; i < CB; i++) {
            int idx = tid + i * THREADS;
#if TRANS_B == 0
            int k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
            simt_f4 w;
#pragma unroll
            for (int j = 0; j < 4; j++) w.v[j] = rb[i][j];
            *(simt_f4 *)&Bs[s][k][nc] = w;
#else
            int n, kc;
            simt_chunk_along_k(idx, BN, &n, &kc);
#pragma unroll
            for (int j = 0; j < 4; j++) Bs[s][kc + j][n] = rb[i][j];
#endif
        }
    };
    /* Shared buffer s, step k -> operand set f: this thread's TM values of A's column and 8 of B's row. */
    float fa[2][TM], fb[2][TN];
    auto load_frag = [&](int s, int k, int f) {
#pragma unroll
        for (int g = 0; g < TM / 4; g++) {
            simt_f4 v = *(const simt_f4 *)&As[s][k][g * RT * 4 + ty * 4];
#pragma unroll
            for (int j = 0; j < 4; j++) fa[f][g * 4 + j] = v.v[j];
        }
#pragma unroll
        for (int h = 0; h < TN / 4; h++) {
            simt_f4 v = *(const simt_f4 *)&Bs[s][k][h * CT * 4 + tx * 4];
#pragma unroll
            for (int j = 0; j < 4; j++) fb[f][h * 4 + j] = v.v[j];
        }
    };

    int kt_count = (K + BK - 1) / BK;
    load_tile(0);
    store_tile(0);
    __syncthreads();
    load_frag(0, 0, 0);
    for (int kt = 0; kt < kt_count; kt++) {
        int s = kt & 1;
        bool more = kt + 1 < kt_count;
        if (more) load_tile((kt + 1) * BK);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            /* BK is a multiple of 4, so every tile starts on operand set 0 */
            if (k + 1 < BK) {
                load_frag(s, k + 1, (k + 1) & 1);
            } else if (more) {
                /* every read of buffer s ^ 1 (the previous tile) came before the last barrier */
                store_tile(s ^ 1);
                __syncthreads();
                load_frag(s ^ 1, 0, 0);
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
        }
    }

    bool c_vec = DT_OUT == 0 && (ldc & 3) == 0 && (((unsigned long long)C) & 15) == 0;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int row = m0 + (i / 4) * RT * 4 + ty * 4 + i % 4;
        if (row >= M) continue;
        TO *crow = C + (long long)row * ldc;
#pragma unroll
        for (int h = 0; h < TN / 4; h++) {
            int col = n0 + h * CT * 4 + tx * 4;
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; j++) v[j] = trr_epilogue(acc[i][h * 4 + j], epi, alpha);
            if (c_vec && col + 3 < N) {
                simt_f4 w;
#pragma unroll
                for (int j = 0; j < 4; j++) w.v[j] = v[j];
                *(simt_f4 *)(crow + col) = w;
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (col + j < N) crow[col + j] = trr_from_f32<TO>(v[j]);
            }
        }
    }
}
