/*
 * f16 matmul on Hopper's warpgroup tensor-core instructions (sm_90a only): C = act(A . B), f16 operands, f32
 * accumulation, f16 or f32 C. Compile-time: BM (128; 64 or 192 for 16-bit inputs in single blocks), BN (a
 * multiple of 16 from 64 to 256, at most 224 with BM 192, for 16-bit inputs in single blocks, else 128 or 256),
 * STAGES, TRANS_A (0: A is [M,K] row-major; 1: A is stored [K,M], 16-bit inputs only), TRANS_B (0: B is [K,N]
 * row-major; 1: B is stored [N,K]), DT_IN (1 f16, 2 bf16, 4 f8e4m3, 5 f8e5m2: A's
 * type for wgmma), DT_B (B's, DT_IN when not given: the 8-bit floats pair e5m2 with e4m3),
 * DT_OUT (0 f32, 1 f16, 2 bf16). Fixed: BK 128 bytes (64 16-bit or 128 8-bit elements), 128 threads a warpgroup:
 * a producer and BM / 64 consumers (384 threads at BM 128, 256 at BM 64, 512 at BM 192).
 * 8-bit floats (DT_IN 4 or 5): wgmma m64nNk32 takes both operands K-major, so TRANS_B is 1, and BN is 128 or 256;
 * every shape, swizzle and descriptor below is the same in bytes (a K step of 32 elements is 32 bytes, as 16
 * 16-bit ones are). The tensor cores keep about 14 bits when they sum FP8 products, so each stage's K tile (128
 * deep) is summed by wgmma into a partial and added into the f32 accumulator on the CUDA cores: the promotion
 * cuBLASLt makes without its fast-accumulation mode, docs/ops.md's bound for 8-bit float products. BN 128: two
 * partials alternating, so the next stage's wgmma are issued before this one's is added; ptxas serialises every
 * wgmma of such a kernel (a non-wgmma instruction reads a wgmma's accumulator while another wgmma is in flight:
 * its note C7514). BN 256: one partial of a 128-column half (64 registers beside the accumulator's 128), each
 * half's four k32 steps waited for (wait_group 0) before it is added, so no wgmma is in flight while the CUDA
 * cores read it and ptxas keeps the wgmma back to back; the tensor cores stay busy across the wait and the adds
 * with the other consumer warpgroup's wgmma. scale (scale_a * scale_b) multiplies the sum before the epilogue.
 * C_SLOTS (1 to 4): the epilogue's shared-memory box slots per consumer warpgroup: the boxes a tile stores, as many
 * of them as the ring leaves room for (backend_cuda/config_matmul.c, trr_cuda_wgmma_c_slots).
 * Requirements the host checks: compute capability 9.0, lda and ldb multiples of 8, A and B 16-byte
 * aligned (the tensor-map rules). M, N, K are arbitrary: the tensor-memory-access unit (TMA) fills the parts of
 * a box outside the matrix with zeros, so edge tiles multiply zeros and only the stores are masked.
 *
 * Warp specialisation: warpgroup 0 is the producer (one thread issues TMA copies of each K tile of A and B into
 * a ring of STAGES shared-memory stages, completion signalled on the stage's "full" mbarrier with a byte
 * count); warpgroups 1 to BM / 64 are consumers, each owning 64 rows of the tile and all BN columns in
 * registers (BN/2 f32 per thread), issuing wgmma.mma_async m64nBNk16 with both operands read from shared memory
 * through matrix descriptors, and releasing a stage on its "empty" mbarrier once the wgmma that read it are
 * done (one group in flight behind the one just issued). setmaxnreg moves registers from the producer to the
 * consumers. ptxas still fits each wgmma's operands in the registers a thread has at launch (128 at 512
 * threads): BM 192 past 192 columns (208 or 224) issues a K step as two instructions, m64n192 and m64n16 or n32
 * into the accumulator's last registers (N_TAIL, below), each of whose operands fit.
 *
 * Shared-memory layouts (TMA with 128-byte swizzle: 16-byte chunk c of 128-byte row r lands at chunk c ^ (r%8),
 * each stage 1024-byte aligned):
 *   A stage: [BM m][64 k], K-major: descriptor SBO 1024 (8-row groups), LBO unused; k step kk at +32 bytes.
 *   A, TRANS_A 1: BM/64 boxes of [64 k][64 m], M-major (imm-trans-a 1), one a consumer warpgroup: descriptor
 *   SBO 1024 (from 8 k rows to the next 8), LBO unused (64 rows are one box); k step kk at +2048.
 *   B, TRANS_B 1: [BN n][64 k], K-major, like A.
 *   B, TRANS_B 0: ceil(BN/64) boxes of [64 k][64 n], N-major ("transposed" for wgmma, imm-trans-b 1): descriptor
 *   LBO = 8192 (from one 64-column box to the next), SBO = 1024 (from 8 k rows to the next 8); k step kk at
 *   +2048. A width of 64q + 16 or 64q + 32 (B_TAIL) takes its last 16 or 32 columns as one box of [64 k][B_TAIL
 *   n] under the 32- or 64-byte swizzle (rows of B_TAIL * 2 bytes, the swizzle's span), after the whole boxes,
 *   read by an m64n<B_TAIL> instruction of its own into the accumulator's last B_TAIL / 2 registers (the
 *   fragment of one m64nBN instruction, column groups in order): descriptor SBO = 16 * B_TAIL (8 k rows), LBO
 *   unused (one atom wide); k step kk at +32 * B_TAIL. The stage then loads the columns the tile reads, where a
 *   whole last box would load up to twice the tail (the bytes a stage loads set a K step's time at small grids:
 *   docs/performance.md). Other widths load their last box whole and the instruction reads BN columns of the
 *   boxes (narrower boxes throughout, under the 64- or 32-byte swizzle, ran slower).
 * Block order is grouped (GROUP_M, a run-time argument).
 *
 * Epilogue (fused activation, rounding to C's type): with c_tma set (the host checks that C's base, row stride
 * and batch stride are 16-byte multiples, the tensor-map rules), each consumer warpgroup writes its 64 x BN
 * part of the tile into shared memory in boxes of 64 rows x 128 bytes (the TMA's 128-byte swizzle; columns
 * past the last whole box, a width that is not a multiple of 128 bytes, are stored directly as below), and one
 * thread sends each box to global memory with a TMA store, which clips at C's rank-3 bounds (rows, columns,
 * matrix of the batch): the stores leave as whole 128-byte lines, asynchronously, and the warpgroup goes back
 * to its next tile's wgmma at once. The boxes take C_SLOTS slots (at most a tile's worth) in turn; before a slot
 * is rewritten, the store that last read it must have finished reading (cp.async.bulk.wait_group.read), a wait
 * placed at the last barrier before the rewrite, so it falls on the oldest store it can. Without c_tma each
 * thread stores its accumulator pairs to global memory directly, masked at the edges.
 *
 * Persistent: the grid holds one block per SM (or fewer when there are fewer tiles), and block b takes output
 * tiles b, b + gridDim.x, ... over every matrix of the batch. The ring's stage and phase count K tiles across a
 * block's output tiles, so the producer loads the next tile's first stages while the consumers store this one:
 * for short K (batched attention products) the stores and loads overlap instead of alternating. ptxas keeps the
 * ring's positions and the wgmma descriptors in uniform registers only while the tile loop stays this simple: a
 * second phase in the same loop (stream-K pieces after the whole tiles) moved them to
 * per-thread registers, an R2UR before every HGMMA, and the kernel ran markedly slower. Check the machine code (nvdisasm) after changing the loop.
 *
 * CLUSTER_M (1 or 2; the host's block_m 256 is 2): with 2, blocks run in clusters of two along M, each block
 * still computing 128 rows, the pair a 256 x BN output tile that shares its B tile. Each block's producer loads
 * its own A and half of B, the half multicast to both blocks of the pair, so B crosses from L2 once per pair
 * instead of twice (the card runs at its power cap here: fewer L2-to-SM bytes per FLOP). Every block's full
 * barrier therefore expects A's bytes and all of B's: its own half and the peer's land at the same offsets and
 * complete on the barrier at the same address in both blocks. A stage is refilled only once the consumers of
 * both blocks are done with it, since the peer's multicast writes into it too: one lane per consumer warp
 * arrives on each block's empty barrier (its count: 2 warpgroups x 4 warps x 2 blocks). Cluster c takes pair
 * tiles c, c + gridDim.x / 2, ... (grouped order over pairs, never straddling two matrices of a batch); the
 * block of rank r computes m-tile 2p + r. With an odd number of m-tiles the last pair's second block loads no
 * A, still takes its share of B and releases its stages, and stores nothing. Cluster barriers after the
 * barriers' initialisation (before any remote arrive or multicast can reach them) and before exit (so that no
 * block leaves while its peer may still write into its shared memory or arrive on its barriers).
 *
 * SPLIT_K (0 or 1; splits, a run-time argument, when 1): split-K for grids too small to fill the SMs. Work item
 * `tile` covers output tile tile % (tiles of a matrix) of matrix zc = tile / (tiles of a matrix), where zc =
 * z * splits + split: the split's K tiles [split * kper, split * kper + kper) clipped at K (kper = the K tiles
 * over splits, rounded up; a split past K is empty and stores zeros). DT_OUT is then 0 and C is the host's f32
 * workspace of batch x splits matrices [M, N] (row stride N, matrix zc at zc * c_bs); the host passes epi 0 and
 * scale 1 here, and matmul_reduce.cu sums the splits in order and applies scale, the epilogue and C's type. The
 * split only changes which K tiles a work item loads and where it stores: the ring, the barriers and the
 * epilogue are the ones above. With SPLIT_K 0 the work item is the output tile itself, so the loop stays the
 * plain one that the note on uniform registers above asks for.
 *
 * STREAM_K (0 or 1; 16-bit inputs, CLUSTER_M 1, SPLIT_K 0): the grid's last waves balanced over the blocks
 * (stream-K), for tile counts that leave part of the last wave idle. With G blocks and T tiles, T % G != 0, the
 * first max(T / G - 1, 0) waves are whole tiles as above (block b: tiles b, b + G, ...); the remaining tiles'
 * K tiles, laid end to end (tile by tile), are cut into G equal runs, block b taking run b after its whole
 * tiles. A run starts and ends at any K tile, so a tile may be summed in pieces by consecutive blocks. The block
 * whose piece starts at the tile's K tile 0 (always that tile's lower block) owns it: each other piece is its
 * block's first (every later piece of a run starts a tile), stored as f32 registers into the block's slot of
 * sk_ws (one per consumer warpgroup, in the accumulator's register order: coalesced, no layout to agree on
 * beyond that) and flagged ready in sk_flags; the owner, on reaching the end of its own piece, waits for the
 * flags of the blocks after it whose runs start inside the tile, adds their slots in block order (a fixed order:
 * the result does not depend on timing) and runs the epilogue. A block only waits after it has flagged its own
 * piece, and only for blocks after it, and every block of the persistent grid is resident, so the waits end.
 * The owner sets each flag back to 0, as the host's zeroed counters must read at the next launch. The loop over
 * work items is an instantiation of its own (the plain loop stays the one the note above asks for).
 */
