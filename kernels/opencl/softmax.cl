/* softmax, THREADS (a power of two) work-items per row. softmax_regs packs ROWS rows into a work-group, keeps the
 * row in private registers (PER elements per work-item, so rows up to THREADS·PER) and reads x once, as
 * 4-element vectors where the rows keep that alignment (VEC); softmax_online handles longer rows with a running
 * max and a rescaled, compensated running sum (one sweep), then a second sweep that writes. The host picks the
 * kernel by the op's name and the kind (_regs, _online). */

/* The reductions of softmax_regs: each work-item leaves its partial in red (one buffer per reduction, so the
 * second needs no barrier to wait for readers of the first); a tree folds them down to 64, and then every
 * work-item reads those 64 as float4 broadcasts and reduces them in the same order. One barrier for a row of up
 * to 64 work-items, where a tree down to one costs one per halving. */
#define RED_W (THREADS < 64 ? THREADS : 64)
#define RED_OP_MAX(p, q) fmax((p), (q))
#define RED_OP_SUM(p, q) ((p) + (q))
#define RED_ALL(NAME, OP)                                                                                      \
    static float NAME(float v, __local float4 *red4) {                                                         \
        __local float *red = (__local float *)red4;                                                            \
        int lid = (int)get_local_id(0) % THREADS;                                                              \
        red[lid] = v;                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                                          \
        for (int s = THREADS / 2; s >= 64; s >>= 1) {                                                          \
            if (lid < s) red[lid] = OP(red[lid], red[lid + s]);                                                \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
        }                                                                                                      \
        if (RED_W < 4) {                                                                                       \
            float r = red[0];                                                                                  \
            for (int i = 1; i < RED_W; i++) r = OP(r, red[i]);                                                 \
            return r;                                                                                          \
        }                                                                                                      \
        float4 r4 = red4[0];                                                                                   \
        _Pragma("unroll") for (int i = 1; i < RED_W / 4; i++) r4 = OP(r4, red4[i]);                           \
        return OP(OP(r4.x, r4.y), OP(r4.z, r4.w));                                                             \
    }
RED_ALL(row_max, RED_OP_MAX)
RED_ALL(row_sum_all, RED_OP_SUM)

/* VEC: the row's elements move as aligned 4-element vectors (rows start on 4-element boundaries, PER is a
 * multiple of 4), work-item lid taking elements 4·(lid + j·THREADS) + {0..3}; a vector that crosses the row's end
 * goes element by element. */
#define VLOAD4_DT_0(p) (*(__global const float4 *)(p))
#define VLOAD4_DT_1(p) trr_vloada_half4(p)
#define VLOAD4_DT_2(p) as_float4(convert_uint4(*(__global const ushort4 *)(p)) << 16)
#define VSTORE4_DT_0(v, p) (*(__global float4 *)(p) = (v))
#define VSTORE4_DT_1(v, p) trr_vstorea_half4_rte((v), (p))
#define VSTORE4_DT_2(v, p) (*(__global ushort4 *)(p) = convert_ushort4(BF16_BITS_RNE(as_uint4(v))))

/* ROWS rows per work-group of THREADS·ROWS work-items, THREADS consecutive ones per row, so that short rows do
 * not make a work-group each; a row past `rows` (the last work-group's padding) loads and stores nothing but
 * still meets the barriers. */
__kernel __attribute__((reqd_work_group_size(THREADS * ROWS, 1, 1))) void softmax_regs(
    __global const x_t *x, long xoff, int xs, __global z_t *z, long zoff, int zs, int n_cols, int rows) {
    __local float4 red_m_all[ROWS * ((THREADS + 3) / 4)];
    __local float4 red_s_all[ROWS * ((THREADS + 3) / 4)];
    int sub = (int)get_local_id(0) / THREADS;
    __local float4 *red_m = red_m_all + sub * ((THREADS + 3) / 4);
    __local float4 *red_s = red_s_all + sub * ((THREADS + 3) / 4);
    int lid = (int)get_local_id(0) % THREADS;
    long r = (long)get_group_id(0) * ROWS + sub;
    int n = r < rows ? n_cols : 0;
    x += xoff + r * xs;
    z += zoff + r * zs;
#if VEC
    /* Every whole vector's load is issued before any is used; the one vector that crosses the row's end, if
     * any, is filled element by element after them. */
    float4 v[PER / 4];
#pragma unroll
    for (int j = 0; j < PER / 4; j++) {
        int c = (lid + j * THREADS) * 4;
        v[j] = c + 3 < n ? CAT(VLOAD4_DT_, X_DT)(x + c) : (float4)(-INFINITY);
    }
    if (n % 4 != 0 && (n / 4) % THREADS == lid) {
        int c = n & ~3;
#pragma unroll
        for (int j = 0; j < PER / 4; j++) {
            if (j == (n / 4) / THREADS) {
                v[j].x = LOAD_X(x, c);
                if (c + 1 < n) v[j].y = LOAD_X(x, c + 1);
                if (c + 2 < n) v[j].z = LOAD_X(x, c + 2);
            }
        }
    }
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < PER / 4; j++) {
        m = fmax(m, fmax(fmax(v[j].x, v[j].y), fmax(v[j].z, v[j].w)));
    }
    m = row_max(m, red_m);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < PER / 4; j++) {
        int c = (lid + j * THREADS) * 4;
        float4 e = exp(v[j] - m);
        if (c + 3 >= n) {
            /* past the row's end: 0, whatever m is */
            e.x = c < n ? e.x : 0.0f;
            e.y = c + 1 < n ? e.y : 0.0f;
            e.z = c + 2 < n ? e.z : 0.0f;
            e.w = 0.0f;
        }
        v[j] = e;
        s += (e.x + e.y) + (e.z + e.w);
    }
    s = row_sum_all(s, red_s);
