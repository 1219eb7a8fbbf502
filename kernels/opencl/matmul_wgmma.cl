/* C = act(scale · A·B) for 8-bit float operands (e4m3 and e5m2 in any mix) on Hopper's warpgroup MMA (wgmma),
 * issued as inline PTX. NVIDIA's OpenCL compiles for sm_90, where ptxas refuses wgmma (it needs sm_90a), so
 * every wgmma instruction is written behind WG_PTX: the program is first built with those lines as PTX comments,
 * the host takes the PTX the driver made, turns the comments back into instructions, retargets it to sm_90a and
 * builds that (backend_opencl/program.c, ptx_retarget.c). The WGMMA_PROBE kernel below (one warpgroup, one tile)
 * decides once per device whether that works and computes right (backend_opencl/mma_probe.c).
 * FP8 wgmma reads both operands K-major from shared memory: A stored [M,K] and B stored [N,K] (TRANS_A 0,
 * TRANS_B 1), their rows 16-byte aligned (cp.async copies 16-byte chunks); the host refuses other layouts with
 * the reason and the heuristic leaves them on matmul_mma.cl.
 * One work-group per BLOCK_M x BLOCK_N tile of C in the grouped order of docs/ops.md: BLOCK_M / 64 consumer
 * warpgroups, warpgroup w owning rows 64w .. 64w + 63 of the tile (one m64nBLOCK_Nk32 accumulator), and one
 * producer warpgroup that loads. K goes in slices of 64 bytes, STAGES of them in flight: a slice's rows are 64
 * bytes under the 64-byte swizzle (16-byte chunk c of row r at chunk c ^ ((r / 2) % 4)), which the descriptors
 * name, so the tensor cores read without bank conflicts. With TMA (where the host has tensor maps: the CUDA
 * driver encodes them, backend_opencl/tensor_map.h, and tmap_fill below sets their addresses on the device) one
 * producer work-item loads each slice as two boxes, which the TMA unit swizzles the same way; else the producer
 * warpgroup copies 16-byte chunks with cp.async, which takes more of the memory pipeline for the same bytes
 * (docs/performance.md). Per stage an mbarrier "full" (the slice landed: the TMA byte count, or
 * cp.async.mbarrier.arrive) and "empty" (every consumer's wgmma on it completed) hand the slices over, so the
 * consumer warpgroups do not wait for each other: one's wgmma runs while another adds its partial (below). With
 * every work-item copying and a barrier a slice instead, the warpgroups run in lockstep and the tensor cores idle
 * through every add. NVIDIA's OpenCL gives a work-group 48 KiB of local memory: three stages of 128 x 112 beside
 * the mbarriers.
 * Build options: BLOCK_M (64 or 128), BLOCK_N (16..128, a multiple of 16), GROUP_M, STAGES, X_DT, Y_DT (4 e4m3,
 * 5 e5m2), Z_DT, ADDR_MODE and CP_ASYNC (1: the mma probe's findings), WG_COMMENTED (1: the wgmma lines as
 * comments, the first build), TMA (1: slices loaded by TMA through the tensor maps in the kernel's maps). */

#if WG_COMMENTED
#define WG_PTX "//@sm_90a@ "
#else
#define WG_PTX ""
#endif

#define BK 64 /* bytes, = elements, of K a slice */

/* Shared-memory matrix descriptor, 64-byte swizzle, K-major: 8-row groups 512 bytes apart (SBO); LBO unused. */
static inline ulong wg_desc(uint addr) {
    return (ulong)((addr & 0x3FFFFu) >> 4) | ((ulong)1 << 16) | ((ulong)(512u >> 4) << 32) | ((ulong)2 << 62);
}

#define WG_FENCE() asm volatile(WG_PTX "wgmma.fence.sync.aligned;" ::: "memory")
#define WG_COMMIT() asm volatile(WG_PTX "wgmma.commit_group.sync.aligned;" ::: "memory")
#define WG_WAIT0() asm volatile(WG_PTX "wgmma.wait_group.sync.aligned 0;" ::: "memory")
/* shared-memory writes of the generic proxy (cp.async, stores) seen by this work-item ordered before its
 * async-proxy reads (wgmma) */
#define PROXY_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")

#ifndef TMA
#define TMA 0
#endif

