/* Row norms, one kernel per op, named as the op (the host creates the kernel by the op's name):
 *   rms_norm:   y = x / sqrt(mean(x^2) + eps) * w
 *   layer_norm: y = (x - mean) / sqrt(var + eps) * w + b   (biased variance)
 * x, w, b and y share one dtype (X_DT; Z_DT names the same one for STORE_Z); arithmetic is f32, y is rounded once.
 *
 * THREADS (a power of two) work-items share a row; a work-group holds ROWS rows of THREADS work-items each, so
 * short rows still make work-groups large enough to keep a compute unit busy. A work-item moves VW consecutive
 * elements at a time (VW > 1 only where every row of x and y, w and b start on VW-element boundaries and w, b
 * are contiguous); vector i of a row covers elements i·VW .. i·VW + VW - 1, and work-item lid takes vectors
 * lid, lid + THREADS, ..., so each load instruction of a row's work-items reads one contiguous span.
 *
 * PER > 0: the row is held in private memory, PER vectors a work-item (rows up to THREADS·PER·VW): x is read
 * once, every load issued before the first use. layer_norm then takes the mean of x - x0 and the centered sum
 * of squares in two reductions; rms_norm one.
 * PER == 0 (rows longer than that): one sweep for the sums, a second that reads x again and writes y. Each
 * work-item's loops run n / (THREADS·VW) times a sweep, and its sums are Kahan-compensated vectors.
 *
 * layer_norm subtracts the row's first element x0 before summing: a constant row gives exactly zero sums,
 * hence y = 0·inv·w + b = b exactly (docs/ops.md); the shifted sums also keep their accuracy when the mean is
 * large against the spread.
 *
 * Every work-item of a work-group meets every barrier: a padding row (past `rows`, in the last work-group)
 * reads and writes nothing (n = 0) but takes part in the reductions. */

#ifndef SHFL
#define SHFL 0
#endif

#if VW == 1
typedef float vf;
#else
typedef CAT(float, VW) vf;
typedef CAT(int, VW) vi;
typedef CAT(uint, VW) vu;
typedef CAT(ushort, VW) vus;
#endif

#if VW == 2
#define LANE_INDEX ((vi)(0, 1))
#elif VW == 4
#define LANE_INDEX ((vi)(0, 1, 2, 3))
#elif VW == 8
#define LANE_INDEX ((vi)(0, 1, 2, 3, 4, 5, 6, 7))
#endif

/* whole aligned vectors of VW elements, as f32 */
#define VLOAD_DT_0(p) (*(__global const vf *)(p))
#define VLOAD_DT_1(p) CAT(trr_vloada_half, VW)(p)
#define VLOAD_DT_2(p) CAT(as_float, VW)(CAT(convert_uint, VW)(*(__global const vus *)(p)) << 16)
#define VSTORE_DT_0(v, p) (*(__global vf *)(p) = (v))
#define VSTORE_DT_1(v, p) CAT(CAT(trr_vstorea_half, VW), _rte)((v), (p))
#define VSTORE_DT_2(v, p) (*(__global vus *)(p) = CAT(convert_ushort, VW)(BF16_BITS_RNE(CAT(as_uint, VW)(v))))

inline float hsum(vf v) {
#if VW == 1
    return v;
#elif VW == 2
    return v.s0 + v.s1;
#elif VW == 4
    return (v.s0 + v.s1) + (v.s2 + v.s3);
#else
    return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7));
#endif
}

/* v with its lanes at or past the row's end set to 0 (the vector starts at element c) */
inline vf mask_past(vf v, int c, int n) {
#if VW == 1
    return c < n ? v : 0.0f;
#else
    return select((vf)(0.0f), v, (vi)(c) + LANE_INDEX < (vi)(n));
#endif
}

/* The vector at element c of a run of n elements (x's row, or w or b, contiguous when VW > 1; element stride s
 * when VW == 1): lanes past n read as 0. */
inline vf load_vec(__global const x_t *p, int c, int n, long s) {
#if VW == 1
    return c < n ? LOAD_X(p, c * s) : 0.0f;
#else
    (void)s;
    if (c + VW <= n) return CAT(VLOAD_DT_, X_DT)(p + c);
    float t[VW];
#pragma unroll
    for (int i = 0; i < VW; i++) t[i] = c + i < n ? LOAD_X(p, c + i) : 0.0f;
    return CAT(vload, VW)(0, t);
#endif
}

