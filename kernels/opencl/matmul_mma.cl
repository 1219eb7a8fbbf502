/* C = act(A·B) for f16 or bf16 operands on NVIDIA tensor cores, issued as inline PTX (mma.sync m16n8k16 with
 * f32 accumulation, ldmatrix from local memory, cp.async where the compiler takes it). Only NVIDIA's OpenCL
 * compiler takes this: the backend builds and runs the MMA_PROBE kernel below once per device and driver
 * (backend_opencl/mma_probe.c) and selects the variant "mma" only where it computed right; elsewhere matmul.cl
 * runs.
 * One work-group per BLOCK_M x BLOCK_N tile of C in the grouped order of docs/ops.md, WARPS_M x WARPS_N warps each
 * owning a (BLOCK_M / WARPS_M) x (BLOCK_N / WARPS_N) tile; a batched call's batch is grid dimension 2.
 * Operands are raw 16-bit patterns (ushort): NVIDIA's OpenCL has no cl_khr_fp16, and mma takes packed .b32 pairs.
 * Local tiles keep each operand's contiguous global dimension contiguous, so global reads are 16-byte vectors:
 * A as [m][k] (or [k][m] when TRANS_A), B as [k][n] (or [n][k] when TRANS_B); ldmatrix turns either into mma
 * fragments (.trans for A stored [k][m] and B stored [k][n]). 16-byte chunks are XOR-swizzled within rows
 * (TILE_OFF), not padded: NVIDIA's OpenCL gives a work-group 48 KiB of local memory, exactly three stages of
 * 128x128x32. The tiles start on a 128-byte boundary of local memory (see the kernel's declaration).
 * Layouts are build options here, unlike matmul.cl: a run-time branch around the ldmatrix forms in the inner
 * loop costs more than the extra programs.
 * Build options: BLOCK_M, BLOCK_N, BLOCK_K (multiple of 16), GROUP_M, WARPS_M, WARPS_N, STAGES, CP_ASYNC (1:
 * STAGES tiles in flight through cp.async; 0: two stages through registers), MMA_PIPE (with CP_ASYNC: 1 loads
 * the fragments of the next k step during the mma of this one), TRANS_A, TRANS_B, ADDR_MODE (how a
 * __local pointer becomes a shared-window address: 0 a cast, 1 cvta.to.shared; the probe says which computes
 * right), VEC_A, VEC_B (1: every row of the operand starts on a 16-byte boundary in every batch; 8 bytes for
 * 8-bit floats), X_DT = Y_DT (1 f16 or 2 bf16) or X_DT, Y_DT each 4 (e4m3) or 5 (e5m2), Z_DT.
 * 8-bit float operands run on the f16 mma: read from global memory as bytes, eight a load, and widened to f16 bit
 * patterns (common.cl: trr_e4m3x4_to_h16, exact for every value) on their way from the registers into the local
 * tile, so the tiles, ldmatrix and the mma are the f16 program's in every layout. FP8 mma.sync would read the
 * bytes directly, but Hopper runs it slower than the f16 one, and its fast FP8 path (wgmma) is out of reach
 * of OpenCL's PTX. cp.async copies bytes as they are, so these programs take the register path (CP_ASYNC 0). The
 * f32 sum is multiplied by scale (the per-tensor scales' product) and by 2^8 for each e4m3 operand (held as its
 * values times 2^-8) before the epilogue.
 * Alignment is a build option too: with it every chunk, edge chunks included, is one cp.async (an edge chunk copies
 * its in-range bytes and zero-fills the rest), so an aligned program holds no path through registers (eight
 * scalar loads per chunk) in its main loop. Chunk coordinates are recomputed from the thread index rather than
 * held in arrays: the arrays pushed the 128x128x32 program past 255 registers into spills on NVIDIA's
 * compiler.
 * The PTX forms it shares with attention_mma.cl (MMA_OP, smem_addr, LDSM_X4, LDSM_X4_T, MMA) are common.cl's. */

#ifdef MMA_PROBE
/* The probe: one warp computes C[16][16] = A[16][16]·B[16][16] (A row-major, B row-major [k][n]) with the same
 * instruction forms as the kernel: cp.async for A (when CP_ASYNC), ldmatrix for A, ldmatrix.trans for B, two
 * mma. The host checks the result. */
