/*
 * copy, add and the unary ops (gelu, silu) over a flat vector (rows == 1: every operand packed) or rows x cols
 * with row strides. Compile-time: OP (0 copy, 1 add, 2 gelu, 3 silu); DT (0 f32, 1 f16, 2 bf16) for all but copy; ES
 * (element bytes 1, 2, 4) for copy, which moves bits and so needs only the element size. The unary ops share
 * every line but ew_unary: f16 is widened to f32, computed in f32 and rounded once on store.
 * The flat kernel streams 16-byte vectors, four in flight per thread before the first store, over a grid the
 * host sizes to one wave of resident blocks; the rows kernel vectorises within a row when every row start is
 * 16-byte aligned. z may alias x or y exactly: each element is read and written by the same thread.
 */
#if OP == 0
#if ES == 1
typedef unsigned char T;
#elif ES == 2
typedef unsigned short T;
#else
typedef unsigned int T;
#endif
#elif DT == 0
typedef float T;
#elif DT == 2
typedef trr_bf16 T;
#else
typedef unsigned short T;
#endif

#define VEC (16 / (int)sizeof(T))
#define UNROLL 4

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
    return (a < 0.0f ? a * h * h : a) / (1.0f + h * h);
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

/* Flat: n elements. vec != 0 when x, y and z are 16-byte aligned; the tail past the last whole vector is done
 * element by element. y is ignored by one-input ops (the host passes x). */
extern "C" __global__ void ew_flat(const T *x, const T *y, T *z, long long n, int vec) {
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long nv = vec ? n / VEC : 0;
    const trr_vec16<T> *xv = (const trr_vec16<T> *)x;
#if OP == 1
    const trr_vec16<T> *yv = (const trr_vec16<T> *)y;
#else
    (void)y;
#endif
    trr_vec16<T> *zv = (trr_vec16<T> *)z;
    long long i = tid;
    for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {
        trr_vec16<T> a[UNROLL], b[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            a[u] = xv[i + u * stride];
#if OP == 1
            b[u] = yv[i + u * stride];
#else
            b[u] = a[u];
#endif
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) zv[i + u * stride] = ew_apply_vec(a[u], b[u]);
    }
    for (; i < nv; i += stride) {
        trr_vec16<T> a = xv[i];
#if OP == 1
        trr_vec16<T> b = yv[i];
#else
        trr_vec16<T> b = a;
#endif
        zv[i] = ew_apply_vec(a, b);
    }
    for (long long j = nv * VEC + tid; j < n; j += stride) {
#if OP == 1
        z[j] = ew_apply(x[j], y[j]);
#else
        z[j] = ew_apply(x[j], x[j]);
#endif
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
