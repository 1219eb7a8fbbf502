#version 450
// The last pass of a split-K matmul (core/matmul_split.h): C = act(sum of the K slices' f32 partial products).
// x holds the slices' M x N matrices one after another (row stride xs0, slice stride xb), pc.k of them; each
// invocation adds one output's partials in slice order, so the result does not depend on the grid, then applies
// the epilogue (spec constant 1, as the matmul kernels' 9) and stores C in its dtype (-DZ_F16, -DZ_BF16), rounded
// once. y is bound but not read.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EPI = 0; // 0 none, 1 relu, 2 leaky_relu, 3 gelu (trr_epilogue)

float act(float v) {
    if (EPI == 1u) return v <= 0.0 ? 0.0 : v; // a NaN stays NaN
    if (EPI == 2u) return v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) return trr_gelu(v);
    return v;
}

void main() {
    const uint e = trr_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (e >= pc.rows * pc.cols) return;
    const uint row = e / pc.cols, col = e % pc.cols;
    uint at = pc.xo + row * pc.xs0 + col;
    float sum = 0.0;
    for (uint s = 0u; s < pc.k; s++, at += pc.xb) sum += x[at];
    z[pc.zo + row * pc.zs0 + col] = ZC(act(sum));
}
