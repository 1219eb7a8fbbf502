/* silu as a user op in OpenCL C, as the built-in's (kernels/opencl/elementwise.cl): four floats a work-item through
 * vload4 / vstore4, no contraction, the same expression. Arguments: docs/custom-ops.md's (x, then y). */
#pragma OPENCL FP_CONTRACT OFF
#define SILU_H(x) exp(-0.5f * fabs(x))
#define SILU(x) (((x) < 0.0f ? (x) * SILU_H(x) * SILU_H(x) : (x)) / (1.0f + SILU_H(x) * SILU_H(x)))

__kernel void silu_user(__global const float *x, __global float *y, long xo, long yo, int rows, int cols, int xs,
                        int ys) {
    const int r = (int)get_group_id(1);
    if (r >= rows) return;
    __global const float *xr = x + xo + (long)r * xs;
    __global float *yr = y + yo + (long)r * ys;
    const int v = (int)get_global_id(0), c = v * 4;
    if (c + 4 <= cols) {
        const float4 a = vload4(v, xr);
        vstore4(SILU(a), v, yr);
        return;
    }
    for (int i = c; i < cols; i++) {
        const float a = xr[i];
        yr[i] = SILU(a);
    }
}
