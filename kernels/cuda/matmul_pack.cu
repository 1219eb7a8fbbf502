/*
 * An 8-bit float matmul operand copied into the layout the FP8 tensor cores read (backend_cuda/matmul_pack.c):
 * K-major rows of kp bytes (kp a multiple of 16, so every row starts on a 16-byte boundary), the bytes past K
 * zero. Element (r, k) of matrix z of the source sits at src + z * sbs + r * rs + k * ks (strides in elements:
 * A stored [M,K] has rs = lda, ks = 1; A stored [K,M] rs = 1, ks = lda; likewise B as N rows), and lands at
 * dst + z * dbs + r * kp + k. The bytes are copied unchanged. blockIdx.x walks the row tiles, blockIdx.y
 * (grid-stride) the K tiles, blockIdx.z the matrices.
 *
 * matmul_pack_words: a source that holds the rows contiguous (rs = 1) with its base, ks and sbs on 16 bytes (A
 * stored [K,M] or B stored [K,N] with aligned rows, the common case), in 128 x 128 tiles: 16-byte words read
 * along the rows and written along K, whole 128-byte lines both ways, transposed through shared memory.
 * matmul_pack: any other source, byte by byte in 64 x 64 tiles, read along whichever dimension the source holds
 * contiguous.
 */
#define THREADS 256

#define WT 128      /* matmul_pack_words' tile: WT rows x WT bytes of K */
#define WLD (WT + 4) /* shared row length: a 4-byte pad puts consecutive K rows on different banks */

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_pack_words(const unsigned char *src, long long ks, long long sbs, unsigned char *dst, long long dbs,
                      long long rows, long long kdim, long long kp) {
    __shared__ unsigned int tile[WT * WLD / 4]; /* [k][r] bytes */
    unsigned char *tb = (unsigned char *)tile;
    const long long r0 = (long long)blockIdx.x * WT;
    const unsigned char *s = src + (long long)blockIdx.z * sbs;
    unsigned char *d = dst + (long long)blockIdx.z * dbs;
    for (long long k0 = (long long)blockIdx.y * WT; k0 < kp; k0 += (long long)gridDim.y * WT) {
        /* read: WT source rows (one a k) of WT bytes (one a row r), 16 bytes a thread at a time */
        for (int i = threadIdx.x; i < WT * WT / 16; i += THREADS) {
            const int kl = i / (WT / 16), rc = (i % (WT / 16)) * 16;
            const long long k = k0 + kl, r = r0 + rc;
            uint4 w = make_uint4(0u, 0u, 0u, 0u);
            if (k < kdim) {
                if (r + 16 <= rows) {
                    w = *(const uint4 *)(s + k * ks + r);
                } else {
                    unsigned char b[16];
                    for (int j = 0; j < 16; j++) b[j] = r + j < rows ? s[k * ks + r + j] : (unsigned char)0;
                    w.x = b[0] | b[1] << 8 | b[2] << 16 | (unsigned)b[3] << 24;
                    w.y = b[4] | b[5] << 8 | b[6] << 16 | (unsigned)b[7] << 24;
                    w.z = b[8] | b[9] << 8 | b[10] << 16 | (unsigned)b[11] << 24;
                    w.w = b[12] | b[13] << 8 | b[14] << 16 | (unsigned)b[15] << 24;
                }
            }
            unsigned int *t = tile + (kl * WLD + rc) / 4;
            t[0] = w.x, t[1] = w.y, t[2] = w.z, t[3] = w.w;
        }
        __syncthreads();
        /* write: WT destination rows (one a row r) of WT bytes of K, 16 bytes a thread at a time */
        for (int i = threadIdx.x; i < WT * WT / 16; i += THREADS) {
            const int rl = i / (WT / 16), kc = (i % (WT / 16)) * 16;
            const long long r = r0 + rl, k = k0 + kc;
            if (r >= rows || k >= kp) continue;
            unsigned int v[4];
            for (int q = 0; q < 4; q++) {
                const unsigned char *c = tb + (kc + 4 * q) * WLD + rl;
                v[q] = c[0] | c[WLD] << 8 | c[2 * WLD] << 16 | (unsigned)c[3 * WLD] << 24;
            }
            *(uint4 *)(d + r * kp + k) = make_uint4(v[0], v[1], v[2], v[3]);
        }
        __syncthreads(); /* the tile is refilled for the next K tile */
    }
}

#define TILE 64

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
