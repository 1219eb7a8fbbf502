#version 450
// Row softmax with the row in registers, one workgroup per row: each invocation loads its VPT 4-element vectors
// (spaced one workgroup apart, coalesced) in one go, so the row is read once and exp is evaluated once per
// element. One barrier: each subgroup takes its own maximum m_s (subgroupMax) and the sum of exp(x - m_s) over
// its elements (subgroupAdd) and leaves the pair in shared memory; every invocation then merges the pairs into
// the row's maximum M and sum S = sum of s_s·exp(m_s - M) (over many subgroups shared out over each subgroup's
// lanes: SERIAL_MERGE_MAX), and writes exp(x - m_s)·(exp(m_s - M) / S) from its registers. FULL (a
// specialization constant) says the row is exactly VPT vectors per invocation: no bounds checks. The host uses
// it when rows are 4-aligned and fit (cols <= 4 * VPT * workgroup size) and the device has subgroup arithmetic;
// else softmax.comp runs.
// -inf is a masked entry (and pads the vectors past the row's end): a subgroup that saw nothing else keeps
// m_s = -inf and s_s = 0 and adds nothing; a row of -inf alone gets M = -inf and comes out NaN, as docs/ops.md's
// float64 definition gives.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VPT = 4;
layout(constant_id = 2) const uint FULL = 0;
// Up to this many subgroups every invocation merges the pairs itself; beyond, the subgroup shares the work. On
// NVIDIA H200 merging through subgroup operations at every size ran slower over 2-4 subgroups, alike over 16 and
// far faster over 32, where the serial merge costs every invocation 32 exps (docs/performance.md).
#define SERIAL_MERGE_MAX 8u

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
        if (FULL != 0u || c < n4) v[i] = XVF(xv[xb + c]);
        m = max(m, max(max(v[i].x, v[i].y), max(v[i].z, v[i].w)));
    }
    float ms = subgroupMax(m);
    // exp(-inf - -inf) is NaN: a subgroup of masked entries alone takes them against 0, which gives exactly 0
    float base = ms == NEG_INF ? 0.0 : ms;
    float s = 0.0;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        v[i] = exp(v[i] - base);
        s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
    s = subgroupAdd(s);
    if (subgroupElect()) {
        s_max[gl_SubgroupID] = ms;
        s_sum[gl_SubgroupID] = s;
    }
    barrier();
    float mm = NEG_INF, total = 0.0;
    if (gl_NumSubgroups <= SERIAL_MERGE_MAX) {
        // few pairs: every invocation reads them all (broadcast loads), no shuffles on the way
        for (uint i = 0; i < gl_NumSubgroups; i++) mm = max(mm, s_max[i]);
        for (uint i = 0; i < gl_NumSubgroups; i++) {
            float si = s_sum[i];
            // a subgroup of masked entries alone adds nothing (its sum is 0; its exp factor may be NaN)
            if (si != 0.0 || mm == NEG_INF) total += si * exp(s_max[i] - mm);
        }
    } else {
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) mm = max(mm, s_max[i]);
        mm = subgroupMax(mm);
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
            float si = s_sum[i];
            if (si != 0.0 || mm == NEG_INF) total += si * exp(s_max[i] - mm);
        }
        total = subgroupAdd(total);
    }
    // a subgroup of masked entries alone holds zeros and writes zeros (exp(0 - mm) may overflow), unless the
    // whole row is masked: then mm is -inf and the row comes out NaN
    float scale = ms == NEG_INF && mm != NEG_INF ? 0.0 : exp(base - mm) / total;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        if (FULL != 0u || c < n4) zv[zb + c] = ZVC(v[i] * scale);
    }
}