#include "hopper.cuh"

#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef SPLIT_K
#define SPLIT_K 0
#endif
#ifndef STREAM_K
#define STREAM_K 0
#endif
#ifndef DT_B
#define DT_B DT_IN
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#define F8 (DT_IN >= 4)
#if TRANS_A && F8
#error "matmul_wgmma: 8-bit floats take A row-major [M,K] (TRANS_A 0)"
#endif
#if STREAM_K && (DT_IN >= 4 || CLUSTER_M != 1 || SPLIT_K)
#error "matmul_wgmma: STREAM_K takes 16-bit inputs, CLUSTER_M 1 and SPLIT_K 0"
#endif
#ifndef BM
#define BM 128
#endif
/* 64 rows: one consumer warpgroup, for grids of too few 128-row tiles to fill the SMs (small products); 192
 * rows: three, for the tile counts between 128-row tiles' waves */
#if (BM != 64 && BM != 128 && BM != 192) || (BM != 128 && (CLUSTER_M != 1 || F8))
#error "matmul_wgmma: BM is 128, or 64 or 192 for 16-bit inputs in single blocks"
#endif
#define NCONS (BM / 64) /* consumer warpgroups, 64 rows each */
#define ES (F8 ? 1 : 2)
#define BK (128 / ES)
#define WG_THREADS (128 * (1 + NCONS))
#define A_STAGE_BYTES (BM * 128)
/* B [K,N]: the narrow last box (above), where the width takes one (B_TAIL columns). A K step's instructions: one
 * m64nBN, or a main one of N_MAIN columns and a tail one of N_TAIL, for B's narrow box or for BM 192's registers
 * (above). Literals: the instructions' names are pasted from them. */
