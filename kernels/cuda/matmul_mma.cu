/*
 * f16 matmul on the tensor cores: C = act(A . B), f16 operands, f32 accumulation, f16 or f32 C.
 * Compile-time: BM, BN, BK, WARPS_M, WARPS_N (warp grid over the tile), STAGES, TRANS_B (0: B is [K,N]
 * row-major; 1: B is stored [N,K]), DT_IN (1 f16, 2 bf16: the operands' type for mma.sync; both are 16-bit to every
 * other line), DT_OUT (0 f32, 1 f16, 2 bf16), MMA_V (main loop: 0 loads each k step's fragments
 * before its mma; 1 software-pipelines them, the next step's ldmatrix issued before this step's mma, across
 * the tile barrier too; the host picks 1 where the extra fragment registers fit).
 * Requirements the host checks: A row-major, lda and ldb multiples of 8, A and B 16-byte aligned (every
 * 16-byte chunk of a row is then one cp.async). M, N, K are arbitrary: chunks past an edge copy fewer bytes and
 * cp.async zero-fills the rest, so the tail of K multiplies zeros.
 *
 * Pipeline: STAGES shared-memory tiles in flight through cp.async (global -> shared without registers); a
 * tile is consumed by ldmatrix (A, and B stored [N,K]) or ldmatrix.trans (B stored [K,N]) into the register
 * fragments of mma.sync.m16n8k16. Rows of 16-byte chunks are XOR-swizzled so the eight row addresses of each
 * ldmatrix phase, and each warp's cp.async stores, fall in distinct bank groups.
 * Block order is grouped (GROUP_M, a run-time argument) for L2 reuse; the epilogue is fused and stores from
 * the accumulator registers.
 *
 * 8-bit floats (DT_IN 4 f8e4m3 or 5 f8e5m2, DT_B B's when it differs; sm_89 and up): mma.sync.m16n8k32 with both
 * operands K-major, so TRANS_B is 1. Every address below counts bytes the same way: a 16-byte chunk holds 16
 * elements instead of 8 and a 32-element K step is 32 bytes, as a 16-element one is, so the ldmatrix fragments of
 * the 16-bit layout are the 8-bit ones too (four bytes of one row a register). BK counts elements (a multiple of
 * 32). The tensor cores keep about 14 bits when they sum FP8 products, so each K tile is summed into a partial
 * that is then added into the f32 accumulator (docs/ops.md's bound for 8-bit float products); scale (scale_a *
 * scale_b) multiplies the sum before the epilogue.
 *
 * SPLIT_K (0 or 1): split-K for grids too small to fill the SMs (language models' few-row products above all).
 * Block (x, y, z) sums K tiles [y * kper, y * kper + kper) clipped at K (kper = the K tiles over gridDim.y splits,
 * rounded up; a split past K is empty and sums nothing) of output tile x of matrix z, then joins the other
 * splits of its tile in this same launch, with no second pass: every block stores its f32 partial into the host's
 * workspace WS (tile t = z * gridDim.x + x owns gridDim.y slots of BM x BN floats, each in the accumulator
 * fragments' order so that the stores and the loads are whole coalesced 16-byte vectors) and counts itself in
 * FLAGS[t]; the block that counts last sums the slots in split order 0, 1, ... (its own from its registers, the
 * same values it stored), so the result does not depend on which block finishes last (deterministic run to
 * run), resets FLAGS[t] to 0 for the next launch (the host zeroes the counters once, when it allocates them) and
 * runs the epilogue: scale, activation and C's type, as without a split. The waiting is in the counting only:
 * no block spins, so any schedule of the grid completes.
 */
#ifndef MMA_V
#define MMA_V 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#ifndef DT_B
#define DT_B DT_IN
#endif
#define F8 (DT_IN >= 4)
#define ES (F8 ? 1 : 2)
#if F8 && !TRANS_B
#error "matmul_mma: 8-bit floats take B stored [N,K] (TRANS_B 1)"
#endif
#define THREADS (WARPS_M * WARPS_N * 32)
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define MT (WM / 16)
#define NT (WN / 8)