__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void mma_probe(__global const uint4 *a,
                                                                         __global const uint4 *b,
                                                                         __global float *c) {
    __local ushort as_[16 * 16] __attribute__((aligned(16)));
    __local ushort bs_[16 * 16] __attribute__((aligned(16)));
    int lane = (int)get_local_id(0);
#if CP_ASYNC
    CP_ASYNC16(smem_addr(as_) + (uint)lane * 16u, a + lane, 16);
    CP_COMMIT();
    CP_WAIT(0);
#else
    ((__local uint4 *)as_)[lane] = a[lane];
#endif
    ((__local uint4 *)bs_)[lane] = b[lane];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint af[4], bf[4];
    LDSM_X4(af, smem_addr(as_) + (uint)(((lane % 16) * 16 + (lane / 16) * 8) * 2));
    LDSM_X4_T(bf, smem_addr(bs_) + (uint)((((lane % 8) + ((lane / 8) % 2) * 8) * 16 + (lane / 16) * 8) * 2));
    float d0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    MMA(d0, af, bf[0], bf[1]);
    MMA(d1, af, bf[2], bf[3]);
    int r = lane / 4, col = (lane % 4) * 2;
    c[r * 16 + col] = d0[0];
    c[r * 16 + col + 1] = d0[1];
    c[(r + 8) * 16 + col] = d0[2];
    c[(r + 8) * 16 + col + 1] = d0[3];
    c[r * 16 + 8 + col] = d1[0];
    c[r * 16 + 8 + col + 1] = d1[1];
    c[(r + 8) * 16 + 8 + col] = d1[2];
    c[(r + 8) * 16 + 8 + col + 1] = d1[3];
}
#else

#define THREADS (WARPS_M * WARPS_N * 32)
#define WTM (BLOCK_M / WARPS_M)
#define WTN (BLOCK_N / WARPS_N)
#define MT (WTM / 16) /* m16 fragments per warp */
#define NT (WTN / 8)  /* n8 fragments per warp */

/* Local tile shape per operand: OUTER rows of INNER contiguous halves. */
#if TRANS_A
#define A_OUTER BLOCK_K
#define A_INNER BLOCK_M
#else
#define A_OUTER BLOCK_M
#define A_INNER BLOCK_K
#endif
#if TRANS_B
#define B_OUTER BLOCK_N
#define B_INNER BLOCK_K
#else
#define B_OUTER BLOCK_K
#define B_INNER BLOCK_N
#endif
#define A_TILE (A_OUTER * A_INNER) /* halves per stage */
#define B_TILE (B_OUTER * B_INNER)
#define A_CHUNKS (A_TILE / 8 / THREADS) /* 16-byte chunks per work-item and tile */
#define B_CHUNKS (B_TILE / 8 / THREADS)

/* Byte offset of 16-byte chunk c of row r in a tile of cpr chunks per row. The chunk index is XORed with a
 * function of the row so that the eight rows an ldmatrix phase reads (same logical chunk, consecutive rows)
 * land in eight different 16-byte bank groups: rows of cpr >= 8 chunks XOR with r % 8; shorter rows share a
 * 128-byte line among 8 / cpr rows, so the XOR moves with the line index. */
#define SWZ(r, cpr) ((cpr) >= 8 ? ((r) & 7) : (((r) / (8 / (cpr))) & ((cpr) - 1)))
#define TILE_OFF(r, c, cpr) ((uint)(((r) * (cpr) + ((c) ^ SWZ(r, cpr))) * 16))

#define F8 (X_DT == DT_F8E4M3 || X_DT == DT_F8E5M2)
#if F8 != (Y_DT == DT_F8E4M3 || Y_DT == DT_F8E5M2)
#error "8-bit float operands come in pairs (both A and B)"
#endif
#if F8 && CP_ASYNC
#error "8-bit float operands are widened through registers (CP_ASYNC 0)"
#endif
#if F8
typedef uchar el_t;  /* an operand element in global memory */
typedef uint2 raw_t; /* one chunk of eight of them on its way through registers */
#else
typedef ushort el_t;
typedef uint4 raw_t;
#endif

