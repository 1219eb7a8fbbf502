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
 * rows and written along K, whole 128-byte lines both ways, transposed through local memory.
 * matmul_pack: any other source, byte by byte in 64 x 64 tiles, read along whichever dimension the source holds
 * contiguous.
 */
#define THREADS 256

#define WT 128       /* matmul_pack_words' tile: WT rows x WT bytes of K */
#define WLD (WT + 4) /* local row length: a 4-byte pad puts consecutive K rows on different banks */

__kernel __attribute__((reqd_work_group_size(THREADS, 1, 1))) void
matmul_pack_words(__global const uchar *src, long so, long ks, long sbs, __global uchar *dst, long dof, long dbs,
                  long rows, long kdim, long kp) {
    __local uint tile[WT * WLD / 4]; /* [k][r] bytes */
    __local const uchar *tb = (__local const uchar *)tile;
    const long r0 = (long)get_group_id(0) * WT;
    __global const uchar *s = src + so + (long)get_group_id(2) * sbs;
    __global uchar *d = dst + dof + (long)get_group_id(2) * dbs;
    const int lid = (int)get_local_id(0);
    for (long k0 = (long)get_group_id(1) * WT; k0 < kp; k0 += (long)get_num_groups(1) * WT) {
        /* read: WT source rows (one a k) of WT bytes (one a row r), 16 bytes a work-item at a time */
        for (int i = lid; i < WT * WT / 16; i += THREADS) {
            const int kl = i / (WT / 16), rc = (i % (WT / 16)) * 16;
            const long k = k0 + kl, r = r0 + rc;
            uint4 w = (uint4)(0u);
            if (k < kdim) {
                if (r + 16 <= rows) {
                    w = *(__global const uint4 *)(s + k * ks + r);
                } else {
                    uint b[4] = {0u, 0u, 0u, 0u};
                    for (int j = 0; j < 16 && r + j < rows; j++) b[j / 4] |= (uint)s[k * ks + r + j] << (8 * (j % 4));
                    w = (uint4)(b[0], b[1], b[2], b[3]);
                }
            }
            __local uint *t = tile + (kl * WLD + rc) / 4;
            t[0] = w.x, t[1] = w.y, t[2] = w.z, t[3] = w.w;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* write: WT destination rows (one a row r) of WT bytes of K, 16 bytes a work-item at a time */
        for (int i = lid; i < WT * WT / 16; i += THREADS) {
            const int rl = i / (WT / 16), kc = (i % (WT / 16)) * 16;
            const long r = r0 + rl, k = k0 + kc;
            if (r >= rows || k >= kp) continue;
            uint v[4];
            for (int q = 0; q < 4; q++) {
                __local const uchar *c = tb + (kc + 4 * q) * WLD + rl;
                v[q] = (uint)c[0] | (uint)c[WLD] << 8 | (uint)c[2 * WLD] << 16 | (uint)c[3 * WLD] << 24;
            }
            *(__global uint4 *)(d + r * kp + k) = (uint4)(v[0], v[1], v[2], v[3]);
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