#if !TRANS_B && BN % 64 == 16
#define B_TAIL 16
#elif !TRANS_B && BN % 64 == 32
#define B_TAIL 32
#else
#define B_TAIL 0
#endif
#if B_TAIL
#define N_TAIL B_TAIL
#elif BM == 192 && BN == 208
#define N_TAIL 16
#elif BM == 192 && BN == 224
#define N_TAIL 32
#else
#define N_TAIL 0
#endif
#if N_TAIL && BN < 128
#define N_MAIN 64
#elif N_TAIL && BN < 192
#define N_MAIN 128
#elif N_TAIL
#define N_MAIN 192
#else
#define N_MAIN BN
#endif
#define B_MAIN_BOXES ((N_MAIN + 63) / 64)
/* B's columns a stage holds: BN stored [N,K] (one box of BN rows), else whole 64-column boxes and the tail (below);
 * backend_cuda/config_matmul.c (trr_cuda_wgmma_b_stage_cols) sizes the ring alike */
#define B_LOAD_COLS (TRANS_B ? BN : B_MAIN_BOXES * 64 + B_TAIL)
#define B_STAGE_BYTES (B_LOAD_COLS * 128)
#if F8 && (!TRANS_B || (BN != 128 && BN != 256))
#error "matmul_wgmma: 8-bit floats take B stored [N,K] (TRANS_B 1) and BN 128 or 256"
#endif
/* Widths other than 128 and 256 give the tile counts between theirs, for sizes whose waves neither fills
 * (config_matmul.c, wave_cost); a cluster's B halves must be whole 64-column boxes */
#if BN % 16 || BN < 64 || BN > 256 || ((CLUSTER_M != 1 || F8) && BN != 128 && BN != 256) || (BM == 192 && BN > 224)
#error "matmul_wgmma: BN is a multiple of 16 from 64 to 256 (16-bit, single blocks; at most 224 with BM 192), or 128 or 256"
#endif
/* setmaxnreg: the producer's registers and the consumers', so that all fit the 64K-register file */
#if NCONS == 3
#define PRODUCER_REGS 24
#define CONSUMER_REGS 160
#else
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232
#endif
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define NACC (BN / 2)
/* the epilogue's TMA-store boxes: 64 rows x 128 bytes (the 128-byte swizzle's span), the tile's whole boxes;
 * the columns past them (C_REM_COLS) are stored directly */
#define TO_BYTES (DT_OUT == 0 ? 4 : 2)
#define C_BOX_COLS (128 / TO_BYTES)
#define C_BOXES (BN / C_BOX_COLS)
#define C_REM_COLS (BN - C_BOXES * C_BOX_COLS)
#define C_BOX_BYTES (64 * 128)
/* Slots in use: a tile's worth of boxes if that fits in C_SLOTS, else as many as fit and divide C_BOXES, else
 * C_SLOTS. Box b of a tile takes slot (c_run + b) % C_NS, the numbering running on across tiles: c_run counts
 * the boxes before the tile, modulo C_NS, and is 0 at every tile where C_NS divides C_BOXES (C_RUN 0). The waits
 * below keep C_NS - 1 stores in flight while the next box is written. */
#if C_BOXES <= C_SLOTS
#define C_NS C_BOXES
#elif C_BOXES % C_SLOTS == 0
#define C_NS C_SLOTS
#elif C_BOXES % 3 == 0 && C_SLOTS >= 3
#define C_NS 3
#else
#define C_NS C_SLOTS
#endif
#define C_RUN (C_BOXES % C_NS != 0)

typedef trr_dt<DT_OUT>::type TO;
static_assert(sizeof(TO) == TO_BYTES, "DT_OUT's size");

/* A's K tile of the output tile at row m0 into its stage at dst: one box of [BM m][64 k] (A [M,K]), or BM/64 boxes
 * of [64 k][64 m], one a consumer warpgroup (A stored [K,M]). */
