/*
 * row_sum: y[r] = sum_c x[r,c], accumulated in f32. Compile-time: DT (0 f32, 1 f16, 2 bf16); LOADS, the 16-byte
 * vectors each thread loads before its first add (a power of two up to 16); LOAD_KIND, the loads' cache policy
 * (0 ld.global.cs; 1 ld.global.nc with an L2 evict-first cache policy; 2 ld.global.nc; 3 on sm_90, ld.global.cs
 * elsewhere: the row through shared memory by bulk copies). One block per row: each
 * thread sums its strided share with Kahan compensation (free in a memory-bound loop, and it keeps long rows
 * inside docs/ops.md's 1e-6 * sum|x| bound), then the block adds its warps' sums: shuffles, one shared-memory step.
 * vec != 0 when every row starts 16-byte aligned.
 */
typedef trr_dt<DT>::type T;

#ifndef LOADS
#define LOADS 8
#endif
#ifndef LOAD_KIND
#define LOAD_KIND 0
#endif

#define VEC (16 / (int)sizeof(T))

struct kahan {
    float s, c;
};

__device__ __forceinline__ void kahan_add(kahan &k, float v) {
    float yv = v - k.c;
    float t = k.s + yv;
    k.c = (t - k.s) - yv;
    k.s = t;
}

/* x is read once. The fill the bench runs before every call leaves the L2 full of written lines; loads that
 * allocate evict-first replace their own lines instead of those, so fewer are written back during the call
 * (.cs is ahead of .nc after the fill, behind without it: docs/performance.md). The L2 evict-first policy
 * measured as .cs. */
struct loader {
    unsigned long long policy;
    __device__ __forceinline__ loader() : policy(0) {
#if LOAD_KIND == 1 && __CUDA_ARCH__ >= 800
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    }
    __device__ __forceinline__ trr_vec16<T> operator()(const trr_vec16<T> *p) const {
        float4 f;
#if LOAD_KIND == 1 && __CUDA_ARCH__ >= 800
        asm("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
            : "=f"(f.x), "=f"(f.y), "=f"(f.z), "=f"(f.w)
            : "l"(p), "l"(policy));
#elif LOAD_KIND == 2
        f = __ldg(reinterpret_cast<const float4 *>(p));
#else
        f = __ldcs(reinterpret_cast<const float4 *>(p));
#endif
        trr_vec16<T> r;
        *reinterpret_cast<float4 *>(&r) = f;
        return r;
    }
};

/* Sums U vectors per thread, all loaded before the first is added: U * 16 bytes in flight per thread. */
template <int U>
__device__ __forceinline__ void sum_vectors(const loader &ld, const trr_vec16<T> *xv, int &i, int nv, kahan &k) {
    const int bd = blockDim.x;
    for (; i + (U - 1) * bd < nv; i += U * bd) {
        trr_vec16<T> a[U];
#pragma unroll
        for (int u = 0; u < U; u++) a[u] = ld(xv + i + u * bd);
#pragma unroll
        for (int u = 0; u < U; u++) {
            float p = 0.0f;
#pragma unroll
            for (int j = 0; j < VEC; j++) p += trr_to_f32(a[u].e[j]);
            kahan_add(k, p);
        }
    }
}

#if LOAD_KIND == 3 && __CUDA_ARCH__ >= 900
#define BULK 1
/* Bulk copies (cp.async.bulk, the TMA engine without a tensor map): the row streams through BULK_STAGES stages of
 * BULK_CHUNK bytes, one thread issuing each copy, completion counted in bytes on the stage's mbarrier; the block
 * sums a stage from shared memory while the next ones are in flight. On NVIDIA H200 after the bench's fill, rows
 * of 128 KiB and more read faster than with the loads above, shorter ones slower; with the L2 evict-first hint
 * the copies were no faster than the loads (docs/performance.md). */
#include "hopper.cuh"

#define BULK_STAGES 4
#define BULK_CHUNK 8192

/* the shared-window address of a __shared__ variable: the compiler's own conversion, which it folds into the
 * variable's address (the asm form, trr_smem_addr, takes an instruction a use) */
__device__ __forceinline__ unsigned bulk_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bulk_issue(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
    trr_mbar_expect(bar, bytes);
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* The row's first nv vectors (16-byte aligned) into k. */
__device__ __forceinline__ void bulk_sum(const trr_vec16<T> *xv, int nv, kahan &k) {
    __shared__ __align__(128) trr_vec16<T> stage[BULK_STAGES][BULK_CHUNK / 16];
    __shared__ __align__(8) unsigned long long bar[BULK_STAGES];
    const int per = BULK_CHUNK / 16, chunks = (nv + per - 1) / per;
    if (threadIdx.x == 0) {
        for (int s = 0; s < BULK_STAGES; s++) trr_mbar_init(bulk_smem(&bar[s]), 1);
        trr_mbar_init_fence();
        for (int c = 0; c < BULK_STAGES && c < chunks; c++) {
            int cnt = min(per, nv - c * per);
            bulk_issue(bulk_smem(stage[c]), xv + (long long)c * per, (unsigned)cnt * 16u,
                       bulk_smem(&bar[c]));
        }
    }
    __syncthreads();
    for (int c = 0; c < chunks; c++) {
        const int s = c % BULK_STAGES, cnt = min(per, nv - c * per);
        trr_mbar_wait(bulk_smem(&bar[s]), (unsigned)(c / BULK_STAGES) & 1u);
        for (int j = threadIdx.x; j < cnt; j += blockDim.x) {
            trr_vec16<T> a = stage[s][j];
            float p = 0.0f;
#pragma unroll
            for (int e = 0; e < VEC; e++) p += trr_to_f32(a.e[e]);
            kahan_add(k, p);
        }
        __syncthreads(); /* stage s read by every thread before it is refilled */
        const int next = c + BULK_STAGES;
        if (threadIdx.x == 0 && next < chunks) {
            trr_fence_proxy_async();
            int ncnt = min(per, nv - next * per);
            bulk_issue(bulk_smem(stage[s]), xv + (long long)next * per, (unsigned)ncnt * 16u,
                       bulk_smem(&bar[s]));
        }
    }
}
#else
#define BULK 0
#endif

extern "C" __global__ void row_sum(const T *x, long long sx, float *y, long long sy, int rows, int n, int vec) {
    __shared__ float scratch[32];
    const int r = blockIdx.x;
    const T *xr = x + (long long)r * sx;
    const trr_vec16<T> *xv = (const trr_vec16<T> *)xr;
    kahan k = {0.0f, 0.0f};
    const loader ld;
    int nv = vec ? n / VEC : 0;
#if BULK
    (void)ld;
    if (nv) bulk_sum(xv, nv, k);
#else
    int i = threadIdx.x;
    /* LOADS vectors in flight per thread while they last, then four, then one. */
    sum_vectors<LOADS>(ld, xv, i, nv, k);
    if (LOADS > 4) sum_vectors<4>(ld, xv, i, nv, k);
    if (LOADS > 1) sum_vectors<1>(ld, xv, i, nv, k);
#endif
    for (int c = nv * VEC + threadIdx.x; c < n; c += blockDim.x) kahan_add(k, trr_to_f32(xr[c]));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float v = trr_warp_sum(k.s - k.c);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = trr_warp_sum(lane < nwarps ? scratch[lane] : 0.0f);
        if (lane == 0) y[(long long)r * sy] = v;
    }
}