#if !TMA || defined(WGMMA_PROBE)
/* One 16-byte chunk into shared memory at dst: the bytes of src that are in range (n of 16), the rest zero. */
static inline void copy16(uint dst, __global const uchar *src, int n) {
    CP_ASYNC16(dst, src, n);
}
#endif

/* Byte offset of chunk c (of 4) of row r in a slice. */
#define SW64(r, c) ((uint)((r) * BK + (((c) ^ (((r) >> 1) & 3)) * 16)))

#if defined(X_DT) && X_DT == DT_F8E5M2
#define WG_AS "e5m2"
#else
#define WG_AS "e4m3"
#endif
#if defined(Y_DT) && Y_DT == DT_F8E5M2
#define WG_BS "e5m2"
#else
#define WG_BS "e4m3"
#endif

/* The accumulator's registers as PTX operands from %3 on (the two descriptors are %0 and %1, scale-d's flag %2)
 * and their bindings, in steps of 16 columns (8 registers). */
#define WA8(a, b, c, d, e, f, g, h) "%" #a ", %" #b ", %" #c ", %" #d ", %" #e ", %" #f ", %" #g ", %" #h
#define WN_16 WA8(3, 4, 5, 6, 7, 8, 9, 10)
#define WN_32 WN_16 ", " WA8(11, 12, 13, 14, 15, 16, 17, 18)
#define WN_48 WN_32 ", " WA8(19, 20, 21, 22, 23, 24, 25, 26)
#define WN_64 WN_48 ", " WA8(27, 28, 29, 30, 31, 32, 33, 34)
#define WN_80 WN_64 ", " WA8(35, 36, 37, 38, 39, 40, 41, 42)
#define WN_96 WN_80 ", " WA8(43, 44, 45, 46, 47, 48, 49, 50)
#define WN_112 WN_96 ", " WA8(51, 52, 53, 54, 55, 56, 57, 58)
#define WN_128 WN_112 ", " WA8(59, 60, 61, 62, 63, 64, 65, 66)
#define WN_144 WN_128 ", " WA8(67, 68, 69, 70, 71, 72, 73, 74)
#define WN_160 WN_144 ", " WA8(75, 76, 77, 78, 79, 80, 81, 82)
#define WN_176 WN_160 ", " WA8(83, 84, 85, 86, 87, 88, 89, 90)
#define WN_192 WN_176 ", " WA8(91, 92, 93, 94, 95, 96, 97, 98)
#define WN_208 WN_192 ", " WA8(99, 100, 101, 102, 103, 104, 105, 106)
#define WN_224 WN_208 ", " WA8(107, 108, 109, 110, 111, 112, 113, 114)
#define WN_240 WN_224 ", " WA8(115, 116, 117, 118, 119, 120, 121, 122)
#define WN_256 WN_240 ", " WA8(123, 124, 125, 126, 127, 128, 129, 130)
#define WB8(x, i)                                                                                              \
    "+f"(x[i]), "+f"(x[(i) + 1]), "+f"(x[(i) + 2]), "+f"(x[(i) + 3]), "+f"(x[(i) + 4]), "+f"(x[(i) + 5]),      \
        "+f"(x[(i) + 6]), "+f"(x[(i) + 7])
#define WB_16(x) WB8(x, 0)
#define WB_32(x) WB_16(x), WB8(x, 8)
#define WB_48(x) WB_32(x), WB8(x, 16)
#define WB_64(x) WB_48(x), WB8(x, 24)
#define WB_80(x) WB_64(x), WB8(x, 32)
#define WB_96(x) WB_80(x), WB8(x, 40)
#define WB_112(x) WB_96(x), WB8(x, 48)
#define WB_128(x) WB_112(x), WB8(x, 56)
#define WB_144(x) WB_128(x), WB8(x, 64)
#define WB_160(x) WB_144(x), WB8(x, 72)
#define WB_176(x) WB_160(x), WB8(x, 80)
#define WB_192(x) WB_176(x), WB8(x, 88)
#define WB_208(x) WB_192(x), WB8(x, 96)
#define WB_224(x) WB_208(x), WB8(x, 104)
#define WB_240(x) WB_224(x), WB8(x, 112)
#define WB_256(x) WB_240(x), WB8(x, 120)
/* d[64 x n] (+)= A (64 x 32, descriptor da) · B (n x 32, descriptor db), f32 accumulate; acc 0 writes d = A·B */
#define WG_MMA_N(n, d, da, db, acc)                                                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\n" WG_PTX "wgmma.mma_async.sync.aligned.m64n" #n      \
                 "k32.f32." WG_AS "." WG_BS " {" CAT(WN_, n) "}, %0, %1, p, 1, 1;\n}\n"                          \
                 : "+l"(da), "+l"(db), "+r"(acc), CAT(WB_, n)(d))
