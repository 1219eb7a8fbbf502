/* silu as a user op in CUDA C, with the structure of the built-in's flat kernel (kernels/cuda/elementwise.cu):
 * block b takes a chunk of THREADS * EPT 16-byte vectors of its row and thread t every THREADS-th vector of it, so
 * each of the EPT loads is coalesced and all are issued before the first store, where the row's operands start
 * 16-byte aligned and VEC = 4; one float at a time otherwise (EPT * VEC of them, THREADS apart). The tile
 * parameters are the built-in's config fields: THREADS (threads), VEC (vector_width) and BLOCK_N (block_n,
 * elements a block: EPT = BLOCK_N / (THREADS * VEC), the built-in's UNROLL). Arguments: docs/custom-ops.md's. */
#define EPT_ (BLOCK_N / (THREADS * VEC))
#define EPT (EPT_ > 0 ? EPT_ : 1)

__device__ __forceinline__ float silu_of(float a) {
    const float h = expf(-0.5f * fabsf(a));
    return (a < 0.0f ? a * h * h : a) / (1.0f + h * h);
}

extern "C" __global__ void silu_user(const float *__restrict__ x, float *__restrict__ y, long long xo, long long yo,
                                     int rows, int cols, int xs, int ys) {
    const int r = blockIdx.y, t = threadIdx.x;
    if (r >= rows) return;
    const float *xr = x + xo + (long long)r * xs;
    float *yr = y + yo + (long long)r * ys;
    if (VEC == 4 && ((((unsigned long long)xr) | ((unsigned long long)yr)) & 15) == 0) {
        const int nv = cols / 4, base = blockIdx.x * THREADS * EPT;
        const float4 *xv = (const float4 *)xr + base;
        float4 *yv = (float4 *)yr + base;
        float4 a[EPT];
#pragma unroll
        for (int e = 0; e < EPT; e++)
            if (base + e * THREADS + t < nv) a[e] = xv[e * THREADS + t];
#pragma unroll
        for (int e = 0; e < EPT; e++) {
            if (base + e * THREADS + t < nv) {
                float4 v = a[e];
                v.x = silu_of(v.x), v.y = silu_of(v.y), v.z = silu_of(v.z), v.w = silu_of(v.w);
                yv[e * THREADS + t] = v;
            }
        }
        if (blockIdx.x == 0) /* the row's tail past the last whole vector */
            for (int i = nv * 4 + t; i < cols; i += THREADS) yr[i] = silu_of(xr[i]);
        return;
    }
    const int base = blockIdx.x * THREADS * EPT * VEC + t;
#pragma unroll
    for (int e = 0; e < EPT * VEC; e++) {
        const int c = base + e * THREADS;
        if (c >= cols) break;
        yr[c] = silu_of(xr[c]);
    }
}
