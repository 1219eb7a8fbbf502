/*
 * softmax over rows: y[r,:] = exp(x[r,:] - max) / sum(exp(x[r,:] - max)).
 * Compile-time: DT (0 f32, 1 f16, 2 bf16), THREADS per block, ITEMS (elements each thread holds, a multiple of VEC);
 * both fixed so the launch bound caps registers at what THREADS allows. One block per row.
 * softmax_rows keeps the whole row in registers (N <= THREADS * ITEMS), so x is read once and y written
 * once: the single pass that makes this op memory-bound. softmax_online serves longer rows: pass one keeps a
 * running (max, sum) per thread and rescales the sum when the max grows, pass two re-reads x (largely from L2,
 * as only a wave of rows is in flight) and writes y.
 * softmax_warp (the subgroup variant) gives each warp a row of up to 32 * ITEMS columns and a block THREADS / 32
 * rows: the reductions are shuffles alone, with no barrier, and short rows fill an SM with few, full blocks.
 * vec != 0 when every row starts 16-byte aligned; then full vectors load as one 16-byte access.
 */
typedef trr_dt<DT>::type T;

#define VEC (16 / (int)sizeof(T))
#define NVEC (ITEMS / VEC)
#define NEG_INF (-__int_as_float(0x7f800000))

/* Loads the VEC elements starting at column c (masked past n, filled with fill). */
__device__ __forceinline__ void sm_load(const T *row, int c, int n, int vec, float fill, float *v) {
    if (vec && c + VEC <= n) {
        trr_vec16<T> w = *(const trr_vec16<T> *)(row + c);
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] = trr_to_f32(w.e[j]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] = c + j < n ? trr_to_f32(row[c + j]) : fill;
    }
}

__device__ __forceinline__ void sm_store(T *row, int c, int n, int vec, const float *v) {
    if (vec && c + VEC <= n) {
        trr_vec16<T> w;
#pragma unroll
        for (int j = 0; j < VEC; j++) w.e[j] = trr_from_f32<T>(v[j]);
        *(trr_vec16<T> *)(row + c) = w;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            if (c + j < n) row[c + j] = trr_from_f32<T>(v[j]);
    }
}

/* The single-pass softmax of a row held in registers, slot i of this thread at column (i * stride + first) * VEC:
 * the loads and this thread's maximum, e^(v - m) and its sum, the scaled stores; the caller reduces across the
 * threads that share the row (a block or a warp). */
__device__ __forceinline__ float sm_load_max(const T *row, int first, int stride, int n, int vec,
                                             float (&v)[NVEC][VEC]) {
    float m = NEG_INF;
#pragma unroll
    for (int i = 0; i < NVEC; i++) {
        sm_load(row, (i * stride + first) * VEC, n, vec, NEG_INF, v[i]);
#pragma unroll
        for (int j = 0; j < VEC; j++) m = fmaxf(m, v[i][j]);
    }
    return m;
}
__device__ __forceinline__ float sm_exp_sum(float (&v)[NVEC][VEC], float m) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < NVEC; i++) {
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            v[i][j] = expf(v[i][j] - m); /* masked slots hold -inf and give 0 */
            s += v[i][j];
        }
    }
    return s;
}
__device__ __forceinline__ void sm_scale_store(T *row, int first, int stride, int n, int vec, float (&v)[NVEC][VEC],
                                               float inv) {
#pragma unroll
    for (int i = 0; i < NVEC; i++) {
#pragma unroll
        for (int j = 0; j < VEC; j++) v[i][j] *= inv;
        sm_store(row, (i * stride + first) * VEC, n, vec, v[i]);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_rows(const T *x, long long sx, T *y, long long sy, int rows, int n, int vec) {
    __shared__ float scratch[32];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + (long long)r * sx;
        T *yr = y + (long long)r * sy;
        float v[NVEC][VEC];
        const float m = trr_block_max(sm_load_max(xr, threadIdx.x, THREADS, n, vec, v), scratch);
        const float inv = 1.0f / trr_block_sum(sm_exp_sum(v, m), scratch);
        sm_scale_store(yr, threadIdx.x, THREADS, n, vec, v, inv);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_warp(const T *x, long long sx, T *y, long long sy, int rows, int n, int vec) {
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * (THREADS / 32) + (threadIdx.x >> 5);
    if (r >= rows) return; /* a whole warp: the shuffles below see all 32 lanes or none */
    const T *xr = x + (long long)r * sx;
    T *yr = y + (long long)r * sy;
    float v[NVEC][VEC];
    const float m = trr_warp_max(sm_load_max(xr, lane, 32, n, vec, v));
    const float inv = 1.0f / trr_warp_sum(sm_exp_sum(v, m));
    sm_scale_store(yr, lane, 32, n, vec, v, inv);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax_online(const T *x, long long sx, T *y, long long sy, int rows, int n, int vec) {
    __shared__ float scratch[32];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + (long long)r * sx;
        T *yr = y + (long long)r * sy;
        /* s·e^m is this thread's sum so far, less comp·e^m (Kahan's compensation: rows of 2^20 over few threads
         * keep the error of a few roundings) */
        float m = NEG_INF, s = 0.0f, comp = 0.0f;
        for (int c0 = 0; c0 < n; c0 += THREADS * ITEMS) {
            float v[NVEC][VEC];
            float cm = NEG_INF;
            bool nan = false;
#pragma unroll
            for (int i = 0; i < NVEC; i++) {
                sm_load(xr, c0 + (i * THREADS + threadIdx.x) * VEC, n, vec, NEG_INF, v[i]);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    cm = fmaxf(cm, v[i][j]); /* fmaxf passes over NaN */
                    nan |= v[i][j] != v[i][j];
                }
            }
            if (nan) s = __int_as_float(0x7fc00000); /* the row is NaN; s stays NaN from here on */
            if (cm == NEG_INF) continue; /* nothing but masked entries (-inf) in this chunk for this thread */
            float nm = fmaxf(m, cm);
            float f = expf(m - nm); /* 0 while m is still -inf */
            s *= f;
            comp *= f;
            m = nm;
            float cs = 0.0f;
#pragma unroll
            for (int i = 0; i < NVEC; i++)
#pragma unroll
                for (int j = 0; j < VEC; j++) cs += expf(v[i][j] - m); /* masked entries add exactly 0 */
            float t = cs - comp;
            float u = s + t;
            comp = (u - s) - t;
            s = u;
        }
        s -= comp;
        float bm = trr_block_max(m, scratch);
        /* a thread that saw only masked entries (s = 0) adds nothing; a NaN s makes the row NaN, whatever m */
        float part = s == 0.0f ? 0.0f : s * expf(m - bm);
        /* a row of -inf alone: bm = -inf, sum 0, and every output exp(-inf - -inf) / 0 = NaN, as the float64
         * definition gives */
        float inv = 1.0f / trr_block_sum(part, scratch);
        for (int c0 = 0; c0 < n; c0 += THREADS * ITEMS) {
#pragma unroll
            for (int i = 0; i < NVEC; i++) {
                int c = c0 + (i * THREADS + threadIdx.x) * VEC;
                float v[VEC];
                sm_load(xr, c, n, vec, NEG_INF, v);
#pragma unroll
                for (int j = 0; j < VEC; j++) v[j] = expf(v[j] - bm) * inv;
                sm_store(yr, c, n, vec, v);
            }
        }
    }
}
