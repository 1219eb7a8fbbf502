/* add_rms_norm in OpenCL C, a row op: h = x + r (the residual sum, an output too), y = h / sqrt(mean(h^2) + eps)
 * * w, f32. The arguments are docs/custom-ops.md's for row ops: the operands' buffers (x, r, w, then y, h), their
 * offsets in elements, rows and cols, their strides (x, r, y, h: row strides; w: its element stride), then the
 * parameter eps. One work-group per row (the launch rule's groups M); THREADS, the work-group size, is the
 * definition's tile parameter (a power of two), passed as a define. */
#pragma OPENCL FP_CONTRACT OFF

__kernel void add_rms_norm(__global const float *x, __global const float *r, __global const float *w,
                           __global float *y, __global float *h, long xo, long ro, long wo, long yo, long ho,
                           int rows, int cols, int xs, int rs, int ws, int ys, int hs, float eps) {
    __local float part[THREADS];
    /* the launch rule gives exactly one work-group per row (rows of them), so no work-group is past the last */
    const int row = (int)get_group_id(0), t = (int)get_local_id(0);
    (void)rows;
    x += xo + (long)row * xs;
    r += ro + (long)row * rs;
    w += wo;
    y += yo + (long)row * ys;
    h += ho + (long)row * hs;
    /* each work-item sums the squares of its columns (t, t + THREADS, ...) and keeps h for the second pass: it
     * reads back only what it wrote itself */
    float ss = 0.0f;
    for (int c = t; c < cols; c += THREADS) {
        const float v = x[c] + r[c];
        h[c] = v;
        ss += v * v;
    }
    part[t] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float rstd = 1.0f / sqrt(part[0] / (float)cols + eps);
    for (int c = t; c < cols; c += THREADS) y[c] = h[c] * rstd * w[(long)c * ws];
}
