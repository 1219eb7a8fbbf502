/*
 * row_sum: y[r] = sum_c x[r,c], accumulated in f32. Compile-time: DT (0 f32, 1 f16, 2 bf16); LOADS, the 16-byte
 * vectors each thread loads before its first add (a power of two up to 16); RPB, rows per block (1 or 2: a block
 * keeps both rows' loads in flight at once); LOAD_KIND, the loads' cache policy (0 ld.global.cs; 1 ld.global.nc
 * with an L2 evict-first cache policy; 2 ld.global.nc). Each thread sums its strided share of a row with Kahan
 * compensation (free in a memory-bound loop, and it keeps long rows inside the SPEC's 1e-6 * sum|x| bound), then
 * the block adds its warps' sums: shuffles, one shared-memory step.
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
#ifndef RPB
#define RPB 1
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
 * (H200, 4096 x 8192 f32: 3430 GB/s with .cs, 3253 without; bench/results/README.md). */
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

/* Sums U vectors per thread of each of the block's RPB rows, all loaded before the first is added: RPB * U * 16
 * bytes in flight per thread. */
template <int U>
__device__ __forceinline__ void sum_vectors(const loader &ld, const trr_vec16<T> *const *xv, int &i, int nv,
                                            kahan *k) {
    const int bd = blockDim.x;
    for (; i + (U - 1) * bd < nv; i += U * bd) {
        trr_vec16<T> a[RPB][U];
#pragma unroll
        for (int r = 0; r < RPB; r++)
#pragma unroll
            for (int u = 0; u < U; u++) a[r][u] = ld(xv[r] + i + u * bd);
#pragma unroll
        for (int r = 0; r < RPB; r++)
#pragma unroll
            for (int u = 0; u < U; u++) {
                float p = 0.0f;
#pragma unroll
                for (int j = 0; j < VEC; j++) p += trr_to_f32(a[r][u].e[j]);
                kahan_add(k[r], p);
            }
    }
}

extern "C" __global__ void row_sum(const T *x, long long sx, float *y, long long sy, int rows, int n, int vec) {
    __shared__ float scratch[RPB][32];
    const int r0 = blockIdx.x * RPB;
    const T *xr[RPB];
    const trr_vec16<T> *xv[RPB];
    kahan k[RPB];
#pragma unroll
    for (int r = 0; r < RPB; r++) {
        /* a last block with fewer rows reads its last row again and writes it once */
        int row = r0 + r < rows ? r0 + r : rows - 1;
        xr[r] = x + (long long)row * sx;
        xv[r] = (const trr_vec16<T> *)xr[r];
        k[r].s = 0.0f;
        k[r].c = 0.0f;
    }
    const loader ld;
    int nv = vec ? n / VEC : 0;
    int i = threadIdx.x;
    /* LOADS vectors in flight per thread while they last, then four, then one. */
    sum_vectors<LOADS>(ld, xv, i, nv, k);
    if (LOADS > 4) sum_vectors<4>(ld, xv, i, nv, k);
    if (LOADS > 1) sum_vectors<1>(ld, xv, i, nv, k);
#pragma unroll
    for (int r = 0; r < RPB; r++)
        for (int c = nv * VEC + threadIdx.x; c < n; c += blockDim.x) kahan_add(k[r], trr_to_f32(xr[r][c]));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int r = 0; r < RPB; r++) {
        float v = trr_warp_sum(k[r].s - k[r].c);
        if (lane == 0) scratch[r][warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int r = 0; r < RPB; r++) {
            float v = trr_warp_sum(lane < nwarps ? scratch[r][lane] : 0.0f);
            if (lane == 0 && r0 + r < rows) y[(long long)(r0 + r) * sy] = v;
        }
    }
}
