/*
 * row_sum: y[r] = sum_c x[r,c], accumulated in f32. Compile-time: DT (0 f32, 1 f16, 2 bf16); LOADS, the 16-byte
 * vectors each thread loads before its first add (a power of two up to 16); LOAD_KIND, the loads' cache policy
 * (0 ld.global.cs; 1 ld.global.nc with an L2 evict-first cache policy; 2 ld.global.nc). One block per row: each
 * thread sums its strided share with Kahan compensation (free in a memory-bound loop, and it keeps long rows
 * inside the SPEC's 1e-6 * sum|x| bound), then the block adds its warps' sums: shuffles, one shared-memory step.
 * vec != 0 when every row starts 16-byte aligned.
 */
#if DT == 0
typedef float T;
#elif DT == 2
typedef trr_bf16 T;
#else
typedef unsigned short T;
#endif

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
 * (H200, 4096 x 8192 f32, 512 threads: 37.3 us with .cs, 40.9 with .nc; without the fill .nc is the faster,
 * 34.5 against 36.7: bench/results/2026-11-23-h200-rowsum.txt). The L2 evict-first policy measured as .cs. */
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

extern "C" __global__ void row_sum(const T *x, long long sx, float *y, long long sy, int rows, int n, int vec) {
    __shared__ float scratch[32];
    const int r = blockIdx.x;
    const T *xr = x + (long long)r * sx;
    const trr_vec16<T> *xv = (const trr_vec16<T> *)xr;
    kahan k = {0.0f, 0.0f};
    const loader ld;
    int nv = vec ? n / VEC : 0;
    int i = threadIdx.x;
    /* LOADS vectors in flight per thread while they last, then four, then one. */
    sum_vectors<LOADS>(ld, xv, i, nv, k);
    if (LOADS > 4) sum_vectors<4>(ld, xv, i, nv, k);
    if (LOADS > 1) sum_vectors<1>(ld, xv, i, nv, k);
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
