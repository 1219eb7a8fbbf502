#version 450
// Row softmax for short rows (the host picks it for 4-aligned rows up to a few thousand columns on devices with
// subgroup arithmetic): one subgroup per row and several rows per workgroup, so the reductions are subgroupMax
// and subgroupAdd alone, with no shared memory and no barrier, and a workgroup never waits for its slowest row.
// Each lane loads its VPT 4-element vectors (spaced one subgroup apart, coalesced) in one go and keeps them in
// registers, so the row is read once and exp is evaluated once per element. VPT is sized on the host for the
// subgroup size it expects (SG); where the subgroups come out that wide, the lane strides are constants and,
// for rows of exactly VPT x SG vectors (FULL), the loads and stores need no bounds checks, as in CUDA's
// warp-per-row kernel. Should a subgroup come out narrower, the row no longer fits in registers and the same row
// is done in three passes over memory instead (correct, slower).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VPT = 4;
layout(constant_id = 2) const uint SG = 32;
layout(constant_id = 3) const uint FULL = 0;

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

float max4(vec4 a) {
    return max(max(a.x, a.y), max(a.z, a.w));
}

float sum4(vec4 a) {
    return (a.x + a.y) + (a.z + a.w);
}

// The row at xb / zb (in vectors) of n4 vectors, held in registers, over a subgroup of `lanes` lanes (a
// specialization constant on the fast path, so the indices fold).
void row_in_regs(uint xb, uint zb, uint n4, uint lane, uint lanes, bool full) {
    vec4 v[VPT];
    float m = NEG_INF;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = lane + i * lanes;
        v[i] = vec4(NEG_INF);
        if (full || c < n4) v[i] = XVF(xv[xb + c]);
        m = max(m, max4(v[i]));
    }
    m = subgroupMax(m);
    float s = 0.0;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = lane + i * lanes;
        if (full || c < n4) {
            v[i] = exp(v[i] - m);
            s += sum4(v[i]);
        }
    }
    float inv = 1.0 / subgroupAdd(s);
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = lane + i * lanes;
        if (full || c < n4) zv[zb + c] = ZVC(v[i] * inv);
    }
}

void main() {
    uint n4 = pc.cols / 4u;
    uint step = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumSubgroups;
    uint lane = gl_SubgroupInvocationID;
    // The loops keep every row covered whatever the subgroup count per workgroup turns out to be; row is
    // uniform within a subgroup, so the subgroup operations below run with the whole subgroup.
    uint first = trr_group_id() * gl_NumSubgroups + gl_SubgroupID;
    if (gl_SubgroupSize == SG) {
        // the host makes the workgroup a whole number of SG-wide subgroups, so every subgroup is full
        for (uint row = first; row < pc.rows; row += step)
            row_in_regs((pc.xo + row * pc.xs0) / 4u, (pc.zo + row * pc.zs0) / 4u, n4, lane, SG, FULL != 0u);
        return;
    }
    // A workgroup that is not a whole number of subgroups leaves its last subgroup partly empty.
    uint lanes = min(gl_SubgroupSize, gl_WorkGroupSize.x - gl_SubgroupID * gl_SubgroupSize);
    for (uint row = first; row < pc.rows; row += step) {
        uint xb = (pc.xo + row * pc.xs0) / 4u;
        uint zb = (pc.zo + row * pc.zs0) / 4u;
        if (lanes * VPT >= n4) {
            row_in_regs(xb, zb, n4, lane, lanes, false);
        } else {
            float m = NEG_INF;
            for (uint c = lane; c < n4; c += lanes) m = max(m, max4(XVF(xv[xb + c])));
            m = subgroupMax(m);
            float s = 0.0;
            for (uint c = lane; c < n4; c += lanes) s += sum4(exp(XVF(xv[xb + c]) - m));
            float inv = 1.0 / subgroupAdd(s);
            for (uint c = lane; c < n4; c += lanes) zv[zb + c] = ZVC(exp(XVF(xv[xb + c]) - m) * inv);
        }
    }
}
