#version 450
// Device-to-device copy in whole words: 16-byte words (-DWORD16, uvec4) or 4-byte words. vkCmdCopyBuffer runs
// far below the memory bandwidth on some drivers (NVIDIA's among them), while a plain load/store kernel
// reaches it. pc.rows x pc.cols words with row strides pc.xs0 / pc.zs0 (words); rows == 1 is one packed span.
// pc.xo / pc.zo are 4-byte units (binding offsets are 16-aligned, so they divide evenly into 16-byte words).
// Each invocation loads its EPT words (spaced one workgroup apart, coalesced) before it stores any, so several
// loads are in flight per invocation; the loop over the grid covers sizes beyond one dispatch. The host copies
// any unaligned head and tail bytes itself.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EPT = 2;

#if defined(WORD16)
#define WT uvec4
#define UNITS 4u
#else
#define WT uint
#define UNITS 1u
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufXW { WT xw[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufZW { WT zw[]; };

void main() {
    uint n = pc.rows * pc.cols;
    uint wg = gl_WorkGroupSize.x;
    uint t = gl_LocalInvocationID.x;
    uint ngroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    uint xo = pc.xo / UNITS, zo = pc.zo / UNITS;
    uint step = ngroups * wg * EPT;
    if (pc.rows == 1u) {
        for (uint base = trr_group_id() * wg * EPT + t; base < n; base += step) {
            WT v[EPT];
            [[unroll]] for (uint e = 0; e < EPT; e++) {
                uint i = base + e * wg;
                if (i < n) v[e] = xw[xo + i];
            }
            [[unroll]] for (uint e = 0; e < EPT; e++) {
                uint i = base + e * wg;
                if (i < n) zw[zo + i] = v[e];
            }
        }
        return;
    }
    for (uint base = trr_group_id() * wg * EPT + t; base < n; base += step) {
        WT v[EPT];
        [[unroll]] for (uint e = 0; e < EPT; e++) {
            uint i = base + e * wg;
            uint r = i / pc.cols, c = i - r * pc.cols;
            if (i < n) v[e] = xw[xo + r * pc.xs0 + c];
        }
        [[unroll]] for (uint e = 0; e < EPT; e++) {
            uint i = base + e * wg;
            uint r = i / pc.cols, c = i - r * pc.cols;
            if (i < n) zw[zo + r * pc.zs0 + c] = v[e];
        }
    }
}
