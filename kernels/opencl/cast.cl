/* cast (docs/ops.md, cast): z = x converted from dtype xdt to dtype zdt (common.cl's codes: 0 f32, 1 f16, 2 bf16,
 * 4 f8e4m3, 5 f8e5m2), element by element: widened to float (exact), rounded once into zdt (round to nearest even;
 * the 8-bit floats saturate, in integer registers, as common.cl says; NaN stays NaN).
 * The dtypes are run-time arguments, so one program serves all 25 pairs: a driver that compiles slowly (PoCL, a
 * few seconds a program) builds it once, and the branch on them is the same for every work-item. Operands are byte
 * pointers, offsets in elements. flat: each work-item converts VEC consecutive elements; strided: a 2-D grid, one
 * element each. */

#ifndef ENTRY_cast
#error "cast.cl: build with -DENTRY_cast (the op's entry, as the element-wise rule names it)"
#endif

inline float cast_load(__global const uchar *p, long i, int dt) {
    switch (dt) {
    case DT_F32: return ((__global const float *)p)[i];
    case DT_F16: return vload_half(i, (__global const half *)p);
    case DT_BF16: return as_float((uint)((__global const ushort *)p)[i] << 16);
    case DT_F8E4M3: return trr_e4m3_to_f32(p[i]);
    default: return trr_e5m2_to_f32(p[i]);
    }
}

inline void cast_store(__global uchar *p, long i, int dt, float v) {
    switch (dt) {
    case DT_F32: ((__global float *)p)[i] = v; break;
    case DT_F16: vstore_half_rte(v, i, (__global half *)p); break;
    case DT_BF16: ((__global ushort *)p)[i] = trr_f2bf(v); break;
    case DT_F8E4M3: p[i] = trr_f2e4m3(v); break;
    default: p[i] = trr_f2e5m2(v); break;
    }
}

__kernel void flat(__global const uchar *x, long xoff, __global uchar *z, long zoff, int n, int xdt, int zdt) {
    const int base = (int)get_global_id(0) * VEC;
    const int end = base + VEC < n ? base + VEC : n;
    for (int i = base; i < end; i++) cast_store(z, zoff + i, zdt, cast_load(x, xoff + i, xdt));
}

__kernel void strided(__global const uchar *x, long xoff, int xs, __global uchar *z, long zoff, int zs, int rows,
                      int cols, int xdt, int zdt) {
    const int c = (int)get_global_id(0), r = (int)get_global_id(1);
    if (c >= cols || r >= rows) return;
    cast_store(z, zoff + (long)r * zs + c, zdt, cast_load(x, xoff + (long)r * xs + c, xdt));
}