#define WG_MMA_X(n, d, da, db, acc) WG_MMA_N(n, d, da, db, acc)

#ifdef WGMMA_PROBE
/* The probe: one warpgroup computes C[64][64] = A[64][64] · B^T (A [m][k], B [n][k], e4m3) with the kernel's
 * instruction forms: cp.async into 64-byte swizzled slices, the proxy fence, two m64n64k32 wgmma. The host checks
 * the result. */
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void wgmma_probe(__global const uchar *a,
                                                                           __global const uchar *b,
                                                                           __global float *c) {
    __local uchar smem_[2 * 64 * BK] __attribute__((aligned(512)));
    const int t = (int)get_local_id(0);
    const uint base = smem_addr(smem_);
    for (int i = t; i < 64 * 4; i += 128) {
        copy16(base + SW64(i / 4, i % 4), a + i * 16, 16);
        copy16(base + 64 * BK + SW64(i / 4, i % 4), b + i * 16, 16);
    }
    CP_COMMIT();
    CP_WAIT(0);
    PROXY_FENCE();
    barrier(CLK_LOCAL_MEM_FENCE);
    float d[32];
    for (int i = 0; i < 32; i++) d[i] = 0.0f;
    WG_FENCE();
    for (int kk = 0; kk < 2; kk++) {
        ulong da = wg_desc(base + kk * 32), db = wg_desc(base + 64 * BK + kk * 32);
        int acc = kk;
        WG_MMA_N(64, d, da, db, acc);
    }
    WG_COMMIT();
    WG_WAIT0();
    const int w = t / 32, l = t % 32;
    for (int j = 0; j < 8; j++) {
        const int row = 16 * w + l / 4, col = 8 * j + 2 * (l % 4);
        c[row * 64 + col] = d[4 * j];
        c[row * 64 + col + 1] = d[4 * j + 1];
        c[(row + 8) * 64 + col] = d[4 * j + 2];
        c[(row + 8) * 64 + col + 1] = d[4 * j + 3];
    }
}
#else

#define WGS (BLOCK_M / 64)
#define CONSUMERS (WGS * 128)
#define PRODUCERS 128
#define THREADS (CONSUMERS + PRODUCERS) /* the consumer warpgroups, then the producer warpgroup */
#define A_SLICE (BLOCK_M * BK)   /* bytes of a stage */
#define B_SLICE (BLOCK_N * BK)
#define STAGE (A_SLICE + B_SLICE)
#define NACC (BLOCK_N / 2) /* accumulators a work-item */

/* mbarriers (PTX, shared memory; they need no sm_90a) */
static inline void mbar_init(uint bar, uint count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
static inline void mbar_wait(uint bar, uint parity) {
    asm volatile("{\n.reg .pred done;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
static inline void mbar_arrive(uint bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared.b64 state, [%0];\n}\n" ::"r"(bar) : "memory");
}
#if !TMA
/* arrives on bar once every cp.async this work-item issued before it has landed */
static inline void mbar_arrive_copies(uint bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(bar) : "memory");
}
#endif

#if TMA
/* the tensor map at map (written by tmap_fill) made visible to this work-item's TMA loads */
static inline void tma_acquire(__global const ulong *map) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(map) : "memory");
}
/* the stage's full mbarrier expects bytes from TMA, and this work-item arrives on it */
static inline void mbar_expect(uint bar, uint bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/* the box at (k, row, batch) of map's matrix into shared memory at dst, completing on bar */
static inline void tma_load(uint dst, __global const ulong *map, int k, int row, int z, uint bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                 "%4}], [%5];" ::"r"(dst),
                 "l"(map), "r"(k), "r"(row), "r"(z), "r"(bar)
                 : "memory");
}

