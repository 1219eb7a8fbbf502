/* row_sum, THREADS (a power of two) work-items per row: each accumulates with Kahan compensation, then the
 * partial sums reduce as a tree, which keeps the error near a pairwise sum even for rows of 10^5 elements. */

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