/* elements of a 16-byte chunk; K steps of one mma (32 bytes each) in a K tile */
#define EPC (16 / ES)
#define KSTEPS (BK * ES / 32)
#define CPR_A (BK / EPC)
#if TRANS_B
#define CPR_B (BK / EPC)
#define ROWS_B BN
#else
#define CPR_B (BN / EPC)
#define ROWS_B BK
#endif
#define A_STAGE_BYTES (BM * BK * ES)
#define B_STAGE_BYTES (BK * BN * ES)
#define LOADS_A (BM * CPR_A / THREADS)
#define LOADS_B (ROWS_B * CPR_B / THREADS)

typedef trr_dt<DT_OUT>::type TO;
#if F8
typedef unsigned char TE; /* an operand element, as bytes */
#else
typedef unsigned short TE;
#endif

/* Byte offset of 16-byte chunk c of row r in a tile with cpr chunks per row: the chunk index is XORed with a
 * function of the row so that 8 consecutive rows at the same chunk land in 8 different 16-byte bank groups. */
template <int cpr> __device__ __forceinline__ unsigned mma_swz(int r, int c) {
    constexpr int rdiv = cpr >= 8 ? 1 : 8 / cpr;
    constexpr int span = cpr >= 8 ? 8 : cpr;
    return (unsigned)((r * cpr + (c ^ ((r / rdiv) % span))) * 16);
}

#if F8 && DT_IN == 5
#define MMA_A "e5m2"
#elif F8
#define MMA_A "e4m3"
#elif DT_IN == 2
#define MMA_A "bf16"
#else
#define MMA_A "f16"
#endif
#if F8 && DT_B == 5
#define MMA_B "e5m2"
#elif F8
#define MMA_B "e4m3"
#else
#define MMA_B MMA_A
#endif
#if F8
#define MMA_SHAPE "m16n8k32"
#else
#define MMA_SHAPE "m16n8k16"
#endif

