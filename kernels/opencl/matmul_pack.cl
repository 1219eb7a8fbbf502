/*
 * An 8-bit float matmul operand copied into the layout matmul_wgmma.cl reads (backend_opencl/matmul_pack.c):
 * K-major rows of kp bytes (kp a multiple of 16, so every row starts on a 16-byte boundary), the bytes past K
 * zero. Element (r, k) of matrix z of the source sits at src + so + z * sbs + r * rs + k * ks (strides in
 * elements: A stored [M,K] has rs = lda, ks = 1; A stored [K,M] rs = 1, ks = lda; likewise B as N rows), and
 * lands at dst + dof + z * dbs + r * kp + k. The bytes are copied unchanged. Work-group dimension 0 walks the
 * row tiles, 1 (group-stride) the K tiles, 2 the matrices.
 *
 * matmul_pack_words: a source that holds the rows contiguous (rs = 1) with so, ks and sbs on 16 bytes (A stored
 * [K,M] or B stored [K,N] with aligned rows, the common case), in 128 x 128 tiles: 16-byte words read along the
 * rows and written along K, whole 128-byte lines both ways, transposed 4 x 4 bytes at a time in registers and as
 * 4-byte words through local memory.
 * matmul_pack: any other source, byte by byte in 64 x 64 tiles, read along whichever dimension the source holds
 * contiguous.
 */
#define THREADS 256

#define WT 128      /* matmul_pack_words' tile: WT rows x WT bytes of K */
#define WK (WT / 4) /* 4-byte words of K a row of the tile holds */

uint word_of(uint4 v, int q) { return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w; }

/* Each work-item reads a 4 (k) x 16 (row) block as four 16-byte words (one per k, the eight work-items of a k row
 * on its whole 128-byte line), transposes it in registers into 16 words of 4 k bytes, and stores them into the
 * tile [row][k word], whose words are rotated by 4 per 16 rows so a warp's stores fall on 32 banks; then each
 * work-item writes 16-byte words of 16 k bytes of one row (the eight work-items of a row on its whole 128-byte
 * line), each one 16-byte load from the tile. */
__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void
matmul_pack_words(__global const uchar *src, long so, long ks, long sbs, __global uchar *dst, long dof, long dbs,
                  long rows, long kdim, long kp) {
    __local uint4 tile4[WT * WK / 4];
    __local uint *tile = (__local uint *)tile4;
    const long r0 = (long)get_group_id(0) * WT;
    __global const uchar *s = src + so + (long)get_group_id(2) * sbs;
    __global uchar *d = dst + dof + (long)get_group_id(2) * dbs;
    const int lid = (int)get_local_id(0);
    const int kq = lid / (WT / 16), rc = (lid % (WT / 16)) * 16; /* this work-item's block */
    for (long k0 = (long)get_group_id(1) * WT; k0 < kp; k0 += (long)get_num_groups(1) * WT) {
        uint4 w[4];
        for (int j = 0; j < 4; j++) {
            const long k = k0 + 4 * kq + j, r = r0 + rc;
            w[j] = (uint4)(0u);
            if (k < kdim) {
                if (r + 16 <= rows) {
                    w[j] = *(__global const uint4 *)(s + k * ks + r);
                } else {
                    uint b[4] = {0u, 0u, 0u, 0u};
                    for (int q = 0; q < 16 && r + q < rows; q++) b[q / 4] |= (uint)s[k * ks + r + q] << (8 * (q % 4));
                    w[j] = (uint4)(b[0], b[1], b[2], b[3]);
                }
            }
        }
        const int rot = 4 * (rc / 16);
        for (int q = 0; q < 4; q++) {
            /* rows rc + 4q .. + 3: byte i of a word of w[j] is row i at k j */
            const uchar4 b0 = as_uchar4(word_of(w[0], q)), b1 = as_uchar4(word_of(w[1], q));
            const uchar4 b2 = as_uchar4(word_of(w[2], q)), b3 = as_uchar4(word_of(w[3], q));
            __local uint *t = tile + (rc + 4 * q) * WK + (kq + rot) % WK;
            t[0] = as_uint((uchar4)(b0.s0, b1.s0, b2.s0, b3.s0));
            t[WK] = as_uint((uchar4)(b0.s1, b1.s1, b2.s1, b3.s1));
            t[2 * WK] = as_uint((uchar4)(b0.s2, b1.s2, b2.s2, b3.s2));
            t[3 * WK] = as_uint((uchar4)(b0.s3, b1.s3, b2.s3, b3.s3));
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int p = 0; p < WT * WT / 16 / THREADS; p++) {
            const int i = lid + p * THREADS, rl = i / (WT / 16), kc = i % (WT / 16);
            const long r = r0 + rl, k = k0 + 16 * kc;
            if (r >= rows || k >= kp) continue;
            *(__global uint4 *)(d + r * kp + k) = tile4[(rl * WK + (4 * kc + 4 * (rl / 16)) % WK) / 4];
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the tile is refilled for the next K tile */
    }
}

#define TILE 64

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void
matmul_pack(__global const uchar *src, long so, long rs, long ks, long sbs, __global uchar *dst, long dof, long dbs,
            long rows, long kdim, long kp) {
    __local uchar tile[TILE][TILE + 1];
    const long r0 = (long)get_group_id(0) * TILE;
    __global const uchar *s = src + so + (long)get_group_id(2) * sbs;
    __global uchar *d = dst + dof + (long)get_group_id(2) * dbs;
    const int lid = (int)get_local_id(0);
    const int k_fast = ks == 1; /* the source holds K contiguous: read along K; else along the rows */
    for (long k0 = (long)get_group_id(1) * TILE; k0 < kp; k0 += (long)get_num_groups(1) * TILE) {
        for (int i = lid; i < TILE * TILE; i += THREADS) {
            const int a = i / TILE, b = i % TILE;
            const int tr = k_fast ? a : b, tk = k_fast ? b : a;
            const long r = r0 + tr, k = k0 + tk;
            tile[tr][tk] = r < rows && k < kdim ? s[r * rs + k * ks] : (uchar)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = lid; i < TILE * TILE; i += THREADS) {
            const int tr = i / TILE, tk = i % TILE;
            const long r = r0 + tr, k = k0 + tk;
            if (r < rows && k < kp) d[r * kp + k] = tile[tr][tk];
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the tile is refilled for the next K tile */
    }
}
