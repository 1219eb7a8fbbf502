/*
 * Hopper's (sm_90a) building blocks for the kernels that include this file: transaction-counting mbarriers, the
 * tensor memory accelerator's copies (TMA), and warpgroup MMA (wgmma): shared-memory matrix descriptors, the
 * fences around its asynchronous groups, and the operand lists of its accumulators.
 */

/* CUtensorMap: 128 opaque bytes, 64-byte aligned, passed by value as a __grid_constant__ parameter. */
struct __align__(64) trr_tensor_map {
    unsigned long long q[16];
};

/* ---- mbarriers (shared-window addresses) ---- */
__device__ __forceinline__ void trr_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* Makes the initialisations above visible to the copy engine and the cluster before any use. */
__device__ __forceinline__ void trr_mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/* Arrives, and adds bytes to the transaction count the phase waits for. */
__device__ __forceinline__ void trr_mbar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void trr_mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Waits until the phase of the given parity has completed. */
__device__ __forceinline__ void trr_mbar_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "TRR_MBAR_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra TRR_MBAR_WAIT;\n"
                 "}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* ---- TMA ---- */
__device__ __forceinline__ void trr_prefetch_map(const trr_tensor_map *map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"((unsigned long long)map) : "memory");
}
/* The box at (inner c0, c1, outer c2) of the rank-3 map into shared memory at dst, completing on bar. */
__device__ __forceinline__ void trr_tma_load_3d(unsigned dst, const trr_tensor_map *map, int c0, int c1, int c2,
                                                unsigned bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3, %4}], [%5];" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}
/* The box at coordinates c (inner first) of the rank-4 map into shared memory at dst, completing on bar. */
__device__ __forceinline__ void trr_tma_load_4d(unsigned dst, const trr_tensor_map *map, const int *c, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3, %4, %5}], [%6];" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(bar)
                 : "memory");
}
/* The box in shared memory at src to (inner c0, c1, outer c2) of the rank-3 map, clipped at the tensor's bounds;
 * completion is tracked by this thread's bulk async-groups. */
__device__ __forceinline__ void trr_tma_store_3d(const trr_tensor_map *map, unsigned src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(
                     (unsigned long long)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
}
/* Orders this thread's generic stores to shared memory before the copy engine's reads of it. */
__device__ __forceinline__ void trr_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* ---- wgmma ---- */
/* Shared-memory matrix descriptor: start address, leading and stride byte offsets, and the swizzle (layout 1 is
 * the 128-byte swizzle, 2 the 64-byte, 3 the 32-byte). */
__device__ __forceinline__ unsigned long long trr_wg_desc_layout(unsigned addr, unsigned lbo, unsigned sbo,
                                                                 unsigned long long layout) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32) | (layout << 62);
}
/* The same under the 128-byte swizzle. */
__device__ __forceinline__ unsigned long long trr_wg_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return trr_wg_desc_layout(addr, lbo, sbo, 1);
}
__device__ __forceinline__ void trr_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void trr_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
/* Waits until at most n of the warpgroup's committed groups are still running. */
template <int n> __device__ __forceinline__ void trr_wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(n) : "memory");
}
/* Pins registers at this point of the program: what an asynchronous wgmma writes (float) or still reads
 * (unsigned) is neither read nor reused across the point, so code cannot move over a wait. */
template <int n> __device__ __forceinline__ void trr_pin(float *d) {
#pragma unroll
    for (int i = 0; i < n; i++) asm volatile("" : "+f"(d[i])::"memory");
}
template <int n> __device__ __forceinline__ void trr_pin_u(unsigned *d) {
#pragma unroll
    for (int i = 0; i < n; i++) asm volatile("" : "+r"(d[i])::"memory");
}

/* An m64n<n> instruction's accumulator, n/2 registers a thread: TRR_WG_NAMES_<n> names them in the PTX as operands
 * %3 up (the instruction's three other operands, in-out, come first: so the numbering holds whatever n is) and
 * TRR_WG_BIND_<n> binds them to d[0 .. n/2). */
