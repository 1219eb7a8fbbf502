/*
 * cast (docs/ops.md, cast): y = x converted between two of f32, f16, bf16, f8e4m3 and f8e5m2, element by element:
 * widened to f32 (exact), rounded once into the output dtype by common.cuh's conversions (round to nearest even;
 * the 8-bit floats saturate as docs/ops.md says; NaN stays NaN). A cast to the same dtype moves the bits.
 * One module holds every pair, each its own pair of kernels cast_flat_<in>_<out> and cast_rows_<in>_<out> (dtype
 * codes as trr_dtype: 0 f32, 1 f16, 2 bf16, 4 f8e4m3, 5 f8e5m2): one compile serves all 25 pairs, and each kernel
 * is still specialised for its dtypes. The arguments are elementwise.cu's (y is not read).
 * Aligned path (vec != 0: every row start of x and z 16-byte aligned): each thread converts V elements at a time,
 * V = 16 bytes of the narrower type, so every load and store is whole 16-byte vectors.
 */
#ifndef ENTRY_cast
#error "cast.cu: compile with -DENTRY_cast (the op's entry, as the element-wise rule names it)"
#endif

template <typename TI, typename TO> struct cast_pair {
    static const int V = 16 / (sizeof(TI) < sizeof(TO) ? (int)sizeof(TI) : (int)sizeof(TO));
    struct __align__(16) in_v {
        TI e[V];
    };
    struct __align__(16) out_v {
        TO e[V];
    };
};

/* one element: through f32, or the bits themselves where the dtypes agree */
template <typename TI, typename TO> struct cast_elem {
    static __device__ __forceinline__ TO go(TI a) { return trr_from_f32<TO>(trr_to_f32(a)); }
};
template <typename T> struct cast_elem<T, T> {
    static __device__ __forceinline__ T go(T a) { return a; }
};

template <typename TI, typename TO> __device__ __forceinline__ TO cast_one(TI a) { return cast_elem<TI, TO>::go(a); }

template <typename TI, typename TO>
__device__ __forceinline__ typename cast_pair<TI, TO>::out_v cast_vec(const typename cast_pair<TI, TO>::in_v &a) {
    typename cast_pair<TI, TO>::out_v b;
#pragma unroll
    for (int j = 0; j < cast_pair<TI, TO>::V; j++) b.e[j] = cast_one<TI, TO>(a.e[j]);
    return b;
}

/* n elements, grid-stride. flag (mapped host memory, wait.c) is written with seq once the block is done, by a grid
 * of one block only. */
template <typename TI, typename TO>
__device__ __forceinline__ void cast_flat(const TI *x, TO *z, long long n, int vec, unsigned *flag, unsigned seq) {
    typedef cast_pair<TI, TO> P;
    const long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    long long done = 0;
    if (vec) {
        const long long nv = n / P::V;
        for (long long i = t0; i < nv; i += step)
            ((typename P::out_v *)z)[i] = cast_vec<TI, TO>(((const typename P::in_v *)x)[i]);
        done = nv * P::V;
    }
    for (long long j = done + t0; j < n; j += step) z[j] = cast_one<TI, TO>(x[j]);
    if (flag) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            *(volatile unsigned *)flag = seq;
        }
    }
}

/* rows x cols with row strides (elements): blockIdx.y walks rows, blockIdx.x and the threads walk columns. */
template <typename TI, typename TO>
__device__ __forceinline__ void cast_rows(const TI *x, long long sx, TO *z, long long sz, int rows, int cols, int vec) {
    typedef cast_pair<TI, TO> P;
    const int nv = vec ? cols / P::V : 0;
    const int t0 = blockIdx.x * blockDim.x + threadIdx.x, step = gridDim.x * blockDim.x;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const TI *xr = x + (long long)r * sx;
        TO *zr = z + (long long)r * sz;
        for (int i = t0; i < nv; i += step)
            ((typename P::out_v *)zr)[i] = cast_vec<TI, TO>(((const typename P::in_v *)xr)[i]);
        for (int c = nv * P::V + t0; c < cols; c += step) zr[c] = cast_one<TI, TO>(xr[c]);
    }
}

#define CAST_KERNELS(a, b)                                                                                         \
    extern "C" __global__ void cast_flat_##a##_##b(const trr_dt<a>::type *x, const trr_dt<a>::type *y,               \
                                                   trr_dt<b>::type *z, long long n, int vec, unsigned *flag,         \
                                                   unsigned seq) {                                                   \
        (void)y;                                                                                                     \
        cast_flat(x, z, n, vec, flag, seq);                                                                          \
    }                                                                                                                \
    extern "C" __global__ void cast_rows_##a##_##b(const trr_dt<a>::type *x, long long sx,                          \
                                                   const trr_dt<a>::type *y, long long sy, trr_dt<b>::type *z,       \
                                                   long long sz, int rows, int cols, int vec) {                      \
        (void)y;                                                                                                     \
        (void)sy;                                                                                                    \
        cast_rows(x, sx, z, sz, rows, cols, vec);                                                                    \
    }
#define CAST_FROM(a) CAST_KERNELS(a, 0) CAST_KERNELS(a, 1) CAST_KERNELS(a, 2) CAST_KERNELS(a, 4) CAST_KERNELS(a, 5)
CAST_FROM(0)
CAST_FROM(1)
CAST_FROM(2)
CAST_FROM(4)
CAST_FROM(5)