/* Stores the lanes of v that lie in the row (the vector starts at element c). */
inline void store_vec(vf v, __global z_t *p, int c, int n) {
#if VW == 1
    if (c < n) STORE_Z(v, p, c);
#else
    if (c + VW <= n) {
        CAT(VSTORE_DT_, Z_DT)(v, p + c);
        return;
    }
    float t[VW];
    CAT(vstore, VW)(v, 0, t);
#pragma unroll
    for (int i = 0; i < VW; i++)
        if (c + i < n) STORE_Z(t[i], p, c + i);
#endif
}

/* The sum of v over the THREADS work-items of this work-item's row, returned to all of them. red is THREADS·ROWS
 * slots (16-byte aligned), used by this reduction alone, so consecutive reductions need no barrier between them.
 * The partials fold as a tree down to RED_W, which every work-item then adds in the same order, four at a time
 * where it can: one barrier for rows of up to 32 work-items. */
#define RED_W (THREADS < 32 ? THREADS : 32)
#define RED_FOLD                                                                                               \
    const int lid = (int)get_local_id(0) % THREADS;                                                            \
    red += ((int)get_local_id(0) / THREADS) * THREADS;                                                         \
    red[lid] = v;                                                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                              \
    for (int s = THREADS / 2; s >= RED_W; s >>= 1) {                                                           \
        if (lid < s) red[lid] = red[lid] + red[lid + s];                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                          \
    }

#if PER > 0
#if SHFL
/* SHFL (NVIDIA's compiler only; the host sets it where the inline-PTX probe passed, and the work-group is whole
 * warps): each warp's lanes of a row sum by butterfly shuffles, whose two partners add the same two values, so
 * every lane ends with the same bits; rows of more than 32 work-items then add their warps' sums through local
 * memory, one barrier. */
#define SEG (THREADS < 32 ? THREADS : 32)
inline float seg_sum(float v) {
#pragma unroll
    for (int o = SEG / 2; o > 0; o >>= 1) {
        float t;
        asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(t) : "f"(v), "r"(o));
        v += t;
    }
    return v;
}

static float row_sum1(float v, __local float *red) {
    v = seg_sum(v);
#if THREADS > 32
    const int lid = (int)get_local_id(0) % THREADS;
    red += ((int)get_local_id(0) / THREADS) * (THREADS / 32);
    if (lid % 32 == 0) red[lid / 32] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    v = red[0];
#pragma unroll
    for (int i = 1; i < THREADS / 32; i++) v += red[i];
#else
    (void)red;
#endif
    return v;
}
#else
static float row_sum1(float v, __local float *red) {
    RED_FOLD
#if RED_W >= 4
    __local const float4 *q = (__local const float4 *)red;
    float4 r = q[0];
#pragma unroll
    for (int i = 1; i < RED_W / 4; i++) r = r + q[i];
    return (r.x + r.y) + (r.z + r.w);
#else
    float r = red[0];
#pragma unroll
    for (int i = 1; i < RED_W; i++) r = r + red[i];
    return r;
#endif
}
#endif

#else
static float2 row_sum2(float2 v, __local float2 *red) {
    RED_FOLD
    float2 r = red[0];
#pragma unroll
    for (int i = 1; i < RED_W; i++) r = r + red[i];
    return r;
}
#endif

/* The arguments, in the public convention for row ops (docs/custom-ops.md, Row ops), so a user op defined with
 * this file's text runs these kernels as they are: the operands' buffers (x, w, [b,] y), their offsets, rows and
 * cols, their strides (x and y: row strides; w and b: element strides), then eps. */
#define RMS_ARGS                                                                                               \
    __global const x_t *x, __global const x_t *w, __global z_t *z, long xoff, long woff, long zoff, int rows,   \
        int n_cols, int xs, int ws, int zs, float eps
#define LAYER_ARGS                                                                                             \
    __global const x_t *x, __global const x_t *w, __global const x_t *b, __global z_t *z, long xoff, long woff, \
        long boff, long zoff, int rows, int n_cols, int xs, int ws, int bs, int zs, float eps

/* The row this work-item works on: sets n (0 for a padding row) and moves x and z to the row's start. */
#define ROW_SETUP                                                                                              \
    const int lid = (int)get_local_id(0) % THREADS;                                                            \
    const long r = (long)get_group_id(0) * ROWS + (long)get_local_id(0) / THREADS;                             \
    const int n = r < rows ? n_cols : 0;                                                                       \
    x += xoff + (r < rows ? r : 0) * xs;                                                                       \
    z += zoff + (r < rows ? r : 0) * zs;                                                                       \
    w += woff

#define WG_SIZE (THREADS * ROWS)