#pragma unroll
    for (int j = 0; j < PER / 4; j++) {
        int c = (lid + j * THREADS) * 4;
        float4 o = v[j] / s;
        if (c + 3 < n) {
            CAT(VSTORE4_DT_, Z_DT)(o, z + c);
        } else {
            if (c < n) STORE_Z(o.x, z, c);
            if (c + 1 < n) STORE_Z(o.y, z, c + 1);
            if (c + 2 < n) STORE_Z(o.z, z, c + 2);
        }
    }
#else
    float v[PER];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        int c = lid + j * THREADS;
        v[j] = c < n ? LOAD_X(x, c) : -INFINITY;
        m = fmax(m, v[j]);
    }
    m = row_max(m, red_m);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        int c = lid + j * THREADS;
        float e = c < n ? exp(v[j] - m) : 0.0f;
        v[j] = e;
        s += e;
    }
    s = row_sum_all(s, red_s);
#pragma unroll
    for (int j = 0; j < PER; j++) {
        int c = lid + j * THREADS;
        if (c < n) STORE_Z(v[j] / s, z, c);
    }
#endif
}

/* Adds v to the running (m, s, comp): s·e^m is the sum so far, less comp·e^m (Kahan's compensation, which keeps
 * a sum over 10^5 or more elements per work-item at the error of a few roundings). -inf is a masked entry: it
 * adds exactly 0 and never rescales, since exp(-inf - -inf) is NaN. A NaN v makes s NaN for good. */
static void online_add(float v, float *m, float *s, float *comp) {
    float t;
    if (v > *m) {
        float f = exp(*m - v); /* 0 while m is still -inf */
        *s *= f;
        *comp *= f;
        *m = v;
        t = 1.0f;
    } else if (v != -INFINITY) {
        t = exp(v - *m);
    } else {
        return;
    }
    float y = t - *comp;
    float u = *s + y;
    *comp = (u - *s) - y;
    *s = u;
}

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void softmax_online(
    __global const x_t *x, long xoff, int xs, __global z_t *z, long zoff, int zs, int n) {
    __local float red_m[THREADS];
    __local float red_s[THREADS];
    int lid = (int)get_local_id(0);
    long r = (long)get_group_id(0);
    x += xoff + r * xs;
    z += zoff + r * zs;
    float m = -INFINITY, s = 0.0f, comp = 0.0f;
    for (int c = lid; c < n; c += THREADS) online_add(LOAD_X(x, c), &m, &s, &comp);
    red_m[lid] = m;
    red_s[lid] = s - comp;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = THREADS / 2; h > 0; h >>= 1) {
        if (lid < h) {
            float ma = red_m[lid], mb = red_m[lid + h];
            float sa = red_s[lid], sb = red_s[lid + h];
            float mm = fmax(ma, mb);
            /* a partial of nothing but masked entries has m = -inf and s = 0 and contributes nothing; a NaN
             * partial stays NaN whatever its m */
            float ta = sa == 0.0f ? 0.0f : sa * exp(ma - mm);
            float tb = sb == 0.0f ? 0.0f : sb * exp(mb - mm);
            red_m[lid] = mm;
            red_s[lid] = ta + tb;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = red_m[0];
    s = red_s[0];
    /* a row of -inf alone: m = -inf, s = 0, and every output exp(-inf - -inf) / 0 = NaN, the reference's value */
    for (int c = lid; c < n; c += THREADS) STORE_Z(exp(LOAD_X(x, c) - m) / s, z, c);
}
