// Shared by every Trireme Vulkan kernel: operand types chosen at build time (-DX_F16, -DX_BF16, -DX_U8, -DZ_F16,
// -DZ_BF16, -DZ_U8),
// the three storage-buffer bindings of the one descriptor set layout, and the push constants.
// 16-bit and 8-bit values go through 16/8-bit storage, so single-element writes never race on a shared word.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#if defined(X_F16)
#define XT float16_t
#elif defined(X_BF16)
#define XT uint16_t
#elif defined(X_U8)
#define XT uint8_t
#else
#define XT float
#endif

#if defined(Z_F16)
#define ZT float16_t
#elif defined(Z_BF16)
#define ZT uint16_t
#elif defined(Z_U8)
#define ZT uint8_t
#else
#define ZT float
#endif

// bf16 has no GLSL type here (GL_EXT_bfloat16 is newer than the glslang we build with): it is held as uint16_t
// through 16-bit storage, widened by a shift (exact) and rounded to nearest even in integer registers on store.
// XF / XVF turn a loaded X element (or 4-vector) into float; ZC / ZVC turn a float (vec4) into a Z element.
// f32 bits -> bf16 bits, round to nearest even (a carry bumps the exponent, up to inf); a NaN keeps its sign and
// top payload with the quiet bit set, so it cannot truncate to an infinity.
uint trr_f2bf(float f) {
    uint b = floatBitsToUint(f);
    return (b & 0x7fffffffu) > 0x7f800000u ? (b >> 16) | 0x40u : (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}
// The vector paths hold 4 bf16 as a uvec2 (element 0 in the low half of .x), since 16-bit vector conversions
// would need shaderInt16; the 8-byte access is the same as an f16vec4's.
#if defined(X_BF16)
#define XF(v) uintBitsToFloat(uint(v) << 16)
#define XVF(v) uintBitsToFloat(uvec4((v).x << 16, (v).x & 0xffff0000u, (v).y << 16, (v).y & 0xffff0000u))
#else
#define XF(v) float(v)
#define XVF(v) vec4(v)
#endif
uvec2 trr_f2bf4(vec4 f) {
    return uvec2(trr_f2bf(f.x) | (trr_f2bf(f.y) << 16), trr_f2bf(f.z) | (trr_f2bf(f.w) << 16));
}
#if defined(Z_BF16)
#define ZC(f) uint16_t(trr_f2bf(f))
#define ZVC(f) trr_f2bf4(f)
#else
#define ZC(f) ZT(f)
#define ZVC(f) ZV(f)
#endif

// f16, e4m3 and e5m2 bits (docs/ops.md, Dtypes) -> the same value's f32 bits, exactly and in integer arithmetic
// only, so a device that flushes subnormals cannot change a value on the way. Every case is computed and one
// selected (mix on a bool is a select, not a branch), so a kernel can widen values anywhere in straight-line code.
// findMSB of a zero mantissa is never used: max(m, 1) only keeps it defined.
uint trr_f16_to_f32_bits(uint h) {
    uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    uint p = uint(findMSB(max(m, 1u))); // a subnormal, normalised: m * 2^-24 = 2^(p - 24) * 1.f
    uint sub = mix(((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu), 0u, m == 0u);
    uint mag = mix(((e + 112u) << 23) | (m << 13), sub, e == 0u);
    return sign | mix(mag, 0x7f800000u | (m << 13), e == 31u);
}
uint trr_e4m3_to_f32_bits(uint b) {
    uint sign = (b & 0x80u) << 24, e = (b >> 3) & 15u, m = b & 7u;
    uint p = uint(findMSB(max(m, 1u))); // m * 2^-9 = 2^(p - 9) * 1.f
    uint sub = mix(((p + 118u) << 23) | ((m << (23u - p)) & 0x7fffffu), 0u, m == 0u);
    uint mag = mix(((e + 120u) << 23) | (m << 20), sub, e == 0u);
    return sign | mix(mag, 0x7fc00000u, (b & 0x7fu) == 0x7fu);
}
uint trr_e5m2_to_f32_bits(uint b) { return trr_f16_to_f32_bits(b << 8); } // the top byte of an f16

// A kernel with bindings and push constants of its own (attention.comp) defines TRR_OWN_BINDINGS first.
#ifndef TRR_OWN_BINDINGS
layout(std430, set = 0, binding = 0) readonly buffer BufX { XT x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY { XT y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufZ { ZT z[]; };

// Offsets and strides are in elements, relative to each binding's (aligned) start; every index fits in 32 bits
// because the front-end rejects views whose extent reaches 2^31 elements.
layout(push_constant) uniform Push {
    uint rows, cols, k;
    uint xo, yo, zo;
    uint xs0, xs1, ys0, zs0;
    float alpha;
    uint pad;
    uint xb, yb, zb; // matmul: batch strides (0 for a shared input); the batch is gl_WorkGroupID.z
    uint aux;        // matmul of 8-bit floats: scale_a * scale_b as f32 bits
} pc;

// matmul: where this workgroup's batch starts in each operand (elements, 32-bit: see above)
#define TRR_XO (pc.xo + gl_WorkGroupID.z * pc.xb)
#define TRR_YO (pc.yo + gl_WorkGroupID.z * pc.yb)
#define TRR_ZO (pc.zo + gl_WorkGroupID.z * pc.zb)
#endif

#define NEG_INF uintBitsToFloat(0xff800000u)

// gelu, tanh form; 0.5·(1 + tanh u) = 1 / (1 + exp(-2u)) avoids tanh, which is inaccurate for large |u| on
// some drivers, and saturates cleanly (exp overflow gives 0, never NaN).
float trr_gelu(float v) {
    float u = 0.7978845608 * (v + 0.044715 * v * v * v);
    return v / (1.0 + exp(-2.0 * u));
}

// Compensated (Kahan) summation: s + v into s, the rounding error carried in c; the sum so far is s - c. precise
// keeps the compiler from folding (t - s) - y to 0.
void trr_kahan_add(inout float s, inout float c, float v) {
    precise float y = v - c;
    precise float t = s + y;
    precise float nc = (t - s) - y;
    c = nc;
    s = t;
}

// The linear workgroup id of a dispatch spread over x and y (x is limited to 65535 groups on some devices).
uint trr_group_id() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