__device__ __forceinline__ void wg_load_a(unsigned dst, const trr_tensor_map *map, int k0, int m0, int z,
                                          unsigned bar) {
#if TRANS_A
#pragma unroll
    for (int j = 0; j < BM / 64; j++) trr_tma_load_3d(dst + j * (64 * 128), map, m0 + 64 * j, k0, z, bar);
#else
    trr_tma_load_3d(dst, map, k0, m0, z, bar);
#endif
}

#if CLUSTER_M == 2
/* The same TMA load, multicast: the box lands at dst and completes on bar at the same offsets in every block of
 * the cluster named in mask. */
__device__ __forceinline__ void wg_tma_3d_mc(unsigned dst, const trr_tensor_map *map, int c0, int c1, int c2,
                                             unsigned bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
                 : "memory");
}

/* Every thread of both blocks: release orders what came before (the barriers' init, the last remote arrives)
 * before what the peer does after its wait. */
__device__ __forceinline__ void wg_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}

__device__ __forceinline__ unsigned wg_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
#endif

/* A consumer warp is done with a stage (its wgmma that read it have completed). */
__device__ __forceinline__ void wg_release(unsigned bar, int lane) {
#if CLUSTER_M == 2
    /* lane r arrives for its warp on block r's barrier (wgmma.wait_group is warp-synchronous: the whole warp is
     * past it). The default .release.cta suffices: the stage was read by wgmma, which wait_group has completed,
     * and is next written by TMA, neither ordered by a memory fence. (.release.cluster compiles to a MEMBAR.GPU
     * per stage on the consumers' path, which costs about a fifth of the throughput.) */
    if (lane < CLUSTER_M) {
        unsigned remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(lane));
        asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
    }
#else
    (void)lane;
    trr_mbar_arrive(bar);
#endif
}

/* The instruction's shape, its operand types and its tail: the 16-bit forms take the transpose immediates (A's
 * is TRANS_A, B's TRANS_B's complement), the 8-bit ones none (both operands K-major). */
#if F8
#define WG_K "k32"
#define WG_TAIL ""
#elif TRANS_A && TRANS_B
#define WG_K "k16"
#define WG_TAIL ", 1, 0"
#elif TRANS_A
#define WG_K "k16"
#define WG_TAIL ", 1, 1"
#elif TRANS_B
#define WG_K "k16"
#define WG_TAIL ", 0, 0"
#else
#define WG_K "k16"
#define WG_TAIL ", 0, 1"
#endif
#if F8 && DT_IN == 5
#define WG_AS "e5m2"
#elif F8
#define WG_AS "e4m3"
#elif DT_IN == 2
#define WG_AS "bf16"
#else
#define WG_AS "f16"
#endif
#if F8 && DT_B == 5
#define WG_BS "e5m2"
#elif F8
#define WG_BS "e4m3"
#else
#define WG_BS WG_AS
#endif

/* D[64 x n] (+)= A (smem, K-major) . B (smem, K-major where TRANS_B, else N-major), f32 accumulate; accumulate 0
 * writes D = A . B (the first K step of an 8-bit float stage's partial). */
#if F8
TRR_WG_SS_FN(wg_mma_n128, 128, WG_K, WG_AS, WG_BS, ", 1, 1" WG_TAIL) /* 8-bit floats: a 128-column partial */
#elif N_TAIL
TRR_WG_SS_FN(wg_mma_main, N_MAIN, WG_K, WG_AS, WG_BS, ", 1, 1" WG_TAIL) /* 16-bit: the tile's first N_MAIN columns */
TRR_WG_SS_FN(wg_mma_tail, N_TAIL, WG_K, WG_AS, WG_BS, ", 1, 1" WG_TAIL) /* and its last N_TAIL */
#else
TRR_WG_SS_FN(wg_mma_bn, BN, WG_K, WG_AS, WG_BS, ", 1, 1" WG_TAIL) /* 16-bit: the tile's width */
#endif

#if F8 && BN == 256
/* An 8-bit float stage of a 256-wide tile, one partial: waits for ring position it; for each 128-column half of
 * B's tile, issues the K tile's four k32 steps into part (the first writes it), waits for them (no wgmma left in
 * flight, so ptxas keeps the wgmma of a group back to back) and adds part into that half of acc. The stage is
 * released once its last wgmma are done, unless it is the tile's last (released after the tile's loop). */
__device__ __forceinline__ void wg_f8_stage_one(float *acc, float *part, unsigned ring, unsigned full0,
                                                unsigned empty0, unsigned it, int c, int lane, bool release) {
    const unsigned s = it % STAGES;
    trr_mbar_wait(full0 + 8 * s, (it / STAGES) & 1u);
    const unsigned a_st = ring + s * STAGE_BYTES + c * (64 * 128), b_st = ring + s * STAGE_BYTES + A_STAGE_BYTES;
#pragma unroll
    for (int h = 0; h < BN / 128; h++) {
        trr_wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            wg_mma_n128(part, trr_wg_desc(a_st + kk * 32, 16, 1024),
                        trr_wg_desc(b_st + h * (128 * 128) + kk * 32, 16, 1024), kk > 0);
        trr_wg_commit();
        trr_wg_wait<0>();
        trr_pin<64>(part);
        if (h == BN / 128 - 1 && release) wg_release(empty0 + 8 * s, lane);
#pragma unroll
        for (int i = 0; i < 64; i++) acc[64 * h + i] += part[i];
    }
}
#elif F8
/* An 8-bit float stage: waits for ring position it, then issues its K tile's four k32 steps into part (the first
 * writes it, the rest add) and commits them as one group. */
