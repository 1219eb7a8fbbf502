/*
 * Row norms, the kernels of the row-norm shape rule: each row of x [M,N] normalised on its own, scaled by w [N]
 * (and shifted by b [N]), f32 arithmetic, one rounding on store.
 *   rms_norm:   y = x / sqrt(mean(x^2) + eps) * w
 *   layer_norm: y = (x - mean) / sqrt(var + eps) * w + b   (biased variance)
 * Both entry points share one signature and one body (norm_rows<LAYER>), so the host launches either by the op's
 * name. Compile-time: DT (0 f32, 1 f16, 2 bf16); VPT, the 16-byte vectors each thread holds per pass; KIND:
 *   0  a warp per row (rows of up to 32 * VPT vectors), blockDim.x / 32 rows per block: shuffles, no barrier;
 *   1  a block per row held in registers (rows of up to blockDim.x * VPT vectors): x read once, y written once;
 *   2  a block per row of any length: pass one sums chunks of blockDim.x * VPT vectors, pass two reads x again
 *      (mostly from L2: only a wave of rows is in flight) and writes y.
 * layer_norm subtracts the row's first element x0 before summing, so a constant row gives x - mean = 0 and
 * var = 0 exactly (docs/ops.md), and the sums do not grow with the row's offset. Kinds 0 and 1 hold the row and
 * take the variance about the mean in a second pass over the registers; kind 2 takes var = S2/N - (S1/N)^2 from
 * the shifted sums of one pass.
 * flags: 1 every x row starts 16-byte aligned, 2 every y row does, 4 w (and b) are contiguous and 16-byte
 * aligned. Otherwise, and for a row's last partial vector, elements are read and written one by one.
 */
typedef trr_dt<DT>::type T;
typedef trr_vec16<T> V16;

#ifndef VPT
#define VPT 4
#endif
#ifndef KIND
#define KIND 1
#endif

#define VEC (16 / (int)sizeof(T))
#define F_X 1
#define F_Y 2
#define F_W 4

/* x in kinds 0 and 1 is read once: loads that allocate evict-first leave the L2 to other lines (row_sum.cu says
 * why that helps after the bench's fill); kind 2 reads it again and keeps it. */
__device__ __forceinline__ V16 ld_x(const T *p) {
    V16 r;
#if KIND == 2
    *reinterpret_cast<float4 *>(&r) = *reinterpret_cast<const float4 *>(p);
#else
    *reinterpret_cast<float4 *>(&r) = __ldcs(reinterpret_cast<const float4 *>(p));
#endif
    return r;
}

/* The VEC elements of row from column c (element stride s): one 16-byte load when vec and the vector is whole,
 * else one by one, masked at n (masked slots hold zero and are never summed). */
__device__ __forceinline__ V16 load_x(const T *row, int c, int n, bool vec) {
    V16 r;
    if (vec && c + VEC <= n) return ld_x(row + c);
#pragma unroll
    for (int j = 0; j < VEC; j++) r.e[j] = c + j < n ? row[c + j] : trr_from_f32<T>(0.0f);
    return r;
}

/* w or b: shared by every row, read through the read-only path where the rows find them in L1 or L2. */
__device__ __forceinline__ void load_param(const T *p, long long s, int c, int n, bool vec, float *out) {
    if (vec && c + VEC <= n) {
        V16 r;
        *reinterpret_cast<float4 *>(&r) = __ldg(reinterpret_cast<const float4 *>(p + c));
#pragma unroll
        for (int j = 0; j < VEC; j++) out[j] = trr_to_f32(r.e[j]);
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++) out[j] = c + j < n ? trr_to_f32(p[(long long)(c + j) * s]) : 0.0f;
    }
}

__device__ __forceinline__ void store_y(T *row, int c, int n, bool vec, const float *v) {
    if (vec && c + VEC <= n) {
        V16 r;
#pragma unroll
        for (int j = 0; j < VEC; j++) r.e[j] = trr_from_f32<T>(v[j]);
        *reinterpret_cast<V16 *>(row + c) = r;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            if (c + j < n) row[c + j] = trr_from_f32<T>(v[j]);
    }
}

