/* swiglu in CUDA C for NVRTC: y = x * silu(g), f32. The arguments are docs/custom-ops.md's: the operands' base
 * pointers (x, g, then y), their offsets in elements, rows and cols, their row strides, then the parameters
 * (none). BLOCK (threads per block) and ITEMS (elements per thread) are the definition's tile parameters, passed
 * as defines; a block takes BLOCK * ITEMS elements of a row. As the built-in element-wise kernel
 * (kernels/cuda/elementwise.cu), where ITEMS is a multiple of 4 and the row's three operands start 16-byte
 * aligned, thread t takes every BLOCK-th 16-byte vector of its block's chunk, all ITEMS / 4 loads of x and g
 * issued before the first store; elsewhere ITEMS single elements BLOCK apart. The entry is extern "C" so the
 * runtime finds it by name. silu: see swiglu.cl. */
__device__ __forceinline__ float swiglu_of(float xv, float gv) {
    const float h = expf(-0.5f * fabsf(gv));
    return xv * ((gv < 0.0f ? gv * h * h : gv) / (1.0f + h * h));
}

extern "C" __global__ void swiglu(const float *__restrict__ x, const float *__restrict__ g, float *__restrict__ y,
                                  long long xo, long long go, long long yo, int rows, int cols, int xs, int gs,
                                  int ys) {
    const int r = blockIdx.y, t = threadIdx.x;
    if (r >= rows) return;
    const float *xr = x + xo + (long long)r * xs, *gr = g + go + (long long)r * gs;
    float *yr = y + yo + (long long)r * ys;
#if ITEMS % 4 == 0
    if (((((unsigned long long)xr) | ((unsigned long long)gr) | ((unsigned long long)yr)) & 15) == 0) {
        enum { V = ITEMS / 4 };
        const int nv = cols / 4, base = blockIdx.x * BLOCK * V;
        const float4 *xv = (const float4 *)xr + base, *gv = (const float4 *)gr + base;
        float4 *yv = (float4 *)yr + base;
        float4 a[V], b[V];
#pragma unroll
        for (int e = 0; e < V; e++)
            if (base + e * BLOCK + t < nv) a[e] = xv[e * BLOCK + t], b[e] = gv[e * BLOCK + t];
#pragma unroll
        for (int e = 0; e < V; e++)
            if (base + e * BLOCK + t < nv)
                yv[e * BLOCK + t] = make_float4(swiglu_of(a[e].x, b[e].x), swiglu_of(a[e].y, b[e].y),
                                                swiglu_of(a[e].z, b[e].z), swiglu_of(a[e].w, b[e].w));
        if (blockIdx.x == gridDim.x - 1) /* the row's tail past the last whole vector */
            for (int i = nv * 4 + t; i < cols; i += BLOCK) yr[i] = swiglu_of(xr[i], gr[i]);
        return;
    }
#endif
    const int first = blockIdx.x * BLOCK * ITEMS + t;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const int c = first + i * BLOCK;
        if (c >= cols) return;
        yr[c] = swiglu_of(xr[c], gr[c]);
    }
}
