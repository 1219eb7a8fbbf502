/* The K and V blocks of the tensor-core attention kernels (attention_mma.cl, attention_decode_mma.cl), which
 * define BLOCK_N (keys a block), CHUNKS_ROW (16-byte chunks a key row), LROW (halves a local row) and LOAD_THREADS
 * (the work-items that share a copy) before including this file.
 *
 * Starts the copy of keys j0.. of K or V (rows `stride` apart from base) into a local tile (`at` its shared-window
 * address): 16-byte chunks, work-item t taking chunks t, t + LOAD_THREADS, ..., the rows at and past kend
 * zero-filled (a zero V row keeps 0·V finite where a masked weight is 0). With cp.async the caller commits the
 * group; without, the copy is done on return. */
static inline void load_block(__local ushort *tile, uint at, __global const ushort *base, long stride, int j0,
                              int kend, int t) {
    for (int e = t; e < BLOCK_N * CHUNKS_ROW; e += LOAD_THREADS) {
        const int row = e / CHUNKS_ROW, col = (e % CHUNKS_ROW) * 8, in = j0 + row < kend;
        __global const ushort *src = in ? base + (long)(j0 + row) * stride + col : base;
#if CP_ASYNC
        CP_ASYNC16(at + (uint)((row * LROW + col) * 2), src, in ? 16 : 0);
#else
        *(__local uint4 *)(tile + row * LROW + col) = in ? *(__global const uint4 *)src : (uint4)(0u);
#endif
    }
}
