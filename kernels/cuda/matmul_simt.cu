/*
 * matmul on the CUDA cores: C = act(A . B) with f32 accumulation, true f32 multiply-adds (no TF32).
 * The path for f32, and for f16 operands the tensor-core kernel cannot take (transposed A, unaligned strides).
 * Compile-time: DT_IN (0 f32, 1 f16, 2 bf16), DT_OUT (0 f32, 1 f16, 2 bf16), BM, BN, BK, TRANS_A, TRANS_B, ALIGNED.
 * Each thread owns an 8x8 block of C as two 4-row by two 4-column quarters half a tile apart, so its shared
 * memory reads are 16-byte vectors that a warp shares or spreads over distinct banks. THREADS = BM/8 * BN/8.
 * Tiles move global -> registers -> shared memory, double-buffered: the next tile's global loads are in flight
 * while the current one is multiplied, and one barrier per K step suffices.
 * ALIGNED: leading dimensions are multiples of 4 and A, B are 16-byte (f32) or 8-byte (f16) aligned, so four
 * consecutive elements load as one vector. Edges are masked (zero fill), so any M, N, K works either way.
 */
#if DT_IN == 0
typedef float TI;
#else
#if DT_IN == 2
typedef trr_bf16 TI;
#else
typedef unsigned short TI;
#endif
#endif
#if DT_OUT == 0
typedef float TO;
#else
#if DT_OUT == 2
typedef trr_bf16 TO;
#else
typedef unsigned short TO;
#endif
#endif

#define THREADS ((BM / 8) * (BN / 8))
#define PAD 4
/* 4-element chunks per thread for the A and B tiles */
#define CA (BM * BK / 4 / THREADS)
#define CB (BK * BN / 4 / THREADS)

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

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_simt(const TI *A, long long lda, const TI *B, long long ldb, TO *C, long long ldc, int M, int N, int K,
                int epi, float alpha, int group_m, long long a_bs, long long b_bs, long long c_bs) {
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
    int tx = tid % (BN / 8), ty = tid / (BN / 8);

    float ra[CA][4], rb[CB][4];
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;

    /* Global -> registers for the K tile starting at k0. */
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int i = 0; i < CA; i++) {
            int idx = tid + i * THREADS;
#if TRANS_A == 0 /* A[m][k]: chunks run along k */
            int m = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
            simt_load4(A + (long long)(m0 + m) * lda + (k0 + kc), m0 + m < M, k0 + kc, K, ra[i]);
#else /* stored [K][M]: chunks run along m */
            int k = idx / (BM / 4), mc = (idx % (BM / 4)) * 4;
            simt_load4(A + (long long)(k0 + k) * lda + (m0 + mc), k0 + k < K, m0 + mc, M, ra[i]);
#endif
        }
#pragma unroll
        for (int i = 0; i < CB; i++) {
            int idx = tid + i * THREADS;
#if TRANS_B == 0 /* B[k][n]: chunks run along n */
            int k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
            simt_load4(B + (long long)(k0 + k) * ldb + (n0 + nc), k0 + k < K, n0 + nc, N, rb[i]);
#else /* stored [N][K]: chunks run along k */
            int n = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
            simt_load4(B + (long long)(n0 + n) * ldb + (k0 + kc), n0 + n < N, k0 + kc, K, rb[i]);
#endif
        }
    };
    /* Registers -> shared buffer s, both tiles stored k-major. */
    auto store_tile = [&](int s) {
#pragma unroll
        for (int i = 0; i < CA; i++) {
            int idx = tid + i * THREADS;
#if TRANS_A == 0
            int m = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
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
            int n = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
#pragma unroll
            for (int j = 0; j < 4; j++) Bs[s][kc + j][n] = rb[i][j];
#endif
        }
    };

    int kt_count = (K + BK - 1) / BK;
    load_tile(0);
    store_tile(0);
    __syncthreads();
    for (int kt = 0; kt < kt_count; kt++) {
        int s = kt & 1;
        bool more = kt + 1 < kt_count;
        if (more) load_tile((kt + 1) * BK);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            simt_f4 a0 = *(const simt_f4 *)&As[s][k][ty * 4];
            simt_f4 a1 = *(const simt_f4 *)&As[s][k][BM / 2 + ty * 4];
            simt_f4 b0 = *(const simt_f4 *)&Bs[s][k][tx * 4];
            simt_f4 b1 = *(const simt_f4 *)&Bs[s][k][BN / 2 + tx * 4];
            float a[8], b[8];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                a[j] = a0.v[j];
                a[4 + j] = a1.v[j];
                b[j] = b0.v[j];
                b[4 + j] = b1.v[j];
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more) store_tile(s ^ 1);
        __syncthreads();
    }

    bool c_vec = DT_OUT == 0 && (ldc & 3) == 0 && (((unsigned long long)C) & 15) == 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = m0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + (i - 4));
        if (row >= M) continue;
        TO *crow = C + (long long)row * ldc;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int col = n0 + (h == 0 ? tx * 4 : BN / 2 + tx * 4);
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
