/* add_rms_norm in CUDA C (NVRTC), a row op: h = x + r, y = h / sqrt(mean(h^2) + eps) * w, f32. The arguments are
 * docs/custom-ops.md's for row ops: the operands' base pointers (x, r, w, then y, h), their offsets in elements,
 * rows and cols, their strides (x, r, y, h: row strides; w: its element stride), then eps. One block per row;
 * THREADS, the block size, is the definition's tile parameter (a power of two), passed as a define. The
 * arithmetic is add_rms_norm.cl's. */
extern "C" __global__ void add_rms_norm(const float *x, const float *r, const float *w, float *y, float *h,
                                        long long xo, long long ro, long long wo, long long yo, long long ho,
                                        int rows, int cols, int xs, int rs, int ws, int ys, int hs, float eps) {
    __shared__ float part[THREADS];
    const int row = (int)blockIdx.x, t = (int)threadIdx.x; /* one block per row: none is past the last */
    (void)rows;
    x += xo + (long long)row * xs;
    r += ro + (long long)row * rs;
    w += wo;
    y += yo + (long long)row * ys;
    h += ho + (long long)row * hs;
    float ss = 0.0f;
    for (int c = t; c < cols; c += THREADS) {
        const float v = __fadd_rn(x[c], r[c]);
        h[c] = v;
        ss = __fadd_rn(ss, __fmul_rn(v, v));
    }
    part[t] = ss;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    const float rstd = 1.0f / sqrtf(part[0] / (float)cols + eps);
    for (int c = t; c < cols; c += THREADS) y[c] = __fmul_rn(__fmul_rn(h[c], rstd), w[(long long)c * ws]);
}
