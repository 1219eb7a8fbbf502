/* The element-wise shape rule's ops (copy, add, gelu, silu).
 * Flat form (rows == 1): each work-item takes VEC consecutive elements; ALIGNED=1 when every offset is a
 * multiple of VEC, so whole vectors are loaded through vector pointers; the last work-item masks the tail.
 * Strided form: a 2-D grid, one element per work-item, with a row stride per operand.
 * The op, as its definition reaches the kernel: COPY_T for an op that moves bytes (copy: raw bits of type COPY_T),
 * else ENTRY_<name>: ENTRY_add, or a unary op, ENTRY_gelu or ENTRY_silu (f16 and bf16 are widened to f32,
 * computed in f32 and rounded once on store). */

#if VEC == 1
#define floatV float
#define VLOAD_F(p, i) ((p)[i])
#define VLOAD_H(p, i) vload_half((i), (p))
#define VSTORE_F(v, p, i) ((p)[i] = (v))
#define VSTORE_H(v, p, i) vstore_half_rte((v), (i), (p))
#define VLOAD_B(p, i) LOAD_DT_2(p, i)
#define VSTORE_B(v, p, i) STORE_DT_2(v, p, i)
#else
#define floatV CAT(float, VEC)
#if ALIGNED
#define VLOAD_F(p, i) (((__global const floatV *)(p))[i])
#define VSTORE_F(v, p, i) (((__global floatV *)(p))[i] = (v))
#else
#define VLOAD_F(p, i) CAT(vload, VEC)((i), (p))
#define VSTORE_F(v, p, i) CAT(vstore, VEC)((v), (i), (p))
#endif
#if ALIGNED || VEC < 8
#define VLOAD_H(p, i) CAT(vload_half, VEC)((i), (p))
#define VSTORE_H(v, p, i) CAT(CAT(vstore_half, VEC), _rte)((v), (i), (p))
#else
/* Unaligned half8/half16 as 8-byte half4 pieces: PoCL (x86) compiles vload_half8/16 to an aligned 16-byte load
 * (vmovdqa), which faults on an address that is only 2-byte aligned, as OpenCL allows. */
#define VLOAD_H(p, i) trr_vload_half_u((i), (p))
#define VSTORE_H(v, p, i) trr_vstore_half_u((v), (i), (p))
inline floatV trr_vload_half_u(int i, __global const half *p) {
    floatV v;
    float *f = (float *)&v;
    for (int j = 0; j < VEC / 4; j++) vstore4(vload_half4((size_t)i * (VEC / 4) + j, p), j, f);
    return v;
}
inline void trr_vstore_half_u(floatV v, int i, __global half *p) {
    const float *f = (const float *)&v;
    for (int j = 0; j < VEC / 4; j++) vstore_half4_rte(vload4(j, f), (size_t)i * (VEC / 4) + j, p);
}
#endif
/* bf16 vectors: ushortN through vloadN/vstoreN (any alignment), widened and rounded in uintN registers */
#define VLOAD_B(p, i) CAT(as_float, VEC)(CAT(convert_uint, VEC)(CAT(vload, VEC)((i), (p))) << 16)
#define VSTORE_B(v, p, i) CAT(vstore, VEC)(trr_f2bf_v(v), (i), (p))
inline CAT(ushort, VEC) trr_f2bf_v(floatV v) {
    CAT(uint, VEC) b = CAT(as_uint, VEC)(v);
    return CAT(convert_ushort, VEC)(BF16_BITS_RNE(b));
}
#endif

#if defined(COPY_T)
/* copy moves bits: COPY_T is uint, ushort or uchar by element size. */
#if VEC == 1
#define copyV COPY_T
#define CLOAD(p, i) ((p)[i])
#define CSTORE(v, p, i) ((p)[i] = (v))
#else
#define copyV CAT(COPY_T, VEC)
#if ALIGNED
#define CLOAD(p, i) (((__global const copyV *)(p))[i])
#define CSTORE(v, p, i) (((__global copyV *)(p))[i] = (v))
#else
#define CLOAD(p, i) CAT(vload, VEC)((i), (p))
#define CSTORE(v, p, i) CAT(vstore, VEC)((v), (i), (p))
#endif
#endif

__kernel void flat(__global const COPY_T *x, long xoff, __global const COPY_T *y, long yoff, __global COPY_T *z,
                   long zoff, int n) {
    (void)y;
    (void)yoff;
    x += xoff;
    z += zoff;
    int v = (int)get_global_id(0);
    int base = v * VEC;
    if ((long)base + VEC <= n) {
        copyV a = CLOAD(x, v);
        CSTORE(a, z, v);
    } else {
        for (int i = base; i < n; i++) z[i] = x[i];
    }
}