/* c += A . B for one m16n8 tile over one K step (16 16-bit or 32 8-bit elements). */
__device__ __forceinline__ void mma_16816(float *c, const unsigned *a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned." MMA_SHAPE ".row.col.f32." MMA_A "." MMA_B ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_mma(const TE *A, long long lda, const TE *B, long long ldb, TO *C, long long ldc, int M, int N, int K,
               int epi, float alpha, int group_m, long long a_bs, long long b_bs, long long c_bs, float scale,
               float *WS, unsigned *FLAGS) {
    /* the batch is blockIdx.z: each matrix starts one batch stride further on (0 for a shared input); the host
     * keeps batch strides of A and B multiples of 8, so every batch's base stays 16-byte aligned */
    A += (long long)blockIdx.z * a_bs;
    B += (long long)blockIdx.z * b_bs;
    C += (long long)blockIdx.z * c_bs;
#if SPLIT_K
    const int kt_all = (K + BK - 1) / BK, kper = (kt_all + (int)gridDim.y - 1) / (int)gridDim.y;
    const int kt0 = (int)blockIdx.y * kper, kt_left = kt_all - kt0;
    /* this split's K tiles: kt counts from 0 below, tile kt is K tile kt0 + kt */
    const int kt_count = kt_left < 0 ? 0 : kt_left < kper ? kt_left : kper;
#else
    const int kt0 = 0, kt_count = (K + BK - 1) / BK;
    (void)WS, (void)FLAGS;
#endif
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned smem_base = trr_smem_addr(smem);
    const unsigned a_base = smem_base;
    const unsigned b_base = smem_base + STAGES * A_STAGE_BYTES;

    int npm = (M + BM - 1) / BM, npn = (N + BN - 1) / BN;
    int pm, pn;
    trr_grouped_block(blockIdx.x, npm, npn, group_m, &pm, &pn);
    const int m0 = pm * BM, n0 = pn * BN;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;

    /* Issues the cp.async copies of K tile kt into stage s. */
    auto load_stage = [&](int s, int kt) {
        const int k0 = (kt0 + kt) * BK;
#pragma unroll
        for (int i = 0; i < LOADS_A; i++) {
            int idx = tid + i * THREADS;
            int r = idx / CPR_A, c = idx % CPR_A;
            int gm = m0 + r, gk = k0 + c * EPC;
            bool ok = gm < M && gk < K;
            int bytes = ok ? min(EPC, K - gk) * ES : 0;
            const TE *src = ok ? A + (long long)gm * lda + gk : A;
            trr_cp_async(a_base + s * A_STAGE_BYTES + mma_swz<CPR_A>(r, c), src, bytes);
        }
#pragma unroll
        for (int i = 0; i < LOADS_B; i++) {
            int idx = tid + i * THREADS;
            int r = idx / CPR_B, c = idx % CPR_B;
#if TRANS_B
            int gn = n0 + r, gk = k0 + c * EPC;
            bool ok = gn < N && gk < K;
            int bytes = ok ? min(EPC, K - gk) * ES : 0;
            const TE *src = ok ? B + (long long)gn * ldb + gk : B;
#else
            int gk = k0 + r, gn = n0 + c * EPC;
            bool ok = gk < K && gn < N;
            int bytes = ok ? min(EPC, N - gn) * ES : 0;
            const TE *src = ok ? B + (long long)gk * ldb + gn : B;
#endif
            trr_cp_async(b_base + s * B_STAGE_BYTES + mma_swz<CPR_B>(r, c), src, bytes);
        }
    };

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
#if F8
    /* the K tile's partial (8-bit floats: see the top), added into acc at the end of each tile */
    float part[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) part[i][j][e] = 0.0f;
#define MMA_D part
#else
#define MMA_D acc
#endif
    /* acc += part, part = 0: the promotion at the end of a K tile (8-bit floats only) */
    auto promote = [&]() {
#if F8
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    acc[i][j][e] += part[i][j][e];
                    part[i][j][e] = 0.0f;
                }
#endif
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < kt_count) load_stage(s, s);
        trr_cp_commit();
    }

    /* Loads the A and B register fragments of k step kk (16 deep) of the tile in the given stage. */
    auto load_frags = [&](unsigned a_stage, unsigned b_stage, int kk, unsigned (*af)[4], unsigned (*bf)[2]) {
#pragma unroll
        for (int i = 0; i < MT; i++) {
            /* lanes 0-15 address rows 0-15 at k chunk 2kk, lanes 16-31 the same rows at chunk 2kk+1:
             * the four 8x8 matrices come back as a0..a3 of the m16n8k16 A fragment. */
            int r = wm0 + i * 16 + (lane & 15);
            int c = kk * 2 + (lane >> 4);
            trr_ldsm_x4(a_stage + mma_swz<CPR_A>(r, c), af[i]);
        }
#pragma unroll
        for (int p = 0; p < NT / 2; p++) {
            unsigned t[4];
#if TRANS_B
            /* smem rows are n: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) */
            int r = wn0 + p * 16 + (lane & 7) + ((lane >> 4) << 3);
            int c = kk * 2 + ((lane >> 3) & 1);
            trr_ldsm_x4(b_stage + mma_swz<CPR_B>(r, c), t);
#else
            /* smem rows are k: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15),
             * transposed on load so each thread holds B[2t..2t+1][g] as the col-major fragment wants */
            int r = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
            int c = (wn0 + p * 16) / 8 + (lane >> 4);
            trr_ldsm_x4_trans(b_stage + mma_swz<CPR_B>(r, c), t);
#endif
            bf[2 * p][0] = t[0];
            bf[2 * p][1] = t[1];
            bf[2 * p + 1][0] = t[2];
            bf[2 * p + 1][1] = t[3];
        }
    };

#if MMA_V == 0
    for (int kt = 0; kt < kt_count; kt++) {
        trr_cp_wait<STAGES - 2>();
        __syncthreads(); /* tile kt is visible to all; every warp is done with the stage refilled below */
        int next = kt + STAGES - 1;
        if (next < kt_count) load_stage(next % STAGES, next);
        trr_cp_commit();

        const int s = kt % STAGES;
        const unsigned a_stage = a_base + s * A_STAGE_BYTES;
        const unsigned b_stage = b_base + s * B_STAGE_BYTES;
#pragma unroll
        for (int kk = 0; kk < KSTEPS; kk++) {
            unsigned af[MT][4];
            unsigned bf[NT][2];
            load_frags(a_stage, b_stage, kk, af, bf);
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) mma_16816(MMA_D[i][j], af[i], bf[j][0], bf[j][1]);
        }
        promote();
    }
