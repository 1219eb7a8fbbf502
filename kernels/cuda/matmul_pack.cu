/*
 * A matmul operand copied into the layout the tensor cores read (backend_cuda/matmul_pack.c): K-major rows of kp
 * elements (kp * element size a multiple of 16, so every row starts on a 16-byte boundary), the elements past K
 * zero. Element (r, k) of matrix z of the source sits at src + z * sbs + r * rs + k * ks (strides in elements:
 * A stored [M,K] has rs = lda, ks = 1; A stored [K,M] rs = 1, ks = lda; likewise B as N rows), and lands at
 * dst + z * dbs + r * kp + k. The bits are copied unchanged. blockIdx.x walks the row tiles, blockIdx.y
 * (grid-stride) the K tiles, blockIdx.z the matrices.
 *
 * matmul_pack_words: an 8-bit source that holds the rows contiguous (rs = 1) with its base, ks and sbs on 16 bytes
 * (A stored [K,M] or B stored [K,N] with aligned rows, the common case), in 128 x 128 tiles: 16-byte words read
 * along the rows and written along K, whole 128-byte lines both ways, transposed 4 x 4 bytes at a time in
 * registers and as 4-byte words through shared memory.
 * matmul_pack: any other source, byte by byte in 64 x 64 tiles, read along whichever dimension the source holds
 * contiguous.
 * The 16-bit kernels copy an f16 or bf16 operand the 16-bit tensor-core kernels cannot read as stored (A stored
 * [K,M], rows or bases off 16 bytes); their strides and kp count elements, kp a multiple of 8.
 * matmul_pack16_words: a source that holds the rows contiguous (rs = 1) with its base on 16 bytes, ks and sbs on 8
 * elements (A stored [K,M] with aligned rows, the common case), in 256 x 64 tiles, transposed in registers.
 * matmul_pack16: any other, element by element as matmul_pack.
 */
#define THREADS 256

#define WT 128 /* matmul_pack_words' tile: WT rows x WT bytes of K */
#define WK (WT / 4) /* 4-byte words of K a row of the tile holds */

/* The 16-byte word of a source line from element r: a whole load where it lies before `rows`, else the elements
 * before `rows` one by one, zeros after them. */
template <typename T>
__device__ __forceinline__ uint4 line_word(const T *line, long long r, long long rows) {
    constexpr int PER = 16 / sizeof(T), BITS = 8 * sizeof(T);
    if (r + PER <= rows) return *(const uint4 *)(line + r);
    unsigned u[4] = {0u, 0u, 0u, 0u};
    for (int q = 0; q < PER && r + q < rows; q++) u[q * BITS / 32] |= (unsigned)line[r + q] << (q * BITS % 32);
    return make_uint4(u[0], u[1], u[2], u[3]);
}

/* The 4 x 4 bytes of a[0..3] (a[j] the bytes of 4 rows at k j) as out[0..3] (out[i] the 4 k bytes of row i). */
__device__ __forceinline__ void transpose4(const unsigned a[4], unsigned out[4]) {
    const unsigned lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
    const unsigned lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
    out[0] = __byte_perm(lo01, lo23, 0x5410);
    out[1] = __byte_perm(lo01, lo23, 0x7632);
    out[2] = __byte_perm(hi01, hi23, 0x5410);
    out[3] = __byte_perm(hi01, hi23, 0x7632);
}

/* Each thread reads a 4 (k) x 16 (row) block as four 16-byte words (one per k, the eight threads of a k row on its
 * whole 128-byte line), transposes it in registers into 16 words of 4 k bytes, and stores them into the tile
 * [row][k word], whose words are rotated by 4 per 16 rows so a warp's stores fall on 32 banks; then each thread
 * writes 16-byte words of 16 k bytes of one row (the eight threads of a row on its whole 128-byte line), each one
 * 16-byte load from the tile. */
extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_pack_words(const unsigned char *src, long long ks, long long sbs, unsigned char *dst, long long dbs,
                      long long rows, long long kdim, long long kp) {
    __shared__ __align__(16) unsigned int tile[WT * WK];
    const long long r0 = (long long)blockIdx.x * WT;
    const unsigned char *s = src + (long long)blockIdx.z * sbs;
    unsigned char *d = dst + (long long)blockIdx.z * dbs;
    const int kq = threadIdx.x / (WT / 16), rc = (threadIdx.x % (WT / 16)) * 16; /* this thread's block */
    for (long long k0 = (long long)blockIdx.y * WT; k0 < kp; k0 += (long long)gridDim.y * WT) {
        uint4 w[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const long long k = k0 + 4 * kq + j, r = r0 + rc;
            w[j] = k < kdim ? line_word(s + k * ks, r, rows) : make_uint4(0u, 0u, 0u, 0u);
        }
        const int rot = 4 * (rc / 16);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const unsigned a[4] = {(&w[0].x)[q], (&w[1].x)[q], (&w[2].x)[q], (&w[3].x)[q]};
            unsigned t[4];
            transpose4(a, t);
#pragma unroll
            for (int i = 0; i < 4; i++) tile[(rc + 4 * q + i) * WK + (kq + rot) % WK] = t[i];
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < WT * WT / 16 / THREADS; p++) {
            const int i = threadIdx.x + p * THREADS, rl = i / (WT / 16), kc = i % (WT / 16);
            const long long r = r0 + rl, k = k0 + 16 * kc;
            if (r >= rows || k >= kp) continue;
            const uint4 v = *(const uint4 *)&tile[rl * WK + (4 * kc + 4 * (rl / 16)) % WK];
            *(uint4 *)(d + r * kp + k) = v;
        }
        __syncthreads(); /* the tile is refilled for the next K tile */
    }
}

#define TILE 64

/* The element-wise copy in 64 x 64 tiles, read along whichever dimension the source holds contiguous. */
template <typename T>
__device__ __forceinline__ void pack_tiles(const T *src, long long rs, long long ks, long long sbs, T *dst,
                                           long long dbs, long long rows, long long kdim, long long kp) {
    __shared__ T tile[TILE][TILE + 1];
    const long long r0 = (long long)blockIdx.x * TILE;
    const T *s = src + (long long)blockIdx.z * sbs;
    T *d = dst + (long long)blockIdx.z * dbs;
    const int k_fast = ks == 1; /* the source holds K contiguous: read along K; else along the rows */
    for (long long k0 = (long long)blockIdx.y * TILE; k0 < kp; k0 += (long long)gridDim.y * TILE) {
        for (int i = threadIdx.x; i < TILE * TILE; i += THREADS) {
            const int a = i / TILE, b = i % TILE;
            const int tr = k_fast ? a : b, tk = k_fast ? b : a;
            const long long r = r0 + tr, k = k0 + tk;
            tile[tr][tk] = r < rows && k < kdim ? s[r * rs + k * ks] : (T)0;
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

extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_pack(const unsigned char *src, long long rs, long long ks, long long sbs, unsigned char *dst,
                long long dbs, long long rows, long long kdim, long long kp) {
    pack_tiles(src, rs, ks, sbs, dst, dbs, rows, kdim, kp);
}

/* 16-bit elements (f16, bf16), copied as their bits: strides and kp count elements */
extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_pack16(const unsigned short *src, long long rs, long long ks, long long sbs, unsigned short *dst,
                  long long dbs, long long rows, long long kdim, long long kp) {
    pack_tiles(src, rs, ks, sbs, dst, dbs, rows, kdim, kp);
}

#define HR 256 /* matmul_pack16_words' tile: HR rows x HK elements of K */
#define HK 64

/* Each thread reads an 8 (k) x 8 (row) block as eight 16-byte words (one per k; a warp's 32 threads take 8 k
 * blocks of 4 row blocks, so each load covers 64 contiguous bytes of 8 source lines), pairs their halves into
 * eight words of 8 k values, one per row, in registers, and stores them (the 8 threads of a row block on a whole
 * 128-byte line of each row): no shared memory, and eight loads in flight a thread. */
extern "C" __global__ void __launch_bounds__(THREADS)
    matmul_pack16_words(const unsigned short *src, long long ks, long long sbs, unsigned short *dst, long long dbs,
                        long long rows, long long kdim, long long kp) {
    const int kb = threadIdx.x % 8, rb = threadIdx.x / 8;
    const long long r = (long long)blockIdx.x * HR + 8 * rb;
    if (r >= rows) return;
    const unsigned short *s = src + (long long)blockIdx.z * sbs;
    unsigned short *d = dst + (long long)blockIdx.z * dbs;
    for (long long k0 = (long long)blockIdx.y * HK + 8 * kb; k0 < kp; k0 += (long long)gridDim.y * HK) {
        uint4 w[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const long long k = k0 + j;
            w[j] = k < kdim ? line_word(s + k * ks, r, rows) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int q = 0; q < 8; q++) {
            if (r + q >= rows) break;
            const unsigned sel = q % 2 ? 0x7632u : 0x5410u; /* row q's half of each k's word q / 2 */
            unsigned o[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                o[i] = __byte_perm((&w[2 * i].x)[q / 2], (&w[2 * i + 1].x)[q / 2], sel);
            *(uint4 *)(d + (r + q) * kp + k0) = make_uint4(o[0], o[1], o[2], o[3]);
        }
    }
}
