/* silu as a user op in OpenCL C, with the structure of the built-in's flat kernel (kernels/opencl/elementwise.cl):
 * VEC consecutive floats a work-item, loaded through vector pointers where the row's operands start on a VEC
 * boundary (the built-in's ALIGNED build) and through vloadVEC elsewhere, the row's tail one by one; no
 * contraction, the same expression. The tile parameters are the built-in's config fields, so one config means the
 * same kernel shape for both: THREADS (threads), VEC (vector_width) and BLOCK_N (block_n, elements a work-group:
 * EPT = BLOCK_N / (THREADS * VEC) vectors a work-item, EPT apart by THREADS, 1 at the built-in's default).
 * Arguments: docs/custom-ops.md's (x, then y). */
#pragma OPENCL FP_CONTRACT OFF
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC == 1
#define floatV float
#define VLOAD(i, p) ((p)[i])
#define VSTORE(v, i, p) ((p)[i] = (v))
#else
#define floatV CAT(float, VEC)
#define VLOAD(i, p) CAT(vload, VEC)((i), (p))
#define VSTORE(v, i, p) CAT(vstore, VEC)((v), (i), (p))
#endif
#define EPT_ (BLOCK_N / (THREADS * VEC))
#define EPT (EPT_ > 0 ? EPT_ : 1)
#define SILU_H(x) exp(-0.5f * fabs(x))
#define SILU(x) (((x) < 0.0f ? (x) * SILU_H(x) * SILU_H(x) : (x)) / (1.0f + SILU_H(x) * SILU_H(x)))

__kernel void silu_user(__global const float *x, __global float *y, long xo, long yo, int rows, int cols, int xs,
                        int ys) {
    const int r = (int)get_group_id(1);
    if (r >= rows) return;
    const long x0 = xo + (long)r * xs, y0 = yo + (long)r * ys;
    __global const float *xr = x + x0;
    __global float *yr = y + y0;
    const int aligned = x0 % VEC == 0 && y0 % VEC == 0;
    const int first = (int)get_group_id(0) * THREADS * EPT + (int)get_local_id(0); /* in vectors */
    for (int e = 0; e < EPT; e++) {
        const int v = first + e * THREADS, c = v * VEC;
        if (c + VEC <= cols) {
            if (aligned) {
                const floatV a = ((__global const floatV *)xr)[v];
                ((__global floatV *)yr)[v] = SILU(a);
            } else {
                const floatV a = VLOAD(v, xr);
                VSTORE(SILU(a), v, yr);
            }
        } else {
            for (int i = c; i < cols; i++) {
                const float a = xr[i];
                yr[i] = SILU(a);
            }
            return;
        }
    }
}
