#version 450
// cast (docs/ops.md, cast): z = x converted from IN_DT to OUT_DT (trr_dtype codes: 0 f32, 1 f16, 2 bf16, 4 f8e4m3,
// 5 f8e5m2) over rows x cols with row strides; rows == 1 is one packed vector. Every step is integer arithmetic on
// the bits: the input widened to f32 bits (exact), then rounded once to the output's bits (round to nearest even;
// f16 and bf16 overflow to infinity, the 8-bit floats saturate as docs/ops.md says; NaN stays NaN), as
// core/half.c does on the host. No float arithmetic touches a value, so a device that flushes subnormals (a CPU
// driver's denormals-are-zero mode) or converts f16 with its own rounding cannot change a result.
// Storage: f32 as float (bit casts only), f16 and bf16 as uint16_t, the 8-bit floats as uint8_t: the variant's
// generic dtype defines (vk_kinds.h: X_F16, X_BF16, X_F8E4M3, X_F8E5M2 and Z_ likewise; none for f32) become the
// conversion's codes IN_DT and OUT_DT (trr_dtype's) and common.glsl's bit-holding types (8-bit storage only where
// an operand is an 8-bit float). Each invocation converts EPT single elements, spaced one workgroup apart, over a
// grid that loops beyond one dispatch (so any grid the element-wise rule sizes covers them).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef ENTRY_cast
#error "cast.comp: build with -DENTRY_cast (the op's entry, as vk_kinds.h names it)"
#endif
#if defined(X_F16)
#define IN_DT 1
#undef X_F16
#define X_BF16 // the bits as uint16_t, not a float16_t a driver may convert its own way
#elif defined(X_BF16)
#define IN_DT 2
#elif defined(X_F8E4M3)
#define IN_DT 4
#define X_U8
#elif defined(X_F8E5M2)
#define IN_DT 5
#define X_U8
#else
#define IN_DT 0
#endif
#if defined(Z_F16)
#define OUT_DT 1
#undef Z_F16
#define Z_BF16
#elif defined(Z_BF16)
#define OUT_DT 2
#elif defined(Z_F8E4M3)
#define OUT_DT 4
#define Z_U8
#elif defined(Z_F8E5M2)
#define OUT_DT 5
#define Z_U8
#else
#define OUT_DT 0
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EPT = 4;

uint load_bits(uint i) {
#if IN_DT == 0
    return floatBitsToUint(x[i]);
#else
    return uint(x[i]);
#endif
}

// The value as f32 bits.
uint to_f32_bits(uint v) {
#if IN_DT == 1
    return trr_f16_to_f32_bits(v);
#elif IN_DT == 2
    return v << 16;
#elif IN_DT == 4
    return trr_e4m3_to_f32_bits(v);
#elif IN_DT == 5
    return trr_e5m2_to_f32_bits(v);
#else
    return v;
#endif
}

// The magnitude code of a finite |f| (bits ax) with mbits mantissa bits and exponent bias `bias`, rounded to
// nearest even; past the largest finite code it goes on counting (the caller saturates or overflows).
uint round_mag(uint ax, int mbits, int bias) {
    int e = int(ax >> 23) - 127 + bias;
    if ((ax >> 23) == 0u || e < -(mbits + 1)) return 0u;
    uint sig = (ax & 0x7fffffu) | 0x800000u;
    int shift = 23 - mbits + (e < 1 ? 1 - e : 0);
    uint code = sig >> uint(shift);
    uint rem = sig & ((1u << uint(shift)) - 1u), mid = 1u << uint(shift - 1);
    if (e >= 1) code = (uint(e) << uint(mbits)) + (code & ((1u << uint(mbits)) - 1u));
    if (rem > mid || (rem == mid && (code & 1u) != 0u)) code++;
    return code;
}

uint from_f32_bits(uint x) {
    uint ax = x & 0x7fffffffu;
#if OUT_DT == 1
    uint sign = (x >> 16) & 0x8000u;
    if (ax > 0x7f800000u) return sign | 0x7e00u | ((ax >> 13) & 0x3ffu);
    if (ax == 0x7f800000u) return sign | 0x7c00u;
    return sign | min(round_mag(ax, 10, 15), 0x7c00u); // past 65504 rounds to infinity, as IEEE does
#elif OUT_DT == 2
    return trr_f2bf(uintBitsToFloat(x));
#elif OUT_DT == 4
    uint sign = (x >> 24) & 0x80u;
    if (ax > 0x7f800000u) return sign | 0x7fu;
    if (ax == 0x7f800000u) return sign | 0x7eu;
    return sign | min(round_mag(ax, 3, 7), 0x7eu);
#elif OUT_DT == 5
    uint sign = (x >> 24) & 0x80u;
    if (ax > 0x7f800000u) return sign | 0x7eu | ((x >> 21) & 1u);
    if (ax == 0x7f800000u) return sign | 0x7cu;
    return sign | min(round_mag(ax, 2, 15), 0x7bu);
#else
    return x;
#endif
}

void store_bits(uint i, uint v) {
#if OUT_DT == 0
    z[i] = uintBitsToFloat(v);
#elif OUT_DT == 1 || OUT_DT == 2
    z[i] = uint16_t(v);
#else
    z[i] = uint8_t(v);
#endif
}

void main() {
    uint n = pc.rows * pc.cols;
    uint wg = gl_WorkGroupSize.x;
    uint gid = trr_group_id();
    uint ngroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    uint step = ngroups * wg * EPT;
    for (uint base = gid * wg * EPT + gl_LocalInvocationID.x; base < n; base += step) {
        [[unroll]] for (uint e = 0; e < EPT; e++) {
            uint i = base + e * wg;
            if (i >= n) break;
            uint r = 0, c = i;
            if (pc.rows != 1) {
                r = i / pc.cols;
                c = i - r * pc.cols;
            }
#if IN_DT == OUT_DT
            store_bits(pc.zo + r * pc.zs0 + c, load_bits(pc.xo + r * pc.xs0 + c));
#else
            store_bits(pc.zo + r * pc.zs0 + c, from_f32_bits(to_f32_bits(load_bits(pc.xo + r * pc.xs0 + c))));
#endif
        }
    }
}
