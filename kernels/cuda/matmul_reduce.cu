/*
 * The second pass of the tensor-core matmuls' split-K (matmul_wgmma.cu, matmul_mma.cu with SPLIT_K 1): sums the
 * f32 partials of the splits, then applies what the main kernel's epilogue applies without a split: the 8-bit
 * floats' scale (scale_a * scale_b, 1 otherwise), the fused activation (trr_epilogue, the same device function)
 * and the rounding to C's type, stored with C's row and batch strides. Compile-time: DT_OUT (0 f32, 1 f16, 2 bf16).
 * P holds batch x splits matrices [M, N] (row stride N): matrix z's split s at (z * splits + s) * M * N. The
 * splits are added in order 0, 1, ... into an f32 sum starting at 0, so the result does not depend on the
 * schedule (deterministic run to run). blockIdx.z is the matrix of the batch; x is a grid-stride loop over its
 * M * N outputs (consecutive threads on consecutive columns: every read and C's row stores coalesce).
 */
typedef trr_dt<DT_OUT>::type TO;

extern "C" __global__ void __launch_bounds__(256)
    matmul_reduce(const float *P, TO *C, long long ldc, long long c_bs, int M, int N, int splits, int epi, float alpha,
                  float scale) {
    const long long mn = (long long)M * N;
    const float *Pz = P + (long long)blockIdx.z * splits * mn;
    TO *Cz = C + (long long)blockIdx.z * c_bs;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < mn; i += (long long)gridDim.x * blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < splits; s++) v += Pz[s * mn + i];
        const long long r = i / N, c = i - r * N;
        Cz[r * ldc + c] = trr_from_f32<TO>(trr_epilogue(v * scale, epi, alpha));
    }
}