/* maps[0..15], maps[16..31]: A's and B's tensor maps, from the host's encodings ta, tb (every field but the
 * address: the host does not know a buffer's device address) with the addresses of a + aoff and b + boff. */
__kernel void tmap_fill(__global ulong *maps, ulong16 ta, ulong16 tb, __global const uchar *a, long aoff,
                        __global const uchar *b, long boff) {
    *(__global ulong16 *)maps = ta;
    *(__global ulong16 *)(maps + 16) = tb;
    asm volatile(WG_PTX "tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" ::"l"(maps), "l"(a + aoff)
                 : "memory");
    asm volatile(WG_PTX "tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" ::"l"(maps + 16),
                 "l"(b + boff)
                 : "memory");
    asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
}
#endif

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void matmul_wgmma(
    __global const uchar *a, long aoff, int lda, __global const uchar *b, long boff, int ldb, __global z_t *c,
    long coff, int ldc, int M, int N, int K, int epi, float alpha, long a_bstride, long b_bstride, long c_bstride,
    int c_pair, float scale, __global const ulong *maps) {
    /* the swizzle is a function of the address: slices start on its 512-byte period */
    __local uchar smem_[STAGES * STAGE] __attribute__((aligned(512)));
    /* per stage: full (the producer's copies landed) and empty (every consumer's wgmma on it completed) */
    __local ulong bars_[2 * STAGES] __attribute__((aligned(8)));
    const long batch = (long)get_group_id(2);
    a += aoff + batch * a_bstride;
    b += boff + batch * b_bstride;
    c += coff + batch * c_bstride;
    const int tid = (int)get_local_id(0), wg = tid / 128, lane = tid % 32, warp = (tid % 128) / 32;
    int pm, pn;
    trr_grouped_block((int)get_group_id(0), (M + BLOCK_M - 1) / BLOCK_M, (N + BLOCK_N - 1) / BLOCK_N, GROUP_M, &pm, &pn);
    const int m0 = pm * BLOCK_M, n0 = pn * BLOCK_N;
    const uint base = smem_addr(smem_), bars = smem_addr(bars_);
#define FULL(s) (bars + (uint)(s) * 8u)
#define EMPTY(s) (bars + (uint)(STAGES + (s)) * 8u)
    const int ktiles = (K + BK - 1) / BK;
    if (tid == 0)
        for (int s = 0; s < STAGES; s++) {
            mbar_init(FULL(s), TMA ? 1u : (uint)PRODUCERS);
            mbar_init(EMPTY(s), (uint)CONSUMERS);
        }
    barrier(CLK_LOCAL_MEM_FENCE);

#if TMA
    if (tid >= CONSUMERS) {
        /* One work-item copies each slice with two TMA box loads (A's BLOCK_M rows, B's BLOCK_N rows, 64 bytes of
         * K each, 64-byte swizzled: the layout SW64 names), completing on the stage's full mbarrier by their byte
         * count; the boxes' parts outside the matrices read as zero. */
        if (tid != CONSUMERS) return;
        tma_acquire(maps);
        tma_acquire(maps + 16);
        for (int t = 0; t < ktiles; t++) {
            const int s = t % STAGES, use = t / STAGES;
            if (use > 0) mbar_wait(EMPTY(s), (uint)((use - 1) & 1));
            const uint sa = base + (uint)(s * STAGE), sb = sa + A_SLICE;
            mbar_expect(FULL(s), (uint)STAGE);
            tma_load(sa, maps, t * BK, m0, a_bstride ? (int)batch : 0, FULL(s));
            tma_load(sb, maps + 16, t * BK, n0, b_bstride ? (int)batch : 0, FULL(s));
        }
        return;
    }
#else
    if (tid >= CONSUMERS) {
        /* The producers: slice t into stage t % STAGES once the consumers released that stage's previous slice.
         * Producer q copies chunks q + PRODUCERS j of the slice (A's rows, then B's): row q / 4 + (PRODUCERS / 4) j,
         * chunk q % 4, four neighbours a row's 64 bytes. Rows past M or N and bytes past K read as zero. */
        const int q = tid - CONSUMERS;
        for (int t = 0; t < ktiles; t++) {
            const int s = t % STAGES, use = t / STAGES;
            if (use > 0) mbar_wait(EMPTY(s), (uint)((use - 1) & 1));
            const uint sa = base + (uint)(s * STAGE), sb = sa + A_SLICE;
            const int kc = t * BK + (q % 4) * 16, kn = clamp(K - kc, 0, 16);
#pragma unroll
            for (int j = 0; j < BLOCK_M / (PRODUCERS / 4); j++) {
                const int r = q / 4 + (PRODUCERS / 4) * j, n = m0 + r < M ? kn : 0;
                copy16(sa + SW64(r, q % 4), n ? a + (long)(m0 + r) * lda + kc : a, n);
            }
#pragma unroll
            for (int j = 0; j < (BLOCK_N + PRODUCERS / 4 - 1) / (PRODUCERS / 4); j++) {
                const int r = q / 4 + (PRODUCERS / 4) * j, n = n0 + r < N ? kn : 0;
                if (r < BLOCK_N) copy16(sb + SW64(r, q % 4), n ? b + (long)(n0 + r) * ldb + kc : b, n);
            }
            mbar_arrive_copies(FULL(s));
        }
        CP_WAIT(0);
        return;
    }
#endif

    /* The FP8 tensor cores keep their sums to about 14 bits, which drifts past the half outputs' bounds over a
     * long K (docs/ops.md): each slice's product goes into p from zero and is added, rounded to nearest, into the
     * f32 sums d. The add waits for the slice's wgmma (reading p while a later wgmma is in flight makes ptxas
     * serialize every wgmma: warning C7514); the warpgroups do not wait for each other, so one's wgmma runs while
     * another adds. */
    float d[NACC], p[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++) d[i] = p[i] = 0.0f;
    for (int t = 0; t < ktiles; t++) {
        const int s = t % STAGES;
        mbar_wait(FULL(s), (uint)((t / STAGES) & 1));
        /* the producer's copies (generic proxy) before this warpgroup's wgmma reads (async proxy) */
        PROXY_FENCE();
        const uint sa = base + (uint)(s * STAGE) + (uint)(wg * 64 * BK), sb = base + (uint)(s * STAGE) + A_SLICE;
        WG_FENCE();
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) {
            ulong da = wg_desc(sa + kk * 32), db = wg_desc(sb + kk * 32);
            int acc = kk;
            WG_MMA_X(BLOCK_N, p, da, db, acc);
        }
        WG_COMMIT();
        WG_WAIT0();
        mbar_arrive(EMPTY(s));
#pragma unroll
        for (int i = 0; i < NACC; i++) d[i] += p[i];
    }

    /* the epilogue over the accumulators, one straight pass per kind (matmul_mma.cl says why) */
