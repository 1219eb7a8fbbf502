/* Row-wise ops: one work-group of THREADS (a power of two) work-items per row.
 * softmax_regs keeps the row in private registers (PER elements per work-item, so rows up to THREADS·PER) and
 * reads x once; softmax_online handles longer rows with a running max and a rescaled, compensated running sum
 * (one sweep), then a second sweep that writes. row_sum accumulates per work-item with Kahan compensation, then reduces the
 * partial sums as a tree, which keeps the error near a pairwise sum even for rows of 10^5 elements. */

static float wg_max(float v, __local float *red) {
    int lid = (int)get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* red is reused by the next reduction */
    return r;
}

static float wg_sum(float v, __local float *red) {
    int lid = (int)get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] = red[lid] + red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

#ifdef SOFTMAX
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void softmax_regs(
    __global const x_t *x, long xoff, int xs, __global z_t *z, long zoff, int zs, int n) {
    __local float red[THREADS];
    int lid = (int)get_local_id(0);
    long r = (long)get_group_id(0);
    x += xoff + r * xs;
    z += zoff + r * zs;
    float v[PER];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        int c = lid + j * THREADS;
        v[j] = c < n ? LOAD_X(x, c) : -INFINITY;
        m = fmax(m, v[j]);
    }
    m = wg_max(m, red);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < PER; j++) {
        int c = lid + j * THREADS;
        float e = c < n ? exp(v[j] - m) : 0.0f;
        v[j] = e;
        s += e;
    }
    s = wg_sum(s, red);
#pragma unroll
    for (int j = 0; j < PER; j++) {
        int c = lid + j * THREADS;
        if (c < n) STORE_Z(v[j] / s, z, c);
    }
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
#endif

#ifdef ROW_SUM
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void row_sum(
    __global const x_t *x, long xoff, int xs, __global float *z, long zoff, int zs, int n) {
    __local float red[THREADS];
    int lid = (int)get_local_id(0);
    long r = (long)get_group_id(0);
    x += xoff + r * xs;
    float s = 0.0f, comp = 0.0f;
    for (int c = lid; c < n; c += THREADS) {
        float t = LOAD_X(x, c) - comp;
        float u = s + t;
        comp = (u - s) - t;
        s = u;
    }
    s = wg_sum(s, red);
    if (lid == 0) z[zoff + r * zs] = s;
}
#endif