/* Hides what v's registers hold from the compiler, so that a later pass converts them again instead of keeping
 * the earlier pass's floats alive across the reduction: for halves that would double the registers of a row. */
__device__ __forceinline__ void opaque(V16 &v) {
    unsigned *u = reinterpret_cast<unsigned *>(&v);
    asm volatile("" : "+r"(u[0]), "+r"(u[1]), "+r"(u[2]), "+r"(u[3]));
}

/* The sums of a vector of columns c..: of x - a, and of ((x - a) - m)^2. Only a row's last vector can reach past
 * n: the others take no mask, which keeps per-element predicates out of the registers. */
__device__ __forceinline__ float vsum(const V16 &v, float a, int c, int n) {
    float s = 0.0f;
    if (c + VEC <= n) {
#pragma unroll
        for (int j = 0; j < VEC; j++) s += trr_to_f32(v.e[j]) - a;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            if (c + j < n) s += trr_to_f32(v.e[j]) - a;
    }
    return s;
}

__device__ __forceinline__ float vsum_sq(const V16 &v, float a, float m, int c, int n) {
    float s = 0.0f;
    if (c + VEC <= n) {
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float d = (trr_to_f32(v.e[j]) - a) - m;
            s += d * d;
        }
    } else {
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float d = (trr_to_f32(v.e[j]) - a) - m;
            if (c + j < n) s += d * d;
        }
    }
    return s;
}

/* A row's statistics: y = ((x - x0) - md) * scale * w (+ b). rms_norm has x0 = md = 0, which leaves x exact;
 * layer_norm's (x - x0) - md is what its sums saw, exactly 0 on a constant row. */
struct row_stats {
    float x0, md, scale;
};

/* Writes the VEC outputs of columns c.. from their inputs xv. */
template <bool LAYER>
__device__ __forceinline__ void emit(T *yr, const T *w, long long sw, const T *b, long long sb, int c, int n, int flags,
                                     const V16 &xv, const row_stats &st) {
    float wv[VEC], bv[VEC], o[VEC];
    load_param(w, sw, c, n, flags & F_W, wv);
    if (LAYER) load_param(b, sb, c, n, flags & F_W, bv);
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        const float v = ((trr_to_f32(xv.e[j]) - st.x0) - st.md) * st.scale * wv[j];
        o[j] = LAYER ? v + bv[j] : v;
    }
    store_y(yr, c, n, flags & F_Y, o);
}

/* The sum over the threads that share a row: a warp (kind 0) or the block. */
__device__ __forceinline__ float group_sum(float v, float *scratch) {
#if KIND == 0
    (void)scratch;
    return trr_warp_sum(v);
#else
    return trr_block_sum(v, scratch);
#endif
}

/* Kinds 0 and 1: the row in registers, thread `lane` of `lanes` holding vectors lane, lane + lanes, ... */
template <bool LAYER>
__device__ __forceinline__ void row_in_registers(const T *xr, T *yr, const T *w, long long sw, const T *b,
                                                 long long sb, int n, float eps, int flags, int lane, int lanes,
                                                 float *scratch) {
    V16 v[VPT];
#pragma unroll
    for (int i = 0; i < VPT; i++) v[i] = load_x(xr, (i * lanes + lane) * VEC, n, flags & F_X);
    const float inv_n = 1.0f / (float)n;
    row_stats st = {0.0f, 0.0f, 0.0f};
    if (LAYER) {
        st.x0 = trr_to_f32(xr[0]);
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < VPT; i++) s += vsum(v[i], st.x0, (i * lanes + lane) * VEC, n);
        st.md = group_sum(s, scratch) * inv_n;
    }
    /* rms_norm: the sum of x^2; layer_norm: the variance about the mean, from the registers */
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        if (LAYER) opaque(v[i]);
        q += vsum_sq(v[i], st.x0, st.md, (i * lanes + lane) * VEC, n);
    }
    st.scale = rsqrtf(group_sum(q, scratch) * inv_n + eps);
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        const int c = (i * lanes + lane) * VEC;
        opaque(v[i]);
        if (c < n) emit<LAYER>(yr, w, sw, b, sb, c, n, flags, v[i], st);
    }
}