#if F8
/* Eight bytes from row `row` (of `rows`), columns col.. (of `cols`) of a matrix with leading dimension ld;
 * out-of-range elements read as zero (+0 in both formats). vec: ld and the base are 8-element aligned, so a whole
 * in-range row of eight is one 8-byte load. */
static inline uint2 load_chunk(__global const uchar *p, int row, int col, int rows, int cols, int ld, int vec) {
    if (row < rows && col + 8 <= cols && vec) return *(__global const uint2 *)(p + row * ld + col);
    uint w[2] = {0u, 0u};
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (row < rows && col + j < cols) w[j / 4] |= (uint)p[row * ld + col + j] << (8 * (j % 4));
    return (uint2)(w[0], w[1]);
}

/* A chunk of eight as the f16 bit patterns the local tile holds (an e4m3 operand's values times 2^-8). */
#define WIDEN_DT_4 trr_e4m3x4_to_h16
#define WIDEN_DT_5 trr_e5m2x4_to_h16
#define WIDEN(DT, r) ((uint4)(CAT(WIDEN_DT_, DT)((r).x), CAT(WIDEN_DT_, DT)((r).y)))
#define WIDEN_A(r) WIDEN(X_DT, r)
#define WIDEN_B(r) WIDEN(Y_DT, r)
/* what the f32 sum is multiplied by before the epilogue, besides the scales */
#define F8_UNDO ((X_DT == DT_F8E4M3 ? TRR_E4M3_H16_SCALE : 1.0f) * (Y_DT == DT_F8E4M3 ? TRR_E4M3_H16_SCALE : 1.0f))
#else
#define WIDEN_A(r) (r)
#define WIDEN_B(r) (r)

/* Eight halves from row `row` (of `rows`), columns col.. (of `cols`) of a matrix with leading dimension ld;
 * out-of-range elements read as zero. */
