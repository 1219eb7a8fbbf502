/*
 * copy, add and the unary ops (gelu, silu) over a flat vector (rows == 1: every operand packed) or rows x cols
 * with row strides. Compile-time: OP (0 copy, 1 add, 2 gelu, 3 silu); DT (0 f32, 1 f16, 2 bf16) for all but copy; ES
 * (element bytes 1, 2, 4) for copy, which moves bits and so needs only the element size. The unary ops share
 * every line but ew_unary: f16 is widened to f32, computed in f32 and rounded once on store.
 * UNROLL (the config's block_n / (threads * VEC)) is the number of 16-byte vectors each thread of the flat kernel
 * loads before its first store; the rows kernel vectorises within a row when every row start is 16-byte aligned.
 * z may alias x or y exactly: each element is read and written by the same thread.
 */
#if OP == 0
#if ES == 1
typedef unsigned char T;
#elif ES == 2
typedef unsigned short T;
#else
typedef unsigned int T;
#endif
#else
typedef trr_dt<DT>::type T;
#endif

#define VEC (16 / (int)sizeof(T))
#ifndef UNROLL
#define UNROLL 1
#endif

#if OP >= 2
/* silu = x / (1 + e^-x), evaluated as (x < 0 ? x·h·h : x) / (1 + h·h) with h = e^(-|x|/2) in (0, 1]. The same
 * function, but e^-x overflows below x = -88.7 (giving -0 where the result, down to x = -92, is still a normal
 * float) and e^x is subnormal there (flushed, or short of precision), while x·h·h stays normal as long as the
 * result is. NaN propagates; -inf gives NaN (-inf · 0), as the float64 formula does. */
__device__ __forceinline__ float ew_unary(float a) {
#if OP == 2
    return trr_gelu(a);
#else
    float h = expf(-0.5f * fabsf(a));
    return trr_div_full(a < 0.0f ? a * h * h : a, 1.0f + h * h);
#endif
}
#endif

__device__ __forceinline__ T ew_apply(T a, T b) {
#if OP == 0
    (void)b;
    return a;
#elif OP == 1
    return trr_from_f32<T>(trr_to_f32(a) + trr_to_f32(b));
#else
    (void)b;
    return trr_from_f32<T>(ew_unary(trr_to_f32(a)));
#endif
}

__device__ __forceinline__ trr_vec16<T> ew_apply_vec(const trr_vec16<T> &a, const trr_vec16<T> &b) {
    trr_vec16<T> r;
#pragma unroll
    for (int j = 0; j < VEC; j++) r.e[j] = ew_apply(a.e[j], b.e[j]);
    return r;
}

/* Flat: n elements. Block b takes a contiguous chunk of blockDim.x * UNROLL vectors (16 bytes each) when vec != 0
 * (x, y and z 16-byte aligned), else of blockDim.x * UNROLL * VEC elements; thread t takes every blockDim.x-th
 * vector of the chunk, so each of the UNROLL loads is coalesced and all are issued before the first store. The
 * grid covers n in one launch (no grid-stride loop): on Hopper a short-lived block per chunk keeps more loads in
 * flight than a wave of long-lived blocks. The last block also does the elements past the last whole vector. y
 * is ignored by one-input ops (the host passes x). */
__device__ __forceinline__ void ew_flat_body(const T *x, const T *y, T *z, long long n, int vec) {
    const int t = threadIdx.x, bd = blockDim.x;
#if OP != 1
    (void)y;
#endif
    if (vec) {
        const long long nv = n / VEC;
        const long long base = (long long)blockIdx.x * bd * UNROLL;
        const trr_vec16<T> *xv = (const trr_vec16<T> *)x + base;
#if OP == 1
        const trr_vec16<T> *yv = (const trr_vec16<T> *)y + base;
#endif
        trr_vec16<T> *zv = (trr_vec16<T> *)z + base;
        if (base + (long long)bd * UNROLL <= nv) {
            trr_vec16<T> a[UNROLL], b[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                a[u] = xv[u * bd + t];
#if OP == 1
                b[u] = yv[u * bd + t];
#else
                b[u] = a[u];
#endif
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++) zv[u * bd + t] = ew_apply_vec(a[u], b[u]);
        } else {
            const long long left = nv - base; /* may be <= 0: a block that exists only for the tail */
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                int i = u * bd + t;
                if (i < left) {
#if OP == 1
                    zv[i] = ew_apply_vec(xv[i], yv[i]);
#else
                    zv[i] = ew_apply_vec(xv[i], xv[i]);
#endif
                }
            }
        }
        if (blockIdx.x == gridDim.x - 1) {
            for (long long j = nv * VEC + t; j < n; j += bd) {
#if OP == 1
                z[j] = ew_apply(x[j], y[j]);
#else
                z[j] = ew_apply(x[j], x[j]);
#endif
            }
        }
        return;
    }
    const long long base = (long long)blockIdx.x * bd * (UNROLL * VEC);
    const long long left = n - base;
    const T *xb = x + base;
#if OP == 1
    const T *yb = y + base;
#endif
    T *zb = z + base;
#pragma unroll
    for (int u = 0; u < UNROLL * VEC; u++) {
        int i = u * bd + t;
        if (i < left) {
#if OP == 1
            zb[i] = ew_apply(xb[i], yb[i]);
#else
            zb[i] = ew_apply(xb[i], xb[i]);
#endif
        }
    }
}

/* flag != NULL only for a grid of one block (the host's choice): once every thread's stores are done, the block
 * writes seq into the host's flag (mapped host memory), which lets the synchronize skip the stream's own write
 * behind the kernel (wait.c). The system-scope fence puts the stores before the flag for the host. */
extern "C" __global__ void ew_flat(const T *x, const T *y, T *z, long long n, int vec, unsigned *flag, unsigned seq) {
    ew_flat_body(x, y, z, n, vec);
    if (flag) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            *(volatile unsigned *)flag = seq;
        }
    }
}

/* rows x cols with row strides (elements). blockIdx.y walks rows, blockIdx.x and threads walk columns. vec != 0
 * when every row of every operand starts 16-byte aligned (aligned bases, strides multiples of VEC). */
extern "C" __global__ void ew_rows(const T *x, long long sx, const T *y, long long sy, T *z, long long sz, int rows,
                                   int cols, int vec) {
    int nv = vec ? cols / VEC : 0;
#if OP != 1
    (void)y;
    (void)sy;
#endif
    int t0 = blockIdx.x * blockDim.x + threadIdx.x;
    int tstride = gridDim.x * blockDim.x;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const T *xr = x + (long long)r * sx;
#if OP == 1
        const T *yr = y + (long long)r * sy;
#endif
        T *zr = z + (long long)r * sz;
        for (int i = t0; i < nv; i += tstride) {
            trr_vec16<T> a = ((const trr_vec16<T> *)xr)[i];
#if OP == 1
            trr_vec16<T> b = ((const trr_vec16<T> *)yr)[i];
#else
            trr_vec16<T> b = a;
#endif
            ((trr_vec16<T> *)zr)[i] = ew_apply_vec(a, b);
        }
        for (int c = nv * VEC + t0; c < cols; c += tstride) {
#if OP == 1
            zr[c] = ew_apply(xr[c], yr[c]);
#else
            zr[c] = ew_apply(xr[c], xr[c]);
#endif
        }
    }
}