#define EPI_PASS(F)                                                                                            \
    do {                                                                                                       \
        _Pragma("unroll") for (int i = 0; i < NACC; i++) d[i] = F(d[i]);                                        \
    } while (0)
#define EPI_SCALE(v) ((v) * scale)
    EPI_PASS(EPI_SCALE);
    EPI_APPLY(EPI_PASS);

    /* accumulator j of 8 columns: d[4j], d[4j + 1] at (lane / 4, 8j + 2·(lane % 4) + {0, 1}) of the warp's 16
     * rows, d[4j + 2], d[4j + 3] eight rows below */
    const int row = m0 + wg * 64 + warp * 16 + lane / 4, col = n0 + (lane % 4) * 2;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int gm = row + h * 8;
        if (gm >= M) continue;
        __global z_t *const p = c + (long)gm * ldc + col;
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; j++) {
            const int gn = col + j * 8;
            const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
#if Z_DT == DT_F32
            if (c_pair && gn + 1 < N) {
                *(__global float2 *)(p + j * 8) = (float2)(v0, v1);
            } else {
                if (gn < N) p[j * 8] = v0;
                if (gn + 1 < N) p[j * 8 + 1] = v1;
            }
#else
            const uint w = pack_pair(v0, v1);
            if (c_pair && gn + 1 < N) {
                *(__global uint *)(p + j * 8) = w;
            } else {
                if (gn < N) *(__global ushort *)(p + j * 8) = (ushort)w;
                if (gn + 1 < N) *(__global ushort *)(p + j * 8 + 1) = (ushort)(w >> 16);
            }
#endif
        }
    }
}
#endif