/* Kind 2: rows of any length, in chunks of blockDim.x * VPT vectors. */
template <bool LAYER>
__device__ __forceinline__ void row_looped(const T *xr, T *yr, const T *w, long long sw, const T *b, long long sb,
                                           int n, float eps, int flags, float *scratch) {
    const int lanes = blockDim.x, lane = threadIdx.x, chunk = lanes * VPT * VEC;
    row_stats st = {LAYER ? trr_to_f32(xr[0]) : 0.0f, 0.0f, 0.0f};
    float s1 = 0.0f, s2 = 0.0f;
    for (int c0 = 0; c0 < n; c0 += chunk) {
        V16 v[VPT];
#pragma unroll
        for (int i = 0; i < VPT; i++) v[i] = load_x(xr, c0 + (i * lanes + lane) * VEC, n, flags & F_X);
        /* a chunk's own sums first: the running sums then take one rounding per chunk */
        float p1 = 0.0f, p2 = 0.0f;
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            const int c = c0 + (i * lanes + lane) * VEC;
            if (LAYER) p1 += vsum(v[i], st.x0, c, n);
            p2 += vsum_sq(v[i], st.x0, 0.0f, c, n);
        }
        s1 += p1;
        s2 += p2;
    }
    const float inv_n = 1.0f / (float)n;
    if (LAYER) {
        st.md = trr_block_sum(s1, scratch) * inv_n;
        /* rounding can take the difference below 0 where the variance is 0 or tiny against the shift */
        st.scale = rsqrtf(fmaxf(trr_block_sum(s2, scratch) * inv_n - st.md * st.md, 0.0f) + eps);
    } else {
        st.scale = rsqrtf(trr_block_sum(s2, scratch) * inv_n + eps);
    }
    for (int c0 = 0; c0 < n; c0 += chunk) {
        V16 v[VPT];
#pragma unroll
        for (int i = 0; i < VPT; i++) v[i] = load_x(xr, c0 + (i * lanes + lane) * VEC, n, flags & F_X);
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            const int c = c0 + (i * lanes + lane) * VEC;
            if (c < n) emit<LAYER>(yr, w, sw, b, sb, c, n, flags, v[i], st);
        }
    }
}

template <bool LAYER>
__device__ __forceinline__ void norm_rows(const T *x, long long sx, const T *w, long long sw, const T *b, long long sb,
                                          T *y, long long sy, long long rows, int n, float eps, int flags) {
#if KIND == 0
    const int lane = threadIdx.x & 31, per_block = blockDim.x >> 5;
    /* a whole warp leaves together: its shuffles see all 32 lanes or none */
    for (long long r = (long long)blockIdx.x * per_block + (threadIdx.x >> 5); r < rows;
         r += (long long)gridDim.x * per_block)
        row_in_registers<LAYER>(x + r * sx, y + r * sy, w, sw, b, sb, n, eps, flags, lane, 32, (float *)0);
#else
    __shared__ float scratch[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
#if KIND == 1
        row_in_registers<LAYER>(x + r * sx, y + r * sy, w, sw, b, sb, n, eps, flags, threadIdx.x, blockDim.x,
                                scratch);
#else
        row_looped<LAYER>(x + r * sx, y + r * sy, w, sw, b, sb, n, eps, flags, scratch);
#endif
    }
#endif
}

/* b and sb are unused by rms_norm: both entry points take one argument list. */
extern "C" __global__ void __launch_bounds__(1024)
    rms_norm(const T *x, long long sx, const T *w, long long sw, const T *b, long long sb, T *y, long long sy,
             long long rows, int n, float eps, int flags) {
    norm_rows<false>(x, sx, w, sw, b, sb, y, sy, rows, n, eps, flags);
}

extern "C" __global__ void __launch_bounds__(1024)
    layer_norm(const T *x, long long sx, const T *w, long long sw, const T *b, long long sb, T *y, long long sy,
               long long rows, int n, float eps, int flags) {
    norm_rows<true>(x, sx, w, sw, b, sb, y, sy, rows, n, eps, flags);
}