__device__ __forceinline__ void wg_f8_stage(float *part, unsigned ring, unsigned full0, unsigned it, int c) {
    const unsigned s = it % STAGES;
    trr_mbar_wait(full0 + 8 * s, (it / STAGES) & 1u);
    const unsigned a_st = ring + s * STAGE_BYTES + c * (64 * 128), b_st = ring + s * STAGE_BYTES + A_STAGE_BYTES;
    trr_wg_fence();
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
        wg_mma_n128(part, trr_wg_desc(a_st + kk * 32, 16, 1024), trr_wg_desc(b_st + kk * 32, 16, 1024), kk > 0);
    trr_wg_commit();
}

/* Once one group is left in flight (the one just issued), the partial of ring position it is complete: it is
 * added into acc in f32 and that stage is released. */
__device__ __forceinline__ void wg_f8_promote(float *acc, float *part, unsigned empty0, unsigned it, int lane) {
    trr_wg_wait<1>();
    trr_pin<NACC>(part);
#pragma unroll
    for (int i = 0; i < NACC; i++) acc[i] += part[i];
    wg_release(empty0 + 8 * (it % STAGES), lane);
}
#endif

/* The accumulator's 8-column groups from J0 to the tile's last to C from registers (this thread's rows row and
 * row + 8, its pairs from column col), masked at the edges. */
template <int J0>
__device__ __forceinline__ void wg_store_direct(TO *Cz, long long ldc, int row, int col, int M, int N, const float *acc,
                                                int epi, float alpha, bool pair_ok) {
#pragma unroll
    for (int j = J0; j < BN / 8; j++) {
        trr_store_pair(Cz, ldc, row, col + 8 * j, M, N, trr_epilogue(acc[4 * j], epi, alpha),
                       trr_epilogue(acc[4 * j + 1], epi, alpha), pair_ok);
        trr_store_pair(Cz, ldc, row + 8, col + 8 * j, M, N, trr_epilogue(acc[4 * j + 2], epi, alpha),
                       trr_epilogue(acc[4 * j + 3], epi, alpha), pair_ok);
    }
}

/* Work item `tile` of a persistent block: its output tile (pp, pn) of matrix z, the K tiles [kt0, kt0 + nk) it
 * sums, and zc, the matrix of C (under SPLIT_K, of the workspace) it stores to. */
__device__ __forceinline__ void wg_work(int tile, int npp, int npn, int group_m, int kt_count, int splits, int kper,
                                        int *pp, int *pn, int *z, int *zc, int *kt0, int *nk) {
    const int zz = tile / (npp * npn);
    trr_grouped_block(tile - zz * npp * npn, npp, npn, group_m, pp, pn);
    *zc = zz;
#if SPLIT_K
    const int split = zz % splits;
    *z = zz / splits;
    *kt0 = split * kper;
    const int left = kt_count - *kt0;
    *nk = left < 0 ? 0 : left < kper ? left : kper;
#else
    (void)splits;
    (void)kper;
    *z = zz;
    *kt0 = 0;
    *nk = kt_count;
#endif
}

#if STREAM_K
/* The stream-K plan (the comment at the top) of T tiles over G blocks: dp whole-tile waves, then sk_iters K
 * tiles of the rest laid end to end. With no part wave (or no K to split) every tile is whole: dp waves, the
 * last part-filled one ending at T. */
__device__ __forceinline__ void wg_sk_plan(int tiles, int kt_count, int g, int *dp, int *sk_iters) {
    const int waves = tiles / g, rem = tiles - waves * g;
    if (rem == 0 || kt_count == 0) {
        *dp = waves + (rem > 0);
        *sk_iters = 0;
    } else {
        *dp = waves > 0 ? waves - 1 : 0;
        *sk_iters = (tiles - *dp * g) * kt_count;
    }
}

/* Where block b's run of the split K tiles starts (b = G: where the last one ends). */
__device__ __forceinline__ int wg_sk_bound(int sk_iters, int b, int g) { return (int)((long long)sk_iters * b / g); }

/* Work item i of block cl: whole tile cl + i * G while i < dp, then the pieces of its run from *pos (advanced
 * past the piece) to end: tile, first K tile and count. 0 once the block has no work left. */
__device__ __forceinline__ int wg_sk_item(int i, int dp, int cl, int g, int tiles, int kt_count, int end, int *pos,
                                          int *tile, int *kt0, int *nk) {
    if (i < dp) {
        *tile = cl + i * g;
        *kt0 = 0;
        *nk = kt_count;
        return *tile < tiles;
    }
    if (*pos >= end) return 0;
    const int q = *pos / kt_count;
    *tile = dp * g + q;
    *kt0 = *pos - q * kt_count;
    const int left = kt_count - *kt0, run = end - *pos;
    *nk = left < run ? left : run;
    *pos += *nk;
    return 1;
}
#endif

extern "C" __global__ void __launch_bounds__(WG_THREADS, 1)
#if CLUSTER_M == 2
    __cluster_dims__(2, 1, 1)
#endif
    matmul_wgmma(const __grid_constant__ trr_tensor_map tma, const __grid_constant__ trr_tensor_map tmb,
                 const __grid_constant__ trr_tensor_map tmb_tail, const __grid_constant__ trr_tensor_map tmc,
                 int c_tma, TO *C, long long ldc, int M, int N, int K, int epi, float alpha, int group_m,
                 long long c_bs, int a_batched, int b_batched, int batch, float scale, int splits
#if STREAM_K
                 ,
                 float *sk_ws, unsigned *sk_flags
#endif
                 ) {
    extern __shared__ unsigned char wg_smem[];
    __shared__ __align__(8) unsigned long long full_bar[STAGES], empty_bar[STAGES];
    /* 128-byte swizzle atoms repeat every 1024 bytes: the ring starts on such a boundary (the host adds 1 KB). */
    const unsigned ring = (trr_smem_addr(wg_smem) + 1023u) & ~1023u;
    const unsigned full0 = trr_smem_addr(full_bar), empty0 = trr_smem_addr(empty_bar);

    const int tid = threadIdx.x, wg = tid >> 7;
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++) {
            trr_mbar_init(full0 + 8 * s, 1);
#if CLUSTER_M == 2
            trr_mbar_init(empty0 + 8 * s, NCONS * 4 * CLUSTER_M);
#else
            trr_mbar_init(empty0 + 8 * s, NCONS * 128);
#endif
        }
        trr_mbar_init_fence();
    }
