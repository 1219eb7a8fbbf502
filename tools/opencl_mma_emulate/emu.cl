/* test-only emulation of the warp-level PTX forms through local memory: the kernel declares `sm` (its local
 * tiles' base: shared-window addresses are byte offsets from it) and emu_x (32 * 6 words for each warp) */
#define smem_addr(p) ((uint)((__local const uchar *)(p) - (__local const uchar *)sm))
#define EMU_LANE ((int)get_local_id(0) % 32)
#define EMU_WARP_X(x) ((x) + get_local_id(0) / 32 * (32 * 6))
#define CP_ASYNC_EMU 1
static inline __attribute__((always_inline)) float emu_h2f(uint h) {
#if X_DT == DT_BF16
    return as_float(h << 16);
#else
    ushort u = (ushort)h; return vload_half(0, (const __private half *)&u);
#endif
}
/* the 16-bit type results are packed into: attention's inputs' (its programs define HEAD_DIM), else matmul's C */
#ifdef HEAD_DIM
#define EMU_PAIR_DT X_DT
#else
#define EMU_PAIR_DT Z_DT
#endif
static inline __attribute__((always_inline)) uint emu_f2h(float v) {
#if EMU_PAIR_DT == DT_BF16
    uint u = as_uint(v); u += 0x7fffu + ((u >> 16) & 1u); return u >> 16;
#else
    ushort u[1]; vstore_half_rte(v, 0, (__private half *)u); return u[0];
#endif
}
static inline __attribute__((always_inline)) uint pack_pair(float v0, float v1) { return emu_f2h(v0) | (emu_f2h(v1) << 16); }
static inline __attribute__((always_inline)) float2 unpack_pair(uint w) { return (float2)(emu_h2f(w & 0xffffu), emu_h2f(w >> 16)); } /* attention's */
static inline __attribute__((always_inline)) void emu_ldsm(uint *r, __local ushort *sm, uint addr, int trans, __local uint *x) {
    const int lane = EMU_LANE;
    x = EMU_WARP_X(x);
    barrier(CLK_LOCAL_MEM_FENCE);
    x[lane] = addr;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; i++) {
        if (!trans) {
            const uint b = x[8 * i + lane / 4] / 2 + 2 * (lane % 4);
            r[i] = (uint)sm[b] | ((uint)sm[b + 1] << 16);
        } else {
            const uint b0 = x[8 * i + 2 * (lane % 4)] / 2 + lane / 4, b1 = x[8 * i + 2 * (lane % 4) + 1] / 2 + lane / 4;
            r[i] = (uint)sm[b0] | ((uint)sm[b1] << 16);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define LDSM_X4(r, addr) emu_ldsm(r, sm, addr, 0, emu_x)
#define LDSM_X4_T(r, addr) emu_ldsm(r, sm, addr, 1, emu_x)
static inline __attribute__((always_inline)) uint emu_half_of(uint w, int hi) { return hi ? w >> 16 : w & 0xffffu; }
static inline __attribute__((always_inline)) void emu_mma(float *d, const uint *a, uint b0, uint b1, __local uint *x) {
    const int lane = EMU_LANE;
    x = EMU_WARP_X(x);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < 4; i++) x[lane * 6 + i] = a[i];
    x[lane * 6 + 4] = b0;
    x[lane * 6 + 5] = b1;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = 0; e < 4; e++) {
        const int row = lane / 4 + (e >= 2 ? 8 : 0), col = 2 * (lane % 4) + (e % 2);
        float s = 0.0f;
        for (int k = 0; k < 16; k++) {
            const int al = (row % 8) * 4 + (k % 8) / 2, ar = (row >= 8) + 2 * (k >= 8);
            const int bl = col * 4 + (k % 8) / 2, br = 4 + (k >= 8);
            s += emu_h2f(emu_half_of(x[al * 6 + ar], k % 2)) * emu_h2f(emu_half_of(x[bl * 6 + br], k % 2));
        }
        d[e] += s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define MMA(d, a, b0, b1) emu_mma(d, a, b0, b1, emu_x)
static inline __attribute__((always_inline)) float emu_shfl(float v, int m, __local uint *x) {
    const int lane = EMU_LANE;
    x = EMU_WARP_X(x);
    barrier(CLK_LOCAL_MEM_FENCE);
    x[lane] = as_uint(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    const float r = as_float(x[lane ^ m]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}
#define quad_max(v) emu_qmax(v, emu_x)
#define quad_sum(v) emu_qsum(v, emu_x)
static inline __attribute__((always_inline)) float emu_qmax(float v, __local uint *x) { v = fmax(v, emu_shfl(v, 1, x)); return fmax(v, emu_shfl(v, 2, x)); }
static inline __attribute__((always_inline)) float emu_qsum(float v, __local uint *x) { v += emu_shfl(v, 1, x); return v + emu_shfl(v, 2, x); }
static inline __attribute__((always_inline)) uint pack_lo(float v0, float v1, uint hi) {
    const float2 h = unpack_pair(hi);
    return pack_pair(v0 - h.x, v1 - h.y);
}
#define CP_COMMIT()
#define CP_WAIT(n)
