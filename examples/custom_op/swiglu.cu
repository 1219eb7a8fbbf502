/* swiglu in CUDA C for NVRTC: y = x * silu(g), f32. The arguments are docs/custom-ops.md's: the operands' base
 * pointers (x, g, then y), their offsets in elements, rows and cols, their row strides, then the parameters
 * (none). BLOCK (threads per block) and ITEMS (elements per thread) are the definition's tile parameters, passed
 * as defines. The entry is extern "C" so the runtime finds it by name. silu: see swiglu.cl. */
extern "C" __global__ void swiglu(const float *__restrict__ x, const float *__restrict__ g, float *__restrict__ y,
                                  long long xo, long long go, long long yo, int rows, int cols, int xs, int gs,
                                  int ys) {
    const int r = blockIdx.y;
    const int first = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int c = first + i * BLOCK;
        if (c >= cols || r >= rows) return;
        const float gv = g[go + (long long)r * gs + c];
        const float h = expf(-0.5f * fabsf(gv));
        const float silu = (gv < 0.0f ? gv * h * h : gv) / (1.0f + h * h);
        y[yo + (long long)r * ys + c] = x[xo + (long long)r * xs + c] * silu;
    }
}
