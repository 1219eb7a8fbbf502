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
 * the shifted sums of one pass, the shift being x0 moved to the first chunk's mean.
 * vec != 0 when every x and y row starts 16-byte aligned, w and b are contiguous and 16-byte aligned, and n is a
 * multiple of the vector: then every access is a whole 16-byte vector. Other calls take row_any, element by
 * element, in every kind: a path of few registers, so that it costs the vector path none.
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

/* w and b: shared by every row, read through the read-only path where the rows find them in L1 or L2. */
__device__ __forceinline__ V16 ld_param(const T *p) {
    V16 r;
    *reinterpret_cast<float4 *>(&r) = __ldg(reinterpret_cast<const float4 *>(p));
    return r;
}

/* Hides what v's registers hold from the compiler, so that a later pass converts them again instead of keeping
 * the earlier pass's floats alive across the reduction. */
__device__ __forceinline__ void opaque(V16 &v) {
    unsigned *u = reinterpret_cast<unsigned *>(&v);
    asm volatile("" : "+r"(u[0]), "+r"(u[1]), "+r"(u[2]), "+r"(u[3]));
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

/* A row's statistics: y = ((x - x0) - md) * scale * w (+ b). rms_norm has x0 = md = 0, which leaves x exact;
 * layer_norm's (x - x0) - md is what its sums saw, exactly 0 on a constant row. */
struct row_stats {
    float x0, md, scale;
};

/* VEC outputs rounded once into a vector: halves two at a time by one instruction where there is one (sm_80 on;
 * a NaN becomes the canonical quiet NaN, as trr_store2 has it). */
__device__ __forceinline__ V16 pack(const float *v) {
    V16 o;
#if __CUDA_ARCH__ >= 800 && DT != 0
    unsigned *u = reinterpret_cast<unsigned *>(&o);
#pragma unroll
    for (int k = 0; k < VEC / 2; k++) {
#if DT == 1
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u[k]) : "f"(v[2 * k + 1]), "f"(v[2 * k]));
#else
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u[k]) : "f"(v[2 * k + 1]), "f"(v[2 * k]));
#endif
    }
#else
#pragma unroll
    for (int j = 0; j < VEC; j++) o.e[j] = trr_from_f32<T>(v[j]);
#endif
    return o;
}

/* The 16-byte vector of outputs at column c from its inputs xv (every pointer aligned, the vector whole). */
template <bool LAYER>
__device__ __forceinline__ void emit_vec(T *yr, const T *w, const T *b, int c, const V16 &xv, const row_stats &st) {
    const V16 wv = ld_param(w + c);
    V16 bv;
    if (LAYER) bv = ld_param(b + c);
    float o[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        const float v = ((trr_to_f32(xv.e[j]) - st.x0) - st.md) * st.scale * trr_to_f32(wv.e[j]);
        o[j] = LAYER ? v + trr_to_f32(bv.e[j]) : v;
    }
    *reinterpret_cast<V16 *>(yr + c) = pack(o);
}

/* Any row, any alignment and element strides of w and b: element by element, lane, lane + lanes, ..., reading x
 * again for each pass (from L1 or L2): the mean, the variance about it (layer_norm), then the output. Few
 * registers, so the vector paths keep theirs. */
template <bool LAYER>
__device__ __forceinline__ void row_any(const T *xr, T *yr, const T *w, long long sw, const T *b, long long sb, int n,
                                        float eps, int lane, int lanes, float *scratch) {
    const float inv_n = 1.0f / (float)n;
    row_stats st = {0.0f, 0.0f, 0.0f};
    if (LAYER) {
        st.x0 = trr_to_f32(xr[0]);
        float s = 0.0f;
        for (int c = lane; c < n; c += lanes) s += trr_to_f32(xr[c]) - st.x0;
        st.md = group_sum(s, scratch) * inv_n;
    }
    float q = 0.0f;
    for (int c = lane; c < n; c += lanes) {
        const float d = (trr_to_f32(xr[c]) - st.x0) - st.md;
        q += d * d;
    }
    st.scale = rsqrtf(group_sum(q, scratch) * inv_n + eps);
    for (int c = lane; c < n; c += lanes) {
        const float v = ((trr_to_f32(xr[c]) - st.x0) - st.md) * st.scale * trr_to_f32(w[(long long)c * sw]);
        yr[c] = trr_from_f32<T>(LAYER ? v + trr_to_f32(b[(long long)c * sb]) : v);
    }
}

/* Kinds 0 and 1, every pointer aligned and n a multiple of VEC: the row in registers, thread `lane` of `lanes`
 * holding vectors lane, lane + lanes, ... */
template <bool LAYER>
__device__ __forceinline__ void row_in_registers(const T *xr, T *yr, const T *w, const T *b, int n, float eps, int lane,
                                                 int lanes, float *scratch) {
    V16 v[VPT];
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        const int c = (i * lanes + lane) * VEC;
        if (c < n) v[i] = ld_x(xr + c);
        else v[i] = V16();
    }
    const float inv_n = 1.0f / (float)n;
    row_stats st = {0.0f, 0.0f, 0.0f};
    if (LAYER) {
        st.x0 = trr_to_f32(xr[0]);
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            if ((i * lanes + lane) * VEC >= n) continue;
#pragma unroll
            for (int j = 0; j < VEC; j++) s += trr_to_f32(v[i].e[j]) - st.x0;
        }
        st.md = group_sum(s, scratch) * inv_n;
    }
    /* rms_norm: the sum of x^2; layer_norm: the variance about the mean, from the registers */
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        if (LAYER) opaque(v[i]);
        if ((i * lanes + lane) * VEC >= n) continue;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float d = (trr_to_f32(v[i].e[j]) - st.x0) - st.md;
            q += d * d;
        }
    }
    st.scale = rsqrtf(group_sum(q, scratch) * inv_n + eps);
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        const int c = (i * lanes + lane) * VEC;
        opaque(v[i]);
        if (c < n) emit_vec<LAYER>(yr, w, b, c, v[i], st);
    }
}