#if PER > 0

/* x's row into v[0 .. PER), every load issued before any is used */
#define LOAD_ROW(v)                                                                                            \
    _Pragma("unroll") for (int j = 0; j < PER; j++) v[j] = load_vec(x, (j * THREADS + lid) * VW, n, 1)

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void rms_norm(RMS_ARGS) {
    __local float4 red[(WG_SIZE + 3) / 4];
    ROW_SETUP;
    vf v[PER];
    LOAD_ROW(v);
    vf acc = 0.0f;
#pragma unroll
    for (int j = 0; j < PER; j++) acc += v[j] * v[j]; /* lanes past the row are 0 */
    const float inv = rsqrt(row_sum1(hsum(acc), (__local float *)red) / (float)n + eps);
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int c = (j * THREADS + lid) * VW;
        if (c < n) store_vec(v[j] * inv * load_vec(w, c, n, ws), z, c, n);
    }
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void layer_norm(LAYER_ARGS) {
    __local float4 red_mean[(WG_SIZE + 3) / 4];
    __local float4 red_var[(WG_SIZE + 3) / 4];
    ROW_SETUP;
    b += boff;
    vf v[PER];
    LOAD_ROW(v);
    const float x0 = n > 0 ? LOAD_X(x, 0) : 0.0f;
    vf acc = 0.0f;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int c = (j * THREADS + lid) * VW;
        v[j] = v[j] - x0;
        if (c + VW > n) v[j] = mask_past(v[j], c, n);
        acc += v[j];
    }
    const float m1 = row_sum1(hsum(acc), (__local float *)red_mean) / (float)n; /* the mean of x - x0 */
    acc = 0.0f;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int c = (j * THREADS + lid) * VW;
        vf d = v[j] - m1;
        if (c + VW > n) d = mask_past(d, c, n);
        acc += d * d;
    }
    const float inv = rsqrt(row_sum1(hsum(acc), (__local float *)red_var) / (float)n + eps);
#pragma unroll
    for (int j = 0; j < PER; j++) {
        const int c = (j * THREADS + lid) * VW;
        if (c < n) store_vec((v[j] - m1) * inv * load_vec(w, c, n, ws) + load_vec(b, c, n, bs), z, c, n);
    }
}

#else

/* s += t with Kahan's compensation comp */
#define KAHAN_ADD(s, comp, t)                                                                                  \
    do {                                                                                                       \
        const vf y_ = (t) - (comp);                                                                            \
        const vf u_ = (s) + y_;                                                                                \
        (comp) = (u_ - (s)) - y_;                                                                              \
        (s) = u_;                                                                                              \
    } while (0)

#define STEP (THREADS * VW)

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void rms_norm(RMS_ARGS) {
    __local float2 red[WG_SIZE];
    ROW_SETUP;
    vf s = 0.0f, comp = 0.0f;
    for (int c = lid * VW; c < n; c += STEP) {
        const vf v = load_vec(x, c, n, 1);
        KAHAN_ADD(s, comp, v * v);
    }
    const float ss = row_sum2((float2)(hsum(s - comp), 0.0f), red).x;
    const float inv = rsqrt(ss / (float)n + eps);
    for (int c = lid * VW; c < n; c += STEP) store_vec(load_vec(x, c, n, 1) * inv * load_vec(w, c, n, ws), z, c, n);
}

__kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1))) void layer_norm(LAYER_ARGS) {
    __local float2 red[WG_SIZE];
    ROW_SETUP;
    b += boff;
    const float x0 = n > 0 ? LOAD_X(x, 0) : 0.0f;
    vf s1 = 0.0f, c1 = 0.0f, s2 = 0.0f, c2 = 0.0f;
    for (int c = lid * VW; c < n; c += STEP) {
        vf a = load_vec(x, c, n, 1) - x0;
        if (c + VW > n) a = mask_past(a, c, n);
        KAHAN_ADD(s1, c1, a);
        KAHAN_ADD(s2, c2, a * a);
    }
    const float2 sums = row_sum2((float2)(hsum(s1 - c1), hsum(s2 - c2)), red);
    const float m1 = sums.x / (float)n; /* the mean of x - x0 */
    const float var = fmax(sums.y / (float)n - m1 * m1, 0.0f);
    const float inv = rsqrt(var + eps);
    for (int c = lid * VW; c < n; c += STEP)
        store_vec(((load_vec(x, c, n, 1) - x0) - m1) * inv * load_vec(w, c, n, ws) + load_vec(b, c, n, bs), z, c,
                  n);
}

#endif
