/* swiglu in OpenCL C: y = x * silu(g), f32. The arguments are docs/custom-ops.md's: the operands' buffers (x, g,
 * then y), their offsets in elements, rows and cols, their row strides, then the parameters (none). BLOCK (the
 * work-group size) and ITEMS (elements per work-item) are the definition's tile parameters, passed as defines.
 * silu as x / (1 + e^-x) overflows e^-x below -88; (x < 0 ? x h h : x) / (1 + h h) with h = e^(-|x|/2) does not. */
#pragma OPENCL FP_CONTRACT OFF

__kernel void swiglu(__global const float *x, __global const float *g, __global float *y, long xo, long go, long yo,
                     int rows, int cols, int xs, int gs, int ys) {
    const int r = (int)get_group_id(1);
    const int first = (int)get_group_id(0) * BLOCK * ITEMS + (int)get_local_id(0);
    for (int i = 0; i < ITEMS; i++) {
        const int c = first + i * BLOCK;
        if (c >= cols || r >= rows) return;
        const float gv = g[go + (long)r * gs + c];
        const float h = exp(-0.5f * fabs(gv));
        const float silu = (gv < 0.0f ? gv * h * h : gv) / (1.0f + h * h);
        y[yo + (long)r * ys + c] = x[xo + (long)r * xs + c] * silu;
    }
}