/* Kind 2's chunk: VPT vectors a thread from column c0 (those past n zero, never summed). */
__device__ __forceinline__ void load_chunk(const T *xr, int c0, int n, int lane, int lanes, V16 *v) {
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        const int c = c0 + (i * lanes + lane) * VEC;
        v[i] = c < n ? ld_x(xr + c) : V16();
    }
}

/* Adds a chunk's sums of x - shift and (x - shift)^2 to s1 and s2: the chunk's own sums first, so that the
 * running sums take one rounding per chunk. */
__device__ __forceinline__ void chunk_sums(const V16 *v, int c0, int n, int lane, int lanes, float shift, float &s1,
                                           float &s2) {
    float p1 = 0.0f, p2 = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; i++) {
        if (c0 + (i * lanes + lane) * VEC >= n) continue;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const float d = trr_to_f32(v[i].e[j]) - shift;
            p1 += d;
            p2 += d * d;
        }
    }
    s1 += p1;
    s2 += p2;
}

/* Kind 2, every pointer aligned and n a multiple of VEC: rows of any length in chunks of blockDim.x * VPT
 * vectors, var = S2/N - (S1/N)^2 from one pass's sums of x - shift. layer_norm's shift is x0 plus the mean of
 * x - x0 over the first chunk: near the row's mean, so the difference loses little to cancellation even where x0
 * is far out, and still exactly x0 on a constant row. */
template <bool LAYER>
__device__ __forceinline__ void row_looped(const T *xr, T *yr, const T *w, const T *b, int n, float eps,
                                           float *scratch) {
    const int lanes = blockDim.x, lane = threadIdx.x, chunk = lanes * VPT * VEC;
    row_stats st = {0.0f, 0.0f, 0.0f};
    float s1 = 0.0f, s2 = 0.0f;
    V16 v[VPT];
    load_chunk(xr, 0, n, lane, lanes, v);
    if (LAYER) {
        const float x0 = trr_to_f32(xr[0]);
        float p = 0.0f;
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            if ((i * lanes + lane) * VEC >= n) continue;
#pragma unroll
            for (int j = 0; j < VEC; j++) p += trr_to_f32(v[i].e[j]) - x0;
        }
        st.x0 = x0 + trr_block_sum(p, scratch) / (float)(n < chunk ? n : chunk);
    }
    chunk_sums(v, 0, n, lane, lanes, st.x0, s1, s2);
    for (int c0 = chunk; c0 < n; c0 += chunk) {
        load_chunk(xr, c0, n, lane, lanes, v);
        chunk_sums(v, c0, n, lane, lanes, st.x0, s1, s2);
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
        load_chunk(xr, c0, n, lane, lanes, v);
#pragma unroll
        for (int i = 0; i < VPT; i++) {
            const int c = c0 + (i * lanes + lane) * VEC;
            if (c < n) emit_vec<LAYER>(yr, w, b, c, v[i], st);
        }
    }
}

template <bool LAYER>
__device__ __forceinline__ void norm_rows(const T *x, long long sx, const T *w, long long sw, const T *b, long long sb,
                                          T *y, long long sy, long long rows, int n, float eps, int vec) {
#if KIND == 0
    const int lane = threadIdx.x & 31, per_block = blockDim.x >> 5;
    /* a whole warp leaves together: its shuffles see all 32 lanes or none */
    for (long long r = (long long)blockIdx.x * per_block + (threadIdx.x >> 5); r < rows;
         r += (long long)gridDim.x * per_block) {
        if (vec) row_in_registers<LAYER>(x + r * sx, y + r * sy, w, b, n, eps, lane, 32, (float *)0);
        else row_any<LAYER>(x + r * sx, y + r * sy, w, sw, b, sb, n, eps, lane, 32, (float *)0);
    }
#else
    __shared__ float scratch[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        if (vec) {
#if KIND == 1
            row_in_registers<LAYER>(x + r * sx, y + r * sy, w, b, n, eps, threadIdx.x, blockDim.x, scratch);
#else
            row_looped<LAYER>(x + r * sx, y + r * sy, w, b, n, eps, scratch);
#endif
        } else {
            row_any<LAYER>(x + r * sx, y + r * sy, w, sw, b, sb, n, eps, threadIdx.x, blockDim.x, scratch);
        }
    }
#endif
}

/* b and sb are unused by rms_norm: both entry points take one argument list. */
extern "C" __global__ void __launch_bounds__(1024)
    rms_norm(const T *x, long long sx, const T *w, long long sw, const T *b, long long sb, T *y, long long sy,
             long long rows, int n, float eps, int vec) {
    norm_rows<false>(x, sx, w, sw, b, sb, y, sy, rows, n, eps, vec);
}

extern "C" __global__ void __launch_bounds__(1024)
    layer_norm(const T *x, long long sx, const T *w, long long sw, const T *b, long long sb, T *y, long long sy,
               long long rows, int n, float eps, int vec) {
    norm_rows<true>(x, sx, w, sw, b, sb, y, sy, rows, n, eps, vec);
}