__kernel void strided(__global const COPY_T *x, long xoff, int xs, __global const COPY_T *y, long yoff, int ys,
                      __global COPY_T *z, long zoff, int zs, int rows, int cols) {
    (void)y;
    (void)yoff;
    (void)ys;
    int c = (int)get_global_id(0), r = (int)get_global_id(1);
    if (c >= cols || r >= rows) return;
    z[zoff + (long)r * zs + c] = x[xoff + (long)r * xs + c];
}

#else /* add, unary: f32, f16 or bf16 operands, f32 arithmetic */

#if X_DT == DT_F16
#define VLOAD_X VLOAD_H
#elif X_DT == DT_BF16
#define VLOAD_X VLOAD_B
#else
#define VLOAD_X VLOAD_F
#endif
#if defined(Y_DT) && Y_DT == DT_F16
#define VLOAD_Y VLOAD_H
#elif defined(Y_DT) && Y_DT == DT_BF16
#define VLOAD_Y VLOAD_B
#else
#define VLOAD_Y VLOAD_F
#endif
#if Z_DT == DT_F16
#define VSTORE_Z VSTORE_H
#elif Z_DT == DT_BF16
#define VSTORE_Z VSTORE_B
#else
#define VSTORE_Z VSTORE_F
#endif

#ifndef Y_DT
typedef float y_t;
#define LOAD_Y(p, i) ((p)[i])
#endif

/* silu = x / (1 + e^-x), scalar or vector, evaluated as (x < 0 ? x·h·h : x) / (1 + h·h) with h = e^(-|x|/2) in
 * (0, 1]. The same function, but e^-x overflows below x = -88.7 (giving -0 where the result, down to x = -92, is
 * still a normal float) and e^x is subnormal there (flushed, or short of precision), while x·h·h stays normal as
 * long as the result is. NaN propagates; -inf gives NaN (-inf · 0), as the float64 formula does. A macro, since
 * it takes floatN as well as float; the compiler computes the repeated h once. */
#define SILU_H(x) exp(-0.5f * fabs(x))
#define SILU(x) (((x) < 0.0f ? (x) * SILU_H(x) * SILU_H(x) : (x)) / (1.0f + SILU_H(x) * SILU_H(x)))

/* EW_INPUTS: the op's inputs (y is read only for two) */
#if defined(ENTRY_add)
#define EW_INPUTS 2
#define APPLY(a, b) ((a) + (b))
#elif defined(ENTRY_gelu)
#define EW_INPUTS 1
#define APPLY(a, b) GELU(a)
#elif defined(ENTRY_silu)
#define EW_INPUTS 1
#define APPLY(a, b) SILU(a)
#else
#error "elementwise.cl: compile with -DCOPY_T=<type> (a byte move) or -DENTRY_<op> for an op of this file"
#endif

__kernel void flat(__global const x_t *x, long xoff, __global const y_t *y, long yoff, __global z_t *z, long zoff,
                   int n) {
    x += xoff;
    y += yoff;
    z += zoff;
    int v = (int)get_global_id(0);
    int base = v * VEC;
    if ((long)base + VEC <= n) {
        floatV a = VLOAD_X(x, v);
#if EW_INPUTS == 2
        floatV b = VLOAD_Y(y, v);
#else
        floatV b = a;
#endif
        VSTORE_Z(APPLY(a, b), z, v);
    } else {
        for (int i = base; i < n; i++) {
            float a = LOAD_X(x, i);
#if EW_INPUTS == 2
            float b = LOAD_Y(y, i);
#else
            float b = a;
#endif
            STORE_Z(APPLY(a, b), z, i);
        }
    }
}

__kernel void strided(__global const x_t *x, long xoff, int xs, __global const y_t *y, long yoff, int ys,
                      __global z_t *z, long zoff, int zs, int rows, int cols) {
    int c = (int)get_global_id(0), r = (int)get_global_id(1);
    if (c >= cols || r >= rows) return;
    float a = LOAD_X(x, xoff + (long)r * xs + c);
#if EW_INPUTS == 2
    float b = LOAD_Y(y, yoff + (long)r * ys + c);
#else
    float b = a;
    (void)y;
    (void)yoff;
    (void)ys;
#endif
    STORE_Z(APPLY(a, b), z, zoff + (long)r * zs + c);
}
#endif
