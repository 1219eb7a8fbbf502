#version 450
// Row softmax with the row in registers, one workgroup per row: each invocation loads its VPT 4-element vectors
// (spaced one workgroup apart, coalesced) in one go, the row maximum and the sum of exp(x - max) are reduced
// with subgroup operations and one shared word per subgroup, and the results are written from the registers,
// so the row is read once and exp is evaluated once per element. The host uses it when rows are 4-aligned and
// fit (cols <= 4 * VPT * workgroup size) and the device has subgroup arithmetic; else softmax.comp runs.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VPT = 4;

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
layout(std430, set = 0, binding = 2) writeonly buffer BufZV { ZV zv[]; };

shared float s_max[gl_WorkGroupSize.x]; // one per subgroup; sized for the smallest subgroups
shared float s_sum[gl_WorkGroupSize.x];

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint n4 = pc.cols / 4u;
    uint xb = (pc.xo + row * pc.xs0) / 4u;
    uint zb = (pc.zo + row * pc.zs0) / 4u;

    vec4 v[VPT];
    float m = NEG_INF;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        v[i] = vec4(NEG_INF);
        if (c < n4) v[i] = XVF(xv[xb + c]);
        m = max(m, max(max(v[i].x, v[i].y), max(v[i].z, v[i].w)));
    }
    m = subgroupMax(m);
    if (subgroupElect()) s_max[gl_SubgroupID] = m;
    barrier();
    m = s_max[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) m = max(m, s_max[i]);

    float s = 0.0;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        if (c < n4) {
            v[i] = exp(v[i] - m);
            s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
        }
    }
    s = subgroupAdd(s);
    if (subgroupElect()) s_sum[gl_SubgroupID] = s;
    barrier();
    s = s_sum[0];
    for (uint i = 1; i < gl_NumSubgroups; i++) s += s_sum[i];

    float inv = 1.0 / s;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        if (c < n4) zv[zb + c] = ZVC(v[i] * inv);
    }
}
