/*
 * rgb_to_grey: planar u8 image [3,H,W] -> grey [H,W], u8 (round to nearest, clamp) or f32.
 * Compile-time: OUT_F32 (0 u8, 1 f32). v = 0.2989 R + 0.5870 G + 0.1140 B evaluated with explicit roundings
 * (no fused multiply-add), the same operation order as the CPU backend, so u8 results agree exactly.
 * With vec != 0 each thread converts four pixels with 4-byte loads (every plane row 4-byte aligned, output rows
 * aligned for a 4-byte u8 or 16-byte f32 store).
 */
#if OUT_F32
typedef float OutT;
#else
typedef unsigned char OutT;
#endif

__device__ __forceinline__ float grey_value(unsigned r, unsigned g, unsigned b) {
    float v = __fmul_rn(0.2989f, (float)r);
    v = __fadd_rn(v, __fmul_rn(0.5870f, (float)g));
    return __fadd_rn(v, __fmul_rn(0.1140f, (float)b));
}

__device__ __forceinline__ OutT grey_store(float v) {
#if OUT_F32
    return v;
#else
    float q = floorf(v + 0.5f);
    return (unsigned char)fminf(fmaxf(q, 0.0f), 255.0f);
#endif
}

struct __align__(16) grey_f4 {
    float v[4];
};

extern "C" __global__ void rgb_to_grey(const unsigned char *img, long long plane, long long in_rs, OutT *out,
                                       long long out_rs, int rows, int cols, int vec) {
    int nv = vec ? cols / 4 : 0;
    int t0 = blockIdx.x * blockDim.x + threadIdx.x;
    int tstride = gridDim.x * blockDim.x;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const unsigned char *R = img + (long long)r * in_rs;
        const unsigned char *G = R + plane;
        const unsigned char *B = G + plane;
        OutT *o = out + (long long)r * out_rs;
        for (int i = t0; i < nv; i += tstride) {
            unsigned rw = ((const unsigned *)R)[i], gw = ((const unsigned *)G)[i], bw = ((const unsigned *)B)[i];
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                v[j] = grey_value((rw >> (8 * j)) & 255u, (gw >> (8 * j)) & 255u, (bw >> (8 * j)) & 255u);
#if OUT_F32
            grey_f4 w;
#pragma unroll
            for (int j = 0; j < 4; j++) w.v[j] = v[j];
            ((grey_f4 *)o)[i] = w;
#else
            unsigned w = 0;
#pragma unroll
            for (int j = 0; j < 4; j++) w |= (unsigned)grey_store(v[j]) << (8 * j);
            ((unsigned *)o)[i] = w;
#endif
        }
        for (int c = nv * 4 + t0; c < cols; c += tstride) o[c] = grey_store(grey_value(R[c], G[c], B[c]));
    }
}