static inline uint4 load_chunk_slow(__global const ushort *p, int row, int col, int rows, int cols, int ld) {
    uint h[8];
#pragma unroll
    for (int j = 0; j < 8; j++) h[j] = (row < rows && col + j < cols) ? (uint)p[row * ld + col + j] : 0u;
    return (uint4)(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
}

#if !CP_ASYNC
/* vec: ld and the base are 8-element aligned, so a whole in-range row of eight is one 16-byte load. */
static inline uint4 load_chunk(__global const ushort *p, int row, int col, int rows, int cols, int ld, int vec) {
    if (row < rows && col + 8 <= cols && vec) return *(__global const uint4 *)(p + row * ld + col);
    return load_chunk_slow(p, row, col, rows, cols, ld);
}
#endif
#endif

#if CP_ASYNC
/* One chunk straight into local memory: cp.async of its in-range bytes where the row is aligned (vec, a build
 * option at every call) or the chunk is wholly out of range (all zero-filled), else through registers. */
static inline void copy_chunk(__local ushort *tile, uint dst, __global const ushort *p, int row, int col, int rows,
                              int cols, int ld, int vec) {
    int in = row < rows && col < cols;
    if (vec || !in) {
        __global const ushort *src = in ? p + row * ld + col : p;
        CP_ASYNC16(smem_addr(tile) + dst, src, in ? min(8, cols - col) * 2 : 0);
    } else {
        *(__local uint4 *)((__local uchar *)tile + dst) = load_chunk_slow(p, row, col, rows, cols, ld);
    }
}
/* A whole in-range aligned chunk: the interior tiles' copies, with no bounds to test. */
static inline void copy_chunk_fast(uint dst, __global const ushort *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
#endif

/* pack_pair: common.cl (the bf16 rounding there is one instruction where common.cl's trr_f2bf takes several an
 * element, enough to put bf16 behind f16 where the epilogue weighs) */

/* Outputs gn and gn + 1 (gn even) of row gm; pair: ldc and C's offset are even, so an in-range pair is one aligned
 * store. */
static inline void store_pair(__global z_t *c, int gm, int gn, int M, int N, int ldc, float v0, float v1, int pair) {
    if (gm >= M) return;
#if Z_DT == DT_F32
    if (pair && gn + 1 < N) {
        *(__global float2 *)(c + gm * ldc + gn) = (float2)(v0, v1);
        return;
    }
    if (gn < N) c[gm * ldc + gn] = v0;
    if (gn + 1 < N) c[gm * ldc + gn + 1] = v1;
#else
    const uint w = pack_pair(v0, v1);
    if (pair && gn + 1 < N) {
        *(__global uint *)(c + gm * ldc + gn) = w;
        return;
    }
    if (gn < N) *(__global ushort *)(c + gm * ldc + gn) = (ushort)w;
    if (gn + 1 < N) *(__global ushort *)(c + gm * ldc + gn + 1) = (ushort)(w >> 16);
#endif
}

/* An f32 C is held to 1e-5 (docs/ops.md, Correctness bounds) at any K, and the tensor cores truncate as they accumulate: their f32 sum
 * drifts by ~1e-9·K, past the bound well before K = 2^17. So each k tile is summed on the tensor cores from zero and
 * then added, rounded to nearest, into separate f32 registers. f16 and bf16 outputs (bounds 2e-3, 8e-3) keep
 * the one accumulator. */
#define PROMOTE (Z_DT == DT_F32)


__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void matmul_mma(
    __global const el_t *a, long aoff, int lda, __global const el_t *b, long boff, int ldb, __global z_t *c,
    long coff, int ldc, int M, int N, int K, int epi, float alpha, long a_bstride, long b_bstride, long c_bstride,
    int c_pair, float scale) {
    /* Both operands' stages in one array on a 128-byte boundary, A first. NVIDIA's driver puts 16 bytes of its
     * own at the start of a work-group's local memory, so 16-byte aligned tiles began 16 bytes into a 128-byte
     * line, which costs the tensor-core loop about a quarter of its speed. */
    __local ushort smem_[STAGES * (A_TILE + B_TILE)] __attribute__((aligned(128)));
    __local ushort *const as_ = smem_;
    __local ushort *const bs_ = smem_ + STAGES * A_TILE;

    const long batch = (long)get_group_id(2);
    a += aoff + batch * a_bstride;
    b += boff + batch * b_bstride;
    c += coff + batch * c_bstride;
    const int tid = (int)get_local_id(0);
    const int lane = tid % 32, warp = tid / 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;

    int pm, pn;
    trr_grouped_block((int)get_group_id(0), (M + BLOCK_M - 1) / BLOCK_M, (N + BLOCK_N - 1) / BLOCK_N, GROUP_M, &pm, &pn);
    int m0 = pm * BLOCK_M, n0 = pn * BLOCK_N;

    /* Each work-item's chunks: (outer row, chunk) in the local tile; consecutive work-items take consecutive
     * chunks of a row so global reads coalesce. The global row/column of a chunk at k tile k0 follows from the
     * layout. A pass of all work-items covers A_RP (B_RP) whole rows, so chunk i of a work-item sits i passes
     * below its first: its coordinates follow from two numbers per operand, recomputed where used rather than
     * held in arrays (the CUDA kernel's way). */
#define A_CPR (A_INNER / 8)
#define B_CPR (B_INNER / 8)
#if THREADS % A_CPR || THREADS % B_CPR
#error "a tile row of chunks must divide the work-group"
#endif
#define A_RP (THREADS / A_CPR)
#define B_RP (THREADS / B_CPR)
    const int a_r0 = tid / A_CPR, a_c0 = (tid % A_CPR) * 8, b_r0 = tid / B_CPR, b_c0 = (tid % B_CPR) * 8;
#define a_o(i) (a_r0 + (i) * A_RP)
#define b_o(i) (b_r0 + (i) * B_RP)
#define a_dst(i) TILE_OFF(a_o(i), a_c0 / 8, A_CPR)
#define b_dst(i) TILE_OFF(b_o(i), b_c0 / 8, B_CPR)

#if CP_ASYNC
    /* Interior tiles (every row and column in range, rows 16-byte aligned) copy without bounds tests: a chunk's
     * source is the k tile's corner plus a fixed offset. */
    const int a_inner = VEC_A && m0 + BLOCK_M <= M, b_inner = VEC_B && n0 + BLOCK_N <= N;
#if TRANS_A
    const int a_goff0 = a_r0 * lda + m0 + a_c0;
#else
    const int a_goff0 = (m0 + a_r0) * lda + a_c0;
#endif
#if TRANS_B
    const int b_goff0 = (n0 + b_r0) * ldb + b_c0;
#else
    const int b_goff0 = b_r0 * ldb + n0 + b_c0;
#endif
#endif
#define a_goff(i) (a_goff0 + (i) * A_RP * lda)
#define b_goff(i) (b_goff0 + (i) * B_RP * ldb)
#if TRANS_A
#define A_CORNER(k0) (a + (long)(k0) * lda)
#else
#define A_CORNER(k0) (a + (k0))
#endif
#if TRANS_B
#define B_CORNER(k0) (b + (k0))
#else
#define B_CORNER(k0) (b + (long)(k0) * ldb)
#endif

#if TRANS_A
#define A_ARGS(i, k0) a, (k0) + a_o(i), m0 + a_c0, K, M, lda, VEC_A
#else
#define A_ARGS(i, k0) a, m0 + a_o(i), (k0) + a_c0, M, K, lda, VEC_A
#endif
#if TRANS_B
#define B_ARGS(i, k0) b, n0 + b_o(i), (k0) + b_c0, N, K, ldb, VEC_B
#else
#define B_ARGS(i, k0) b, (k0) + b_o(i), n0 + b_c0, K, N, ldb, VEC_B
#endif

    /* ldmatrix row addresses. Lane l gives row l % 8 of matrix l / 8; (row, chunk) of fragment (f, kk) in the
     * stored tile:
     *   A [m][k]: row = wm·WTM + 16f + l % 16,            chunk = 2kk + l / 16                (x4)
     *   A [k][m]: row = 16kk + l % 8 + 8(l / 16),         chunk = (wm·WTM + 16f) / 8 + (l / 8) % 2  (x4.trans)
     *   B [n][k]: row = wn·WTN + 16p + l % 8 + 8(l / 16), chunk = 2kk + (l / 8) % 2          (x4)
     *   B [k][n]: row = 16kk + l % 8 + 8((l / 8) % 2),    chunk = (wn·WTN + 16p) / 8 + l / 16  (x4.trans)
     * which give a0..a3 of the m16n8k16 A fragment and b0, b1 of n8 fragments 2p and 2p + 1. */
    const int r8 = lane % 8, j = lane / 8;
#if TRANS_A
#define A_ROW(f, kk) (16 * (kk) + r8 + 8 * (j / 2))
#define A_CH(f, kk) ((wm * WTM + 16 * (f)) / 8 + j % 2)
#define LDSM_A LDSM_X4_T
#else
#define A_ROW(f, kk) (wm * WTM + 16 * (f) + lane % 16)
#define A_CH(f, kk) (2 * (kk) + j / 2)
#define LDSM_A LDSM_X4
#endif
#if TRANS_B
#define B_ROW(p, kk) (wn * WTN + 16 * (p) + r8 + 8 * (j / 2))
#define B_CH(p, kk) (2 * (kk) + j % 2)
#define LDSM_B LDSM_X4
#else
#define B_ROW(p, kk) (16 * (kk) + r8 + 8 * (j % 2))
#define B_CH(p, kk) ((wn * WTN + 16 * (p)) / 8 + j / 2)
#define LDSM_B LDSM_X4_T
#endif
    const uint as_base = smem_addr(as_), bs_base = smem_addr(bs_);

    float acc[MT][NT][4];
#if PROMOTE
    float sum[MT][NT][4];
#endif
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                acc[i][n][q] = 0.0f;
#if PROMOTE
                sum[i][n][q] = 0.0f;
#endif
            }

#define COMPUTE_STAGE(st)                                                                                      \
    do {                                                                                                       \
        const uint abuf = as_base + (uint)((st) * A_TILE * 2), bbuf = bs_base + (uint)((st) * B_TILE * 2);      \
        _Pragma("unroll") for (int kk = 0; kk < BLOCK_K / 16; kk++) {                                          \
            uint af[MT][4], bf[NT / 2][4];                                                                     \
            _Pragma("unroll") for (int f = 0; f < MT; f++)                                                     \
                LDSM_A(af[f], abuf + TILE_OFF(A_ROW(f, kk), A_CH(f, kk), A_INNER / 8));                        \
            _Pragma("unroll") for (int p = 0; p < NT / 2; p++)                                                 \
                LDSM_B(bf[p], bbuf + TILE_OFF(B_ROW(p, kk), B_CH(p, kk), B_INNER / 8));                        \
            _Pragma("unroll") for (int f = 0; f < MT; f++)                                                     \
                _Pragma("unroll") for (int n = 0; n < NT; n++)                                                 \
                    MMA(acc[f][n], af[f], bf[n / 2][(n % 2) * 2], bf[n / 2][(n % 2) * 2 + 1]);                 \
        }                                                                                                      \
        PROMOTE_ACC();                                                                                         \
    } while (0)
#if PROMOTE
#define PROMOTE_ACC()                                                                                          \
    do {                                                                                                       \
        _Pragma("unroll") for (int f = 0; f < MT; f++) _Pragma("unroll") for (int n = 0; n < NT; n++)          \
            _Pragma("unroll") for (int q = 0; q < 4; q++) {                                                    \
            sum[f][n][q] += acc[f][n][q];                                                                      \
            acc[f][n][q] = 0.0f;                                                                               \
        }                                                                                                      \
    } while (0)
#else
#define PROMOTE_ACC() ((void)0)
#endif

    const int ktiles = (K + BLOCK_K - 1) / BLOCK_K;
#if CP_ASYNC
    /* STAGES tiles in flight: wait for tile t, one barrier (tile t visible to all, tile t - 1 consumed by all),
     * then refill tile t - 1's stage with tile t + STAGES - 1 while tile t is multiplied. Every iteration
     * commits a group, empty or not, so wait_group counts stay uniform. */
#define ISSUE_OPERAND(op, OP, st, k0)                                                                          \
    do {                                                                                                       \
        if (op##_inner && kin) {                                                                               \
            __global const ushort *corner = OP##_CORNER(k0);                                                   \
            _Pragma("unroll") for (int i = 0; i < OP##_CHUNKS; i++)                                            \
                copy_chunk_fast(op##s_base + (uint)((st) * OP##_TILE * 2) + op##_dst(i), corner + op##_goff(i));  \
        } else {                                                                                               \
            _Pragma("unroll") for (int i = 0; i < OP##_CHUNKS; i++)                                            \
                copy_chunk(op##s_, (uint)((st) * OP##_TILE * 2) + op##_dst(i), OP##_ARGS(i, k0));              \
        }                                                                                                      \
    } while (0)
#define ISSUE(st, k0)                                                                                          \
    do {                                                                                                       \
        const int kin = (k0) + BLOCK_K <= K;                                                                   \
        ISSUE_OPERAND(a, A, st, k0);                                                                           \
        ISSUE_OPERAND(b, B, st, k0);                                                                           \
    } while (0)
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles) ISSUE(s, s * BLOCK_K);
        CP_COMMIT();
    }
#if MMA_PIPE
    /* Fragments software-pipelined: those of k step kk + 1 load while the mma of step kk issue (two register
     * sets), across tiles too. The barrier that publishes tile t + 1 sits before the last k step of tile t;
     * the refill of the stage tile t - 1 freed is issued at the first k step of tile t, after that barrier, so
     * tile t + 1 has had STAGES - 2 tiles of time to arrive (the host pipelines only from three stages on). */
#define KSTEPS (BLOCK_K / 16)
#define LOAD_FRAGS(abuf, bbuf, kk, af, bf)                                                                     \
    do {                                                                                                       \
        _Pragma("unroll") for (int f = 0; f < MT; f++)                                                         \
            LDSM_A((af)[f], (abuf) + TILE_OFF(A_ROW(f, kk), A_CH(f, kk), A_INNER / 8));                        \
        _Pragma("unroll") for (int p = 0; p < NT / 2; p++)                                                     \
            LDSM_B((bf)[p], (bbuf) + TILE_OFF(B_ROW(p, kk), B_CH(p, kk), B_INNER / 8));                        \
    } while (0)
    uint af[2][MT][4], bf[2][NT / 2][4];
    /* Register set of k step kk of a tile with parity par: the sets alternate over all k steps, so with an odd
     * number of steps per tile the loop below runs two tiles per iteration and every index stays constant. */
#define FSET(par, kk) (((par) * KSTEPS + (kk)) & 1)
#define PIPE_TILE(t, par) PIPE_TILE_WITH(t, par, if ((t) + STAGES - 1 < ktiles) ISSUE(ws, ((t) + STAGES - 1) * BLOCK_K))
#define PIPE_TILE_WITH(t, par, issue)                                                                          \
    do {                                                                                                       \
        _Pragma("unroll") for (int kk = 0; kk < KSTEPS; kk++) {                                                \
            if (kk == 0) {                                                                                     \
                issue;                                                                                         \
                CP_COMMIT();                                                                                   \
                ws = ws + 1 == STAGES ? 0 : ws + 1;                                                            \
            }                                                                                                  \
            if (kk == KSTEPS - 1) {                                                                            \
                CP_WAIT(STAGES - 2);                                                                           \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
                rs = rs + 1 == STAGES ? 0 : rs + 1;                                                            \
            }                                                                                                  \
            LOAD_FRAGS(as_base + (uint)(rs * A_TILE * 2), bs_base + (uint)(rs * B_TILE * 2), (kk + 1) % KSTEPS, \
                       af[FSET(par, kk + 1)], bf[FSET(par, kk + 1)]);                                          \
            _Pragma("unroll") for (int f = 0; f < MT; f++) _Pragma("unroll") for (int n = 0; n < NT; n++)      \
                MMA(acc[f][n], af[FSET(par, kk)][f], bf[FSET(par, kk)][n / 2][(n % 2) * 2],                    \
                    bf[FSET(par, kk)][n / 2][(n % 2) * 2 + 1]);                                                \
        }                                                                                                      \
        PROMOTE_ACC();                                                                                         \
    } while (0)
    CP_WAIT(STAGES - 2);
    barrier(CLK_LOCAL_MEM_FENCE);
    int rs = 0, ws = STAGES - 1;
    LOAD_FRAGS(as_base, bs_base, 0, af[0], bf[0]);
    /* The steady state, split off so that its copies carry no bounds tests: while the tile issued ahead is a
     * whole k tile of an interior work-group, every chunk is one cp.async from a pointer that moves by a k tile
     * per step. In one loop with the edge path, ptxas if-converts the edge copies into predicated instructions
     * that every step issues. Then the general loop finishes the k tiles. */
#if TRANS_A
    const long a_kstep = (long)BLOCK_K * lda;
#else
    const long a_kstep = BLOCK_K;
#endif
#if TRANS_B
    const long b_kstep = BLOCK_K;
#else
    const long b_kstep = (long)BLOCK_K * ldb;
#endif
    const long a_pitch = (long)A_RP * lda, b_pitch = (long)B_RP * ldb;
    __global const ushort *a_next = A_CORNER((STAGES - 1) * BLOCK_K) + a_goff0;
    __global const ushort *b_next = B_CORNER((STAGES - 1) * BLOCK_K) + b_goff0;
#define ISSUE_STEADY_OPERAND(op, OP)                                                                           \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < OP##_CHUNKS; i++)                                                \
            copy_chunk_fast(op##s_base + (uint)(ws * OP##_TILE * 2) + op##_dst(i), op##_next + i * op##_pitch);  \
        op##_next += op##_kstep;                                                                               \
    } while (0)
#define ISSUE_STEADY()                                                                                         \
    do {                                                                                                       \
        ISSUE_STEADY_OPERAND(a, A);                                                                            \
        ISSUE_STEADY_OPERAND(b, B);                                                                            \
    } while (0)
    /* & of the two 0/1 flags: with VEC_A or VEC_B 0 one of them is a constant, and && on it draws a warning
     * that NVIDIA's compiler prints to the caller's stderr */
    const int steady = (a_inner & b_inner) ? K / BLOCK_K - (STAGES - 1) : 0;
    /* A steady step runs STAGES tiles (twice that with an odd number of k steps per tile, for the register
     * sets), after which both stage counters are back where they started: set to those constants at the top,
     * they make every local address in the step a compile-time offset from a fixed register. */
#define STEADY_TILES (STAGES * (KSTEPS % 2 ? 2 : 1))
    int t = 0;
    for (; t + STEADY_TILES <= steady; t += STEADY_TILES) {
        ws = STAGES - 1;
        rs = 0;
        _Pragma("unroll") for (int u = 0; u < STEADY_TILES; u++) PIPE_TILE_WITH(t + u, u % 2, ISSUE_STEADY());
    }
#if KSTEPS % 2
    for (; t < ktiles; t += 2) {
        PIPE_TILE(t, 0);
        if (t + 1 < ktiles) PIPE_TILE(t + 1, 1);
    }
#else
    for (; t < ktiles; t++) PIPE_TILE(t, 0);
#endif
#else
    for (int t = 0; t < ktiles; t++) {
        CP_WAIT(STAGES - 2);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int next = t + STAGES - 1;
        if (next < ktiles) ISSUE(next % STAGES, next * BLOCK_K);
        CP_COMMIT();
        COMPUTE_STAGE(t % STAGES);
    }
#endif
    CP_WAIT(0);
#else
    /* Two stages through registers: the next tile's global loads are in flight while the current one is
     * multiplied, and one barrier per step suffices. */
    raw_t ra[A_CHUNKS], rb[B_CHUNKS];
#define LOAD_TILES(k0)                                                                                         \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < A_CHUNKS; i++) ra[i] = load_chunk(A_ARGS(i, k0));                \
        _Pragma("unroll") for (int i = 0; i < B_CHUNKS; i++) rb[i] = load_chunk(B_ARGS(i, k0));                \
    } while (0)
#define STORE_TILES(st)                                                                                        \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < A_CHUNKS; i++)                                                   \
            *(__local uint4 *)((__local uchar *)as_ + (st) * A_TILE * 2 + a_dst(i)) = WIDEN_A(ra[i]);          \
        _Pragma("unroll") for (int i = 0; i < B_CHUNKS; i++)                                                   \
            *(__local uint4 *)((__local uchar *)bs_ + (st) * B_TILE * 2 + b_dst(i)) = WIDEN_B(rb[i]);          \
    } while (0)
    LOAD_TILES(0);
    STORE_TILES(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < ktiles; t++) {
        const int cur = t & 1;
        if (t + 1 < ktiles) LOAD_TILES((t + 1) * BLOCK_K);
        COMPUTE_STAGE(cur);
        if (t + 1 < ktiles) STORE_TILES(cur ^ 1);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
#if PROMOTE
#define RESULT sum
#else
#define RESULT acc
#endif

    /* The epilogue as its own pass over the accumulators, one straight block per kind, and then the stores: a
     * plain matmul goes from the last mma to its stores without passing the other kinds' code. Applied per
     * element inside the stores, the three kinds' branches and GELU's body would sit between every two stores,
     * and a work-group of a short K (batched matmul) is mostly its epilogue. */
#define EPI_PASS(F)                                                                                            \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < MT; i++) _Pragma("unroll") for (int n = 0; n < NT; n++)          \
            _Pragma("unroll") for (int q = 0; q < 4; q++) RESULT[i][n][q] = F(RESULT[i][n][q]);               \
    } while (0)
#if F8
    /* two products: the first is exact (a power of two), so the result is the f32 sum times scale, rounded once */
#define F8_SCALE(v) ((v) * F8_UNDO * scale)
    EPI_PASS(F8_SCALE);
#endif
    EPI_APPLY(EPI_PASS);

    /* accumulator fragment: c0, c1 at (lane / 4, 2·(lane % 4) + {0, 1}); c2, c3 eight rows below */
    const int row = m0 + wm * WTM + lane / 4, col = n0 + wn * WTN + (lane % 4) * 2;
    if (c_pair && m0 + BLOCK_M <= M && n0 + BLOCK_N <= N) {
        /* a whole tile in range: every pair one aligned store, at a fixed offset from its row's start */
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                __global z_t *const p = c + (row + i * 16 + h * 8) * ldc + col;
#pragma unroll
                for (int n = 0; n < NT; n++) {
#if Z_DT == DT_F32
                    *(__global float2 *)(p + n * 8) = (float2)(RESULT[i][n][2 * h], RESULT[i][n][2 * h + 1]);
#else
                    *(__global uint *)(p + n * 8) = pack_pair(RESULT[i][n][2 * h], RESULT[i][n][2 * h + 1]);
#endif
                }
            }
    } else {
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int n = 0; n < NT; n++) {
                store_pair(c, row + i * 16, col + n * 8, M, N, ldc, RESULT[i][n][0], RESULT[i][n][1], c_pair);
                store_pair(c, row + i * 16 + 8, col + n * 8, M, N, ldc, RESULT[i][n][2], RESULT[i][n][3], c_pair);
            }
    }
}
#endif