#define TRR_WG_A8(a, b, c, d, e, f, g, h) "%" #a ", %" #b ", %" #c ", %" #d ", %" #e ", %" #f ", %" #g ", %" #h
#define TRR_WG_NAMES_16 TRR_WG_A8(3, 4, 5, 6, 7, 8, 9, 10)
#define TRR_WG_NAMES_32 TRR_WG_NAMES_16 ", " TRR_WG_A8(11, 12, 13, 14, 15, 16, 17, 18)
#define TRR_WG_NAMES_48 TRR_WG_NAMES_32 ", " TRR_WG_A8(19, 20, 21, 22, 23, 24, 25, 26)
#define TRR_WG_NAMES_64 TRR_WG_NAMES_48 ", " TRR_WG_A8(27, 28, 29, 30, 31, 32, 33, 34)
#define TRR_WG_NAMES_80 TRR_WG_NAMES_64 ", " TRR_WG_A8(35, 36, 37, 38, 39, 40, 41, 42)
#define TRR_WG_NAMES_96 TRR_WG_NAMES_80 ", " TRR_WG_A8(43, 44, 45, 46, 47, 48, 49, 50)
#define TRR_WG_NAMES_112 TRR_WG_NAMES_96 ", " TRR_WG_A8(51, 52, 53, 54, 55, 56, 57, 58)
#define TRR_WG_NAMES_128 TRR_WG_NAMES_112 ", " TRR_WG_A8(59, 60, 61, 62, 63, 64, 65, 66)
#define TRR_WG_NAMES_144 TRR_WG_NAMES_128 ", " TRR_WG_A8(67, 68, 69, 70, 71, 72, 73, 74)
#define TRR_WG_NAMES_160 TRR_WG_NAMES_144 ", " TRR_WG_A8(75, 76, 77, 78, 79, 80, 81, 82)
#define TRR_WG_NAMES_176 TRR_WG_NAMES_160 ", " TRR_WG_A8(83, 84, 85, 86, 87, 88, 89, 90)
#define TRR_WG_NAMES_192 TRR_WG_NAMES_176 ", " TRR_WG_A8(91, 92, 93, 94, 95, 96, 97, 98)
#define TRR_WG_NAMES_208 TRR_WG_NAMES_192 ", " TRR_WG_A8(99, 100, 101, 102, 103, 104, 105, 106)
#define TRR_WG_NAMES_224 TRR_WG_NAMES_208 ", " TRR_WG_A8(107, 108, 109, 110, 111, 112, 113, 114)
#define TRR_WG_NAMES_240 TRR_WG_NAMES_224 ", " TRR_WG_A8(115, 116, 117, 118, 119, 120, 121, 122)
#define TRR_WG_NAMES_256 TRR_WG_NAMES_240 ", " TRR_WG_A8(123, 124, 125, 126, 127, 128, 129, 130)
#define TRR_WG_F8(i)                                                                                                  \
    "+f"(d[i]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]),           \
        "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define TRR_WG_BIND_16 TRR_WG_F8(0)
#define TRR_WG_BIND_32 TRR_WG_BIND_16, TRR_WG_F8(8)
#define TRR_WG_BIND_48 TRR_WG_BIND_32, TRR_WG_F8(16)
#define TRR_WG_BIND_64 TRR_WG_BIND_48, TRR_WG_F8(24)
#define TRR_WG_BIND_80 TRR_WG_BIND_64, TRR_WG_F8(32)
#define TRR_WG_BIND_96 TRR_WG_BIND_80, TRR_WG_F8(40)
#define TRR_WG_BIND_112 TRR_WG_BIND_96, TRR_WG_F8(48)
#define TRR_WG_BIND_128 TRR_WG_BIND_112, TRR_WG_F8(56)
#define TRR_WG_BIND_144 TRR_WG_BIND_128, TRR_WG_F8(64)
#define TRR_WG_BIND_160 TRR_WG_BIND_144, TRR_WG_F8(72)
#define TRR_WG_BIND_176 TRR_WG_BIND_160, TRR_WG_F8(80)
#define TRR_WG_BIND_192 TRR_WG_BIND_176, TRR_WG_F8(88)
#define TRR_WG_BIND_208 TRR_WG_BIND_192, TRR_WG_F8(96)
#define TRR_WG_BIND_224 TRR_WG_BIND_208, TRR_WG_F8(104)
#define TRR_WG_BIND_240 TRR_WG_BIND_224, TRR_WG_F8(112)
#define TRR_WG_BIND_256 TRR_WG_BIND_240, TRR_WG_F8(120)

/* name(d, da, db, accumulate): D[64 x n] (+)= A . B, both from shared memory through descriptors da and db, f32
 * accumulators; accumulate 0 writes D = A . B. k ("k16", "k32") and the operand types ta, tb ("f16", "e4m3", ...)
 * as the PTX spells them; imms: the immediates after scale-d, as text (", 1, 1" and, for 16-bit types, the two
 * transposes). n may be a macro. */
#define TRR_WG_SS_ASM(n, k, ta, tb, imms)                                                                              \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\nwgmma.mma_async.sync.aligned.m64n" #n k ".f32." ta "." tb              \
    " {" TRR_WG_NAMES_##n "}, %0, %1, p" imms ";\n}\n"
#define TRR_WG_SS_FN_(name, n, k, ta, tb, imms)                                                                        \
    __device__ __forceinline__ void name(float *d, unsigned long long da, unsigned long long db, int accumulate) {  \
        asm volatile(TRR_WG_SS_ASM(n, k, ta, tb, imms) : "+l"(da), "+l"(db), "+r"(accumulate), TRR_WG_BIND_##n);   \
    }
#define TRR_WG_SS_FN(name, n, k, ta, tb, imms) TRR_WG_SS_FN_(name, n, k, ta, tb, imms)
