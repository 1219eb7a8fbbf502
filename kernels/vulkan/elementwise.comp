#version 450
// add (-DOP_ADD) and gelu (-DOP_GELU) over rows x cols with row strides; rows == 1 is one packed vector.
// Each invocation handles EPT elements spaced one workgroup apart (coalesced), in a grid-stride loop.
#extension GL_GOOGLE_include_directive : require
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
            uint r = 0, c = i;
            if (pc.rows != 1) {
                r = i / pc.cols;
                c = i - r * pc.cols;
            }
            float a = float(x[pc.xo + r * pc.xs0 + c]);
#if defined(OP_ADD)
            // precise: f32 add must be bit-exact, so no contraction or reassociation.
            precise float v = a + float(y[pc.yo + r * pc.ys0 + c]);
#else
            float v = trr_gelu(a);
#endif
            z[pc.zo + r * pc.zs0 + c] = ZT(v);
        }
    }
}