#else
    /* Software-pipelined main loop: the fragments of k step kk+1 load while the mma of step kk issue (two
     * register buffers), across tile boundaries too. The barrier that publishes tile kt+1 sits before the
     * last k step of tile kt; the refill of the stage freed by tile kt-1 is issued after that barrier. */
    constexpr int KK = KSTEPS;
    unsigned af[2][MT][4];
    unsigned bf[2][NT][2];
    trr_cp_wait<STAGES - 2>();
    __syncthreads();
    int rs = 0, ws = STAGES - 1;
    load_frags(a_base, b_base, 0, af[0], bf[0]);
    for (int kt = 0; kt < kt_count; kt++) {
        const int next = kt + STAGES - 1;
#pragma unroll
        for (int kk = 0; kk < KK; kk++) {
            if (kk == 0) {
                if (next < kt_count) load_stage(ws, next);
                trr_cp_commit();
                ws = ws + 1 == STAGES ? 0 : ws + 1;
            }
            if (kk == KK - 1) {
                trr_cp_wait<STAGES - 2>();
                __syncthreads(); /* tile kt+1 visible; every warp past its reads of tile kt-1's stage */
                rs = rs + 1 == STAGES ? 0 : rs + 1;
            }
            load_frags(a_base + rs * A_STAGE_BYTES, b_base + rs * B_STAGE_BYTES, (kk + 1) % KK, af[(kk + 1) & 1],
                       bf[(kk + 1) & 1]);
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) mma_16816(MMA_D[i][j], af[kk & 1][i], bf[kk & 1][j][0], bf[kk & 1][j][1]);
        }
        promote();
    }
#endif
#undef MMA_D
    trr_cp_wait<0>();
#if !F8
    (void)scale;
#endif
#if SPLIT_K
    {
        /* this block's slot, then the others of its tile: (i, j)'s four floats of thread tid at float4
         * (i * NT + j) * THREADS + tid of a slot (MT * NT * THREADS float4 = BM x BN floats) */
        constexpr int SLOT = BM * BN / 4;
        const unsigned tile = blockIdx.z * gridDim.x + blockIdx.x;
        float4 *slots = reinterpret_cast<float4 *>(WS) + (size_t)tile * gridDim.y * SLOT;
        float4 *mine = slots + (size_t)blockIdx.y * SLOT;
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
                __stcg(mine + (i * NT + j) * THREADS + tid, make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]));
        __shared__ unsigned split_last;
        __threadfence(); /* the slot is visible device-wide before the count says so */
        __syncthreads();
        if (tid == 0) {
            const unsigned before = atomicAdd(FLAGS + tile, 1u);
            split_last = before + 1 == gridDim.y;
            if (split_last) FLAGS[tile] = 0; /* every split has counted: ready for the next launch */
        }
        __syncthreads();
        if (!split_last) return;
        __threadfence(); /* the other splits' slots are read after their counts were seen */
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) {
                float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                for (unsigned y = 0; y < gridDim.y; y++) {
                    const float4 p = y == blockIdx.y ? make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
                                                     : __ldcg(slots + (size_t)y * SLOT + (i * NT + j) * THREADS + tid);
                    sum.x += p.x;
                    sum.y += p.y;
                    sum.z += p.z;
                    sum.w += p.w;
                }
                acc[i][j][0] = sum.x;
                acc[i][j][1] = sum.y;
                acc[i][j][2] = sum.z;
                acc[i][j][3] = sum.w;
            }
    }
#endif

    /* Accumulator fragment: c0, c1 at (row g, cols 2t, 2t+1), c2, c3 at row g + 8. */
    const int g = lane >> 2, t4 = lane & 3;
    const bool pair_ok = (ldc & 1) == 0 && (((unsigned long long)C) & (2 * sizeof(TO) - 1)) == 0;
#pragma unroll
    for (int i = 0; i < MT; i++) {
        int row = m0 + wm0 + i * 16 + g;
#pragma unroll
        for (int j = 0; j < NT; j++) {
            int col = n0 + wn0 + j * 8 + 2 * t4;
            float *c = acc[i][j];
#if F8
#pragma unroll
            for (int e = 0; e < 4; e++) c[e] *= scale;
#endif
            trr_store_pair(C, ldc, row, col, M, N, trr_epilogue(c[0], epi, alpha), trr_epilogue(c[1], epi, alpha),
                           pair_ok);
            trr_store_pair(C, ldc, row + 8, col, M, N, trr_epilogue(c[2], epi, alpha),
                           trr_epilogue(c[3], epi, alpha), pair_ok);
        }
    }
}
