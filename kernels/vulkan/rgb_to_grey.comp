#version 450
// Planar u8 RGB [3,H,W] to grey [H,W] (u8 with -DZ_U8, else f32). x.s0 = plane stride, x.s1 = row stride.
#extension GL_GOOGLE_include_directive : require
#ifndef X_U8 // the input is u8 (the build passes it too)
#define X_U8
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EPT = 4;

void main() {
    uint n = pc.rows * pc.cols;
    uint wg = gl_WorkGroupSize.x;
    uint step = gl_NumWorkGroups.x * wg * EPT;
    for (uint base = gl_WorkGroupID.x * wg * EPT + gl_LocalInvocationID.x; base < n; base += step) {
        for (uint e = 0; e < EPT; e++) {
            uint i = base + e * wg;
            if (i >= n) break;
            uint r = i / pc.cols;
            uint c = i - r * pc.cols;
            uint p = pc.xo + r * pc.xs1 + c;
            precise float v = 0.2989 * float(uint(x[p])) + 0.5870 * float(uint(x[p + pc.xs0])) +
                              0.1140 * float(uint(x[p + 2u * pc.xs0]));
#if defined(Z_U8)
            z[pc.zo + r * pc.zs0 + c] = uint8_t(uint(clamp(floor(v + 0.5), 0.0, 255.0)));
#else
            z[pc.zo + r * pc.zs0 + c] = v;
#endif
        }
    }
}
