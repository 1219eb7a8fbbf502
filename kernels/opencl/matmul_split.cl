/* The last pass of a split-K matmul (core/matmul_split.h): C = act(sum of the K slices' f32 partial products).
 * part holds the slices' M x N matrices one after another (row stride ldp, slice stride pbs), `slices` of them;
 * each work-item adds one output's partials in slice order, so the result does not depend on the grid, applies the
 * epilogue (epi: 1 relu, 2 leaky_relu with slope alpha, 3 gelu) and stores C in its dtype (Z_DT), rounded once. */

__kernel void matmul_split(__global const float *part, long po, int ldp, long pbs, int slices, __global z_t *c,
                           long co, int ldc, int M, int N, int epi, float alpha) {
    const long e = get_global_id(0);
    if (e >= (long)M * N) return;
    const int row = (int)(e / N), col = (int)(e % N);
    __global const float *p = part + po + (long)row * ldp + col;
    float sum = 0.0f;
    for (int s = 0; s < slices; s++) sum += p[(long)s * pbs];
    float v = sum;
    if (epi == 1) v = v <= 0.0f ? 0.0f : v; /* a NaN stays NaN */
    else if (epi == 2) v = v >= 0.0f ? v : alpha * v;
    else if (epi == 3) v = GELU(v);
    STORE_Z(v, c, co + (long)row * ldc + col);
}
