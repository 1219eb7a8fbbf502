/*
 * row_sum: y[r] = sum_c x[r,c], accumulated in f32. Compile-time: DT (0 f32, 1 f16, 2 bf16). One block per row; each
 * thread sums its strided share of the row with Kahan compensation (free in a memory-bound loop, and it keeps
 * long rows inside the SPEC's 1e-6 * sum|x| bound), then the block reduces the partial sums.
 * vec != 0 when every row starts 16-byte aligned.
 */
#if DT == 0
typedef float T;
#elif DT == 2
typedef trr_bf16 T;
#else
typedef unsigned short T;
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

/* x is read once: ld.global.cs allocates its lines evict-first, so the stream replaces its own L2 lines before
 * other data. On the H200, 4096 x 8192 f32: 3430 GB/s with it, 3253 without (bench/results/README.md). The
 * element-wise and softmax kernels measured slower with .cs loads and stores, and use plain ones. */
__device__ __forceinline__ trr_vec16<T> load_once(const trr_vec16<T> *p) {
    float4 f = __ldcs(reinterpret_cast<const float4 *>(p));
    trr_vec16<T> r;
    *reinterpret_cast<float4 *>(&r) = f;
    return r;
}

/* Sums U vectors per thread, all loaded before the first is added: U * 16 bytes in flight per thread. */
template <int U>
__device__ __forceinline__ void sum_vectors(const trr_vec16<T> *xv, int &i, int nv, kahan &k) {
    const int bd = blockDim.x;
    for (; i + (U - 1) * bd < nv; i += U * bd) {
        trr_vec16<T> a[U];
#pragma unroll
        for (int u = 0; u < U; u++) a[u] = load_once(xv + i + u * bd);
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
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + (long long)r * sx;
        kahan k = {0.0f, 0.0f};
        int nv = vec ? n / VEC : 0;
        int i = threadIdx.x;
        /* Eight vectors in flight per thread while they last (a 4096 x 8192 f32 row is exactly that for 256
         * threads), then four, then one. */
        const trr_vec16<T> *xv = (const trr_vec16<T> *)xr;
        sum_vectors<8>(xv, i, nv, k);
        sum_vectors<4>(xv, i, nv, k);
        sum_vectors<1>(xv, i, nv, k);
        for (int c = nv * VEC + threadIdx.x; c < n; c += blockDim.x) kahan_add(k, trr_to_f32(xr[c]));
        float total = trr_block_sum(k.s - k.c, scratch);
        if (threadIdx.x == 0) y[(long long)r * sy] = total;
    }
}
