/* silu as a user op in CUDA C, the built-in silu's arithmetic and memory pattern (kernels/cuda/elementwise.cu):
 * four floats a thread through one 16-byte load and store where the row's operands start 16-byte aligned, one
 * float at a time otherwise; bench it beside the built-in (`trireme bench ... silu silu_user`) to see what a
 * user kernel costs against a built-in one. Arguments: docs/custom-ops.md's (x, then y). */
__device__ __forceinline__ float silu_of(float a) {
    const float h = expf(-0.5f * fabsf(a));
    return (a < 0.0f ? a * h * h : a) / (1.0f + h * h);
}

extern "C" __global__ void silu_user(const float *__restrict__ x, float *__restrict__ y, long long xo, long long yo,
                                     int rows, int cols, int xs, int ys) {
    const int r = blockIdx.y;
    if (r >= rows) return;
    const float *xr = x + xo + (long long)r * xs;
    float *yr = y + yo + (long long)r * ys;
    const int c = (blockIdx.x * BLOCK + threadIdx.x) * 4;
    if (((((unsigned long long)xr) | ((unsigned long long)yr)) & 15) == 0 && c + 4 <= cols) {
        float4 v = *(const float4 *)(xr + c);
        v.x = silu_of(v.x), v.y = silu_of(v.y), v.z = silu_of(v.z), v.w = silu_of(v.w);
        *(float4 *)(yr + c) = v;
        return;
    }
    for (int i = c; i < c + 4 && i < cols; i++) yr[i] = silu_of(xr[i]);
}
