/*
 * The element-wise shape rule's ops over a flat vector (rows == 1: every operand packed) or rows x cols with row
 * strides. Compile-time: the op, as its definition reaches the kernel: ES (element bytes 1, 2, 4) for an op that
 * moves bytes (copy; trr_op_desc.bytewise), which needs only the element size, else ENTRY_<name> (ENTRY_add,
 * ENTRY_gelu, ENTRY_silu) with DT (0 f32, 1 f16, 2 bf16). The unary ops share every line but their function: f16
 * is widened to f32, computed in f32 and rounded once on store.
 * UNROLL (the config's block_n / (threads * VEC)) is the number of 16-byte vectors each thread of the flat kernel
 * loads before its first store; the rows kernel vectorises within a row when every row start is 16-byte aligned.
 * z may alias x or y exactly: each element is read and written by the same thread.
 */
#if defined(ES)
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

/* EW_INPUTS: the op's inputs (y is read only for two) */
#if defined(ES)
#define EW_INPUTS 1
#elif defined(ENTRY_add)
#define EW_INPUTS 2
#elif defined(ENTRY_gelu)
#define EW_INPUTS 1
__device__ __forceinline__ float ew_unary(float a) { return trr_gelu(a); }
#elif defined(ENTRY_silu)
#define EW_INPUTS 1
/* silu = x / (1 + e^-x), evaluated as (x < 0 ? x·h·h : x) / (1 + h·h) with h = e^(-|x|/2) in (0, 1]. The same
 * function, but e^-x overflows below x = -88.7 (giving -0 where the result, down to x = -92, is still a normal
 * float) and e^x is subnormal there (flushed, or short of precision), while x·h·h stays normal as long as the
 * result is. NaN propagates; -inf gives NaN (-inf · 0), as the float64 formula does. */
__device__ __forceinline__ float ew_unary(float a) {
    float h = expf(-0.5f * fabsf(a));
    return trr_div_full(a < 0.0f ? a * h * h : a, 1.0f + h * h);
}
#else
#error "elementwise.cu: compile with -DES=<bytes> (a byte move) or -DENTRY_<op> for an op of this file"
#endif

__device__ __forceinline__ T ew_apply(T a, T b) {
#if defined(ES)
    (void)b;
    return a;
#elif defined(ENTRY_add)
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
#if EW_INPUTS != 2
    (void)y;
#endif
    if (vec) {
        const long long nv = n / VEC;
        const long long base = (long long)blockIdx.x * bd * UNROLL;
        const trr_vec16<T> *xv = (const trr_vec16<T> *)x + base;
#if EW_INPUTS == 2
        const trr_vec16<T> *yv = (const trr_vec16<T> *)y + base;
#endif
        trr_vec16<T> *zv = (trr_vec16<T> *)z + base;
        if (base + (long long)bd * UNROLL <= nv) {
            trr_vec16<T> a[UNROLL], b[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                a[u] = xv[u * bd + t];
#if EW_INPUTS == 2
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
#if EW_INPUTS == 2
                    zv[i] = ew_apply_vec(xv[i], yv[i]);
#else
                    zv[i] = ew_apply_vec(xv[i], xv[i]);
#endif
                }
            }
        }
        if (blockIdx.x == gridDim.x - 1) {
            for (long long j = nv * VEC + t; j < n; j += bd) {
#if EW_INPUTS == 2
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
#if EW_INPUTS == 2
    const T *yb = y + base;
#endif
    T *zb = z + base;
#pragma unroll
    for (int u = 0; u < UNROLL * VEC; u++) {
        int i = u * bd + t;
        if (i < left) {
#if EW_INPUTS == 2
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
#if EW_INPUTS != 2
    (void)y;
    (void)sy;
#endif
    int t0 = blockIdx.x * blockDim.x + threadIdx.x;
    int tstride = gridDim.x * blockDim.x;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const T *xr = x + (long long)r * sx;
#if EW_INPUTS == 2
        const T *yr = y + (long long)r * sy;
#endif
        T *zr = z + (long long)r * sz;
        for (int i = t0; i < nv; i += tstride) {
            trr_vec16<T> a = ((const trr_vec16<T> *)xr)[i];
#if EW_INPUTS == 2
            trr_vec16<T> b = ((const trr_vec16<T> *)yr)[i];
#else
            trr_vec16<T> b = a;
#endif
            ((trr_vec16<T> *)zr)[i] = ew_apply_vec(a, b);
        }
        for (int c = nv * VEC + t0; c < cols; c += tstride) {
#if EW_INPUTS == 2
            zr[c] = ew_apply(xr[c], yr[c]);
#else
            zr[c] = ew_apply(xr[c], xr[c]);
#endif
        }
    }
}
