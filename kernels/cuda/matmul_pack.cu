/*
 * An 8-bit float matmul operand copied into the layout the FP8 tensor cores read (backend_cuda/matmul_pack.c):
 * K-major rows of kp bytes (kp a multiple of 16, so every row starts on a 16-byte boundary), the bytes past K
 * zero. Element (r, k) of matrix z of the source sits at src + z * sbs + r * rs + k * ks (strides in elements:
 * A stored [M,K] has rs = lda, ks = 1; A stored [K,M] rs = 1, ks = lda; likewise B as N rows), and lands at
 * dst + z * dbs + r * kp + k. The bytes are copied unchanged.
 *
 * A block moves 64 x 64 tiles through shared memory: it reads each along whichever dimension the source holds
 * contiguous, so a warp's reads fall in one or two 32-byte sectors, and writes it along K, which the destination
 * holds contiguous. blockIdx.x walks the row tiles, blockIdx.y (grid-stride) the K tiles, blockIdx.z the matrices.
 */
#define TILE 64
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_pack(const unsigned char *src, long long rs, long long ks, long long sbs, unsigned char *dst,
                long long dbs, long long rows, long long kdim, long long kp) {
    __shared__ unsigned char tile[TILE][TILE + 1];
    const long long r0 = (long long)blockIdx.x * TILE;
    const unsigned char *s = src + (long long)blockIdx.z * sbs;
    unsigned char *d = dst + (long long)blockIdx.z * dbs;
    const int k_fast = ks == 1; /* the source holds K contiguous: read along K; else along the rows */
    for (long long k0 = (long long)blockIdx.y * TILE; k0 < kp; k0 += (long long)gridDim.y * TILE) {
        for (int i = threadIdx.x; i < TILE * TILE; i += THREADS) {
            const int a = i / TILE, b = i % TILE;
            const int tr = k_fast ? a : b, tk = k_fast ? b : a;
            const long long r = r0 + tr, k = k0 + tk;
            tile[tr][tk] = r < rows && k < kdim ? s[r * rs + k * ks] : (unsigned char)0;
        }
        __syncthreads();
        for (int i = threadIdx.x; i < TILE * TILE; i += THREADS) {
            const int tr = i / TILE, tk = i % TILE;
            const long long r = r0 + tr, k = k0 + tk;
            if (r < rows && k < kp) d[r * kp + k] = tile[tr][tk];
        }
        __syncthreads(); /* the tile is refilled for the next K tile */
    }
}
