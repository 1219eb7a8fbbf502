#version 450
// The element-wise shape rule's ops, each built from its definition with -DENTRY_<name> (vk_kinds.h): add
// (ENTRY_add) and the unary ops gelu (ENTRY_gelu) and silu (ENTRY_silu) over rows x cols with row strides;
// rows == 1 is one packed vector. The unary ops differ only in unary(); f16 is widened to f32, computed in f32 and
// rounded once on store.
// When the host finds every operand contiguous and 4-element aligned (pc.pad bit 0), the data is read and
// written as 4-element vectors: each invocation loads its EPT vectors (spaced one workgroup apart, coalesced)
// before it computes and stores them, and the last n % 4 elements are done one by one. Otherwise each
// invocation handles EPT single elements. Both loop over the grid for sizes beyond one dispatch.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EPT = 4;

#if defined(X_F16)
#define XV f16vec4
#elif defined(X_BF16)
#define XV uvec2
#else
#define XV vec4
#endif
#if defined(Z_F16)
#define ZV f16vec4
#elif defined(Z_BF16)
#define ZV uvec2
#else
#define ZV vec4
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufXV { XV xv[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufYV { XV yv[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufZV { ZV zv[]; };

#if defined(ENTRY_silu)
// silu = x / (1 + e^-x), evaluated as (x < 0 ? x·h·h : x) / (1 + h·h) with h = e^(-|x|/2) in (0, 1]. The same
// function, but e^-x overflows below x = -88.7 (giving -0 where the result, down to x = -92, is still a normal
// float) and e^x is subnormal there (flushed, or short of precision), while x·h·h stays normal as long as the
// result is. NaN propagates; -inf gives NaN (-inf · 0), as the float64 formula does.
float unary(float a) {
    float h = exp(-0.5 * abs(a));
    return (a < 0.0 ? a * h * h : a) / (1.0 + h * h);
}
#elif defined(ENTRY_gelu)
float unary(float a) { return trr_gelu(a); }
#elif !defined(ENTRY_add)
#error "elementwise.comp: define ENTRY_<op> for an op of this file (ENTRY_add, ENTRY_gelu, ENTRY_silu)"
#endif

float op1(uint i, uint r, uint c) {
    float a = XF(x[pc.xo + r * pc.xs0 + c]);
#if defined(ENTRY_add)
    // precise: f32 add must be bit-exact, so no contraction or reassociation.
    precise float v = a + XF(y[pc.yo + r * pc.ys0 + c]);
#else
    float v = unary(a);
#endif
    return v;
}

void main() {
    uint n = pc.rows * pc.cols;
    uint wg = gl_WorkGroupSize.x;
    uint t = gl_LocalInvocationID.x;
    uint gid = trr_group_id();
    uint ngroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    if ((pc.pad & 1u) != 0u) {
        uint n4 = n / 4u;
        uint xo = pc.xo / 4u, yo = pc.yo / 4u, zo = pc.zo / 4u;
        uint step = ngroups * wg * EPT;
        for (uint base = gid * wg * EPT + t; base < n4; base += step) {
            vec4 a[EPT];
#if defined(ENTRY_add)
            vec4 b[EPT];
#endif
            [[unroll]] for (uint e = 0; e < EPT; e++) {
                uint i = base + e * wg;
                if (i < n4) {
                    a[e] = XVF(xv[xo + i]);
#if defined(ENTRY_add)
                    b[e] = XVF(yv[yo + i]);
#endif
                }
            }
            [[unroll]] for (uint e = 0; e < EPT; e++) {
                uint i = base + e * wg;
                if (i < n4) {
#if defined(ENTRY_add)
                    precise vec4 v = a[e] + b[e];
#else
                    vec4 v = vec4(unary(a[e].x), unary(a[e].y), unary(a[e].z), unary(a[e].w));
#endif
                    zv[zo + i] = ZVC(v);
                }
            }
        }
        if (gid == 0u) // a workgroup may be narrower than the tail (threads = 1)
            for (uint i = n4 * 4u + t; i < n; i += wg) z[pc.zo + i] = ZC(op1(i, 0u, i)); // contiguous: row 0, column i
        return;
    }
    uint step = ngroups * wg * EPT;
    for (uint base = gid * wg * EPT + t; base < n; base += step) {
        [[unroll]] for (uint e = 0; e < EPT; e++) {
            uint i = base + e * wg;
            if (i >= n) break;
            uint r = 0, c = i;
            if (pc.rows != 1) {
                r = i / pc.cols;
                c = i - r * pc.cols;
            }
            z[pc.zo + r * pc.zs0 + c] = ZC(op1(i, r, c));
        }
    }
}