#if CLUSTER_M == 2
    wg_cluster_sync();
    const int rank = (int)wg_cluster_rank(), cl = blockIdx.x >> 1, ncl = gridDim.x >> 1;
#else
    __syncthreads();
    const int rank = 0, cl = blockIdx.x, ncl = gridDim.x;
#endif

    /* tiles of CLUSTER_M x 1 m-tiles (npp rows of them), one per cluster at a time */
    const int npm = (M + BM - 1) / BM, npn = (N + BN - 1) / BN, kt_count = (K + BK - 1) / BK;
    const int npp = (npm + CLUSTER_M - 1) / CLUSTER_M;
#if SPLIT_K
    const int tiles = npp * npn * batch * splits, kper = (kt_count + splits - 1) / splits;
#else
    const int tiles = npp * npn * batch, kper = kt_count;
#endif
#if STREAM_K
    int sk_dp, sk_iters;
    wg_sk_plan(tiles, kt_count, ncl, &sk_dp, &sk_iters);
    const int sk_end = wg_sk_bound(sk_iters, cl + 1, ncl);
#endif

    if (wg == 0) {
        /* producer */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (tid == 0) {
            trr_prefetch_map(&tma);
            trr_prefetch_map(&tmb);
            if (B_TAIL) trr_prefetch_map(&tmb_tail);
            unsigned it = 0; /* K tiles issued by this block over all its output tiles: the ring's position */
#if STREAM_K
            int tile, sk_kt0, sk_nk;
            for (int i = 0, pos = wg_sk_bound(sk_iters, cl, ncl);
                 wg_sk_item(i, sk_dp, cl, ncl, tiles, kt_count, sk_end, &pos, &tile, &sk_kt0, &sk_nk); i++) {
                int pp, pn, z, zc, kt0, nk;
                wg_work(tile, npp, npn, group_m, kt_count, splits, kper, &pp, &pn, &z, &zc, &kt0, &nk);
                kt0 = sk_kt0;
                nk = sk_nk;
#else
            for (int tile = cl; tile < tiles; tile += ncl) {
                int pp, pn, z, zc, kt0, nk;
                wg_work(tile, npp, npn, group_m, kt_count, splits, kper, &pp, &pn, &z, &zc, &kt0, &nk);
#endif
                const int m0 = (pp * CLUSTER_M + rank) * BM, n0 = pn * BN, za = z * a_batched, zb = z * b_batched;
                for (int kt = kt0; kt < kt0 + nk; kt++, it++) {
                    const unsigned s = it % STAGES;
                    if (it >= STAGES) trr_mbar_wait(empty0 + 8 * s, ((it / STAGES) - 1) & 1u);
                    const unsigned fb = full0 + 8 * s;
                    const unsigned a_dst = ring + s * STAGE_BYTES, b_dst = a_dst + A_STAGE_BYTES;
                    const int k0 = kt * BK;
#if CLUSTER_M == 2
                    /* an m-tile past M (odd count) loads no A but still takes its share of B for the peer */
                    const bool has_a = m0 < M;
                    trr_mbar_expect(fb, has_a ? STAGE_BYTES : B_STAGE_BYTES);
                    if (has_a) wg_load_a(a_dst, &tma, k0, m0, za, fb);
#if TRANS_B
                    /* tmb's box is BN/2 rows of B [N,K]: this block's half */
                    wg_tma_3d_mc(b_dst + rank * (B_STAGE_BYTES / 2), &tmb, k0, n0 + rank * (BN / 2), zb, fb, 3);
#else
#pragma unroll
                    for (int j = rank * (BN / 128); j < (rank + 1) * (BN / 128); j++)
                        wg_tma_3d_mc(b_dst + j * (64 * 128), &tmb, n0 + 64 * j, k0, zb, fb, 3);
#endif
#else
                    trr_mbar_expect(fb, STAGE_BYTES);
                    wg_load_a(a_dst, &tma, k0, m0, za, fb);
#if TRANS_B
                    trr_tma_load_3d(b_dst, &tmb, k0, n0, zb, fb);
#else
#pragma unroll
                    for (int j = 0; j < B_MAIN_BOXES; j++)
                        trr_tma_load_3d(b_dst + j * (64 * 128), &tmb, n0 + 64 * j, k0, zb, fb);
                    if (B_TAIL)
                        trr_tma_load_3d(b_dst + B_MAIN_BOXES * (64 * 128), &tmb_tail, n0 + N_MAIN, k0, zb, fb);
#endif
#endif
                }
            }
        }
    } else {
        /* consumers: warpgroup c owns rows c*64 .. c*64+63 of the tile */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int c = wg - 1;
        const int t = tid & 127, lane = t & 31, warp = t >> 5;
        /* this warpgroup's epilogue box slots, after the ring (1024-byte aligned: swizzle atoms) */
        const unsigned c_slots = ring + STAGES * STAGE_BYTES + c * (C_SLOTS * C_BOX_BYTES);
        unsigned char *const c_slots_p = wg_smem + (c_slots - trr_smem_addr(wg_smem));
        if (c_tma && t == 0) trr_prefetch_map(&tmc);
        unsigned it = 0;
        int c_run = 0; /* the store boxes before this tile, modulo C_NS (C_RUN) */
#if STREAM_K
        int tile, sk_kt0, sk_nk;
        for (int i = 0, pos = wg_sk_bound(sk_iters, cl, ncl);
             wg_sk_item(i, sk_dp, cl, ncl, tiles, kt_count, sk_end, &pos, &tile, &sk_kt0, &sk_nk); i++) {
            int pp, pn, z, zc, kt0, nk;
            wg_work(tile, npp, npn, group_m, kt_count, splits, kper, &pp, &pn, &z, &zc, &kt0, &nk);
            kt0 = sk_kt0;
            nk = sk_nk;
#else
        for (int tile = cl; tile < tiles; tile += ncl) {
            int pp, pn, z, zc, kt0, nk;
            wg_work(tile, npp, npn, group_m, kt_count, splits, kper, &pp, &pn, &z, &zc, &kt0, &nk);
#endif
            (void)z;
            (void)kt0;
            const int m0 = (pp * CLUSTER_M + rank) * BM, n0 = pn * BN;
            float acc[NACC];
#pragma unroll
            for (int i = 0; i < NACC; i++) acc[i] = 0.0f;

#if F8 && BN == 256
            /* Each stage's 128-deep K tile, half a tile's width at a time, into one partial added into acc */
            float part[64];
#pragma unroll
            for (int i = 0; i < 64; i++) part[i] = 0.0f; /* wgmma overwrites it; never read unset */
            for (int kt = 0; kt < nk; kt++, it++) wg_f8_stage_one(acc, part, ring, full0, empty0, it, c, lane, kt + 1 < nk);
#pragma unroll
            for (int i = 0; i < NACC; i++) acc[i] *= scale;
            /* the tile's last stage is released below, as the 16-bit path's is */
#elif F8
            /* Each stage's 128-deep K tile into a partial of its own, tile kt into part[kt % 2]: while its wgmma
             * run, the other partial (tile kt - 1, done once one group is left in flight) is added into acc and
             * its stage released. The loop takes two tiles a turn so each partial stays in registers. */
            float part0[NACC], part1[NACC];
#pragma unroll
            for (int i = 0; i < NACC; i++) part0[i] = part1[i] = 0.0f; /* wgmma overwrites them; never read unset */
            int kt = 0;
            for (; kt + 1 < nk; kt += 2, it += 2) {
                wg_f8_stage(part0, ring, full0, it, c);
                if (kt > 0) wg_f8_promote(acc, part1, empty0, it - 1, lane);
                wg_f8_stage(part1, ring, full0, it + 1, c);
                wg_f8_promote(acc, part0, empty0, it, lane);
            }
            if (kt < nk) { /* an odd count: the last tile into part0 */
                wg_f8_stage(part0, ring, full0, it, c);
                if (kt > 0) wg_f8_promote(acc, part1, empty0, it - 1, lane);
                trr_wg_wait<0>();
                trr_pin<NACC>(part0);
#pragma unroll
                for (int i = 0; i < NACC; i++) acc[i] += part0[i];
                it++;
            } else if (nk > 0) {
                trr_wg_wait<0>();
                trr_pin<NACC>(part1);
#pragma unroll
                for (int i = 0; i < NACC; i++) acc[i] += part1[i];
            }
#pragma unroll
            for (int i = 0; i < NACC; i++) acc[i] *= scale;
            /* the tile's last stage is released below, as the 16-bit path's is */
#else
            for (int kt = 0; kt < nk; kt++, it++) {
                const unsigned s = it % STAGES;
                trr_mbar_wait(full0 + 8 * s, (it / STAGES) & 1u);
                const unsigned a_st = ring + s * STAGE_BYTES + c * (64 * 128), b_st = ring + s * STAGE_BYTES + A_STAGE_BYTES;
                trr_wg_fence();
#pragma unroll
                for (int kk = 0; kk < 4; kk++) { /* 32 bytes of K a step */
#if TRANS_A
                    unsigned long long da = trr_wg_desc(a_st + kk * (16 * 128), 64 * 128, 1024);
#else
                    unsigned long long da = trr_wg_desc(a_st + kk * 32, 16, 1024);
#endif
#if TRANS_B
                    unsigned long long db = trr_wg_desc(b_st + kk * 32, 16, 1024);
#else
                    unsigned long long db = trr_wg_desc(b_st + kk * (16 * 128), 64 * 128, 1024);
#endif
#if B_TAIL
                    const unsigned bt_st = b_st + B_MAIN_BOXES * (64 * 128);
                    wg_mma_main(acc, da, db, 1);
                    const unsigned long long dbt = trr_wg_desc_layout(bt_st + kk * (32 * B_TAIL), 64 * 2 * B_TAIL,
                                                                      16 * B_TAIL, B_TAIL == 16 ? 3 : 2);
                    wg_mma_tail(acc + N_MAIN / 2, da, dbt, 1);
#elif N_TAIL /* B stored [N,K]: the tail's rows follow the main's in the same K-major box */
                    wg_mma_main(acc, da, db, 1);
                    wg_mma_tail(acc + N_MAIN / 2, da, trr_wg_desc(b_st + N_MAIN * 128 + kk * 32, 16, 1024), 1);
#else
                    wg_mma_bn(acc, da, db, 1);
#endif
                }
                trr_wg_commit();
                /* the group of the previous K tile is done: its stage may be refilled */
                trr_wg_wait<1>();
                trr_pin<NACC>(acc);
                if (kt > 0) wg_release(empty0 + 8 * ((it - 1) % STAGES), lane);
            }
            (void)scale;
#endif
            trr_wg_wait<0>();
            trr_pin<NACC>(acc);
            /* the tile's last stage is free: the producer fills it for the next tile while this one is stored */
            if (nk > 0) wg_release(empty0 + 8 * ((it - 1) % STAGES), lane);
#if CLUSTER_M == 2
            if (m0 >= M) continue; /* the odd m-tile past M: nothing to store */
#endif
#if STREAM_K
            if (kt0 > 0) {
                /* a piece the tile's owner adds: into this block's slot, in register order, then flagged */
                float *slot = sk_ws + (size_t)(NCONS * cl + c) * (NACC * 128);
#pragma unroll
                for (int i = 0; i < NACC; i++) __stcg(slot + i * 128 + t, acc[i]);
                asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
                if (t == 0) {
                    __threadfence();
                    atomicExch(sk_flags + NCONS * cl + c, 1u);
                }
                continue;
            }
            if (nk < kt_count) {
                /* the owner of a tile in pieces: the later blocks whose runs start inside it hold the rest */
                const int tile_end = (tile - sk_dp * ncl + 1) * kt_count;
                for (int b2 = cl + 1; b2 < ncl; b2++) {
                    const int start = wg_sk_bound(sk_iters, b2, ncl);
                    if (start >= tile_end) break;
                    if (wg_sk_bound(sk_iters, b2 + 1, ncl) == start) continue; /* an empty run: no piece */
                    unsigned *flag = sk_flags + NCONS * b2 + c;
                    if (t == 0) {
                        unsigned ready = 0;
                        do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(ready) : "l"(flag) : "memory");
                        while (!ready);
                        *(volatile unsigned *)flag = 0u;
                    }
                    asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
                    const float *slot = sk_ws + (size_t)(NCONS * b2 + c) * (NACC * 128);
#pragma unroll
                    for (int i = 0; i < NACC; i++) acc[i] += __ldcg(slot + i * 128 + t);
                }
            }
#endif

            /* Accumulator layout of m64nNk16: thread t of the warpgroup holds, for each 8-column group j, (row
             * 16*(t/32) + (t%32)/4, cols 8j + 2(t%4) + {0,1}) in acc[4j], acc[4j+1] and the same columns 8 rows
             * lower in acc[4j+2], acc[4j+3]. */
            const int r = warp * 16 + (lane >> 2); /* row within the warpgroup's 64; r + 8 has the same r % 8 */
            TO *const Cz = C + (long long)zc * c_bs;
            const int row = m0 + c * 64 + r;
            const bool pair_ok = (ldc & 1) == 0 && (((unsigned long long)Cz) & (2 * sizeof(TO) - 1)) == 0;
            if (c_tma) {
                /* Box b goes to slot b % C_NS; the boxes before it are numbered on across tiles. Box 0's slot was
                 * last read by the store C_NS boxes back, leaving C_NS - 1 newer ones that may still read. */
                if (t == 0) asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(C_NS - 1) : "memory");
                asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
#pragma unroll
                for (int b = 0; b < C_BOXES; b++) {
                    const int sl = C_RUN ? (c_run + b) % C_NS : b % C_NS;
                    unsigned char *slot = c_slots_p + sl * C_BOX_BYTES;
#pragma unroll
                    for (int j = b * (C_BOX_COLS / 8); j < (b + 1) * (C_BOX_COLS / 8); j++) {
                        /* byte offset of the pair in its 128-byte box row, then the swizzle: 16-byte chunk ^ row % 8 */
                        const int cb = ((8 * j) % C_BOX_COLS + 2 * (lane & 3)) * (int)sizeof(TO);
                        const int off = (((cb >> 4) ^ (r & 7)) << 4) | (cb & 15);
                        trr_store2((TO *)(slot + r * 128 + off), trr_epilogue(acc[4 * j], epi, alpha),
                                   trr_epilogue(acc[4 * j + 1], epi, alpha));
                        trr_store2((TO *)(slot + (r + 8) * 128 + off), trr_epilogue(acc[4 * j + 2], epi, alpha),
                                   trr_epilogue(acc[4 * j + 3], epi, alpha));
                    }
                    /* the copy engine reads what these generic stores wrote */
                    trr_fence_proxy_async();
                    /* box b + 1 rewrites the slot of box b + 1 - C_NS: of the stores issued so far (to box b - 1),
                     * the C_NS - 2 newest may still read */
                    if (b + 1 < C_BOXES && t == 0)
                        asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(C_NS - 2) : "memory");
                    asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory");
                    if (t == 0) {
                        trr_tma_store_3d(&tmc, c_slots + sl * C_BOX_BYTES, n0 + b * C_BOX_COLS, m0 + c * 64, zc);
                        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
                    }
                }
                if (C_RUN) c_run = (c_run + C_BOXES) % C_NS;
                if (C_REM_COLS)
                    wg_store_direct<C_BOXES * (C_BOX_COLS / 8)>(Cz, ldc, row, n0 + 2 * (lane & 3), M, N, acc, epi,
                                                               alpha, pair_ok);
            } else {
                wg_store_direct<0>(Cz, ldc, row, n0 + 2 * (lane & 3), M, N, acc, epi, alpha, pair_ok);
            }
        }
        /* shared memory must outlive the last stores' reads of it; their writes to C need no wait here (the grid
         * completes only once they land), and waiting for them would hold each SM's last block past its work */
        if (c_tma && t == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
#if CLUSTER_M == 2
    wg_cluster_sync();
#endif
}
