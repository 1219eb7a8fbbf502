#version 450
// Row sums in f32, one workgroup per row: strided partial sums per invocation, then a shared-memory tree.
// The workgroup size must be a power of two. z is f32 with element stride zs0.
// Four accumulators, four elements per loop iteration: a shorter dependency chain, and a quarter of the loop
// iterations (lavapipe ends any invocation's loops after 65535 iterations in all; the host refuses rows too long
// for that, check_config).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

shared float s_part[gl_WorkGroupSize.x];

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint xb = pc.xo + row * pc.xs0;
    // Each accumulator is compensated (Kahan, trr_kahan_add): a plain f32 sum of n terms errs by up to n roundings,
    // which a row of 2^22 same-sign terms over 256 invocations (4096 additions each) shows well past the bound.
    float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    float k0 = 0.0, k1 = 0.0, k2 = 0.0, k3 = 0.0;
    uint c = t;
    for (; c + 3u * wg < pc.cols; c += 4u * wg) {
        trr_kahan_add(a0, k0, XF(x[xb + c]));
        trr_kahan_add(a1, k1, XF(x[xb + c + wg]));
        trr_kahan_add(a2, k2, XF(x[xb + c + 2u * wg]));
        trr_kahan_add(a3, k3, XF(x[xb + c + 3u * wg]));
    }
    for (; c < pc.cols; c += wg) trr_kahan_add(a0, k0, XF(x[xb + c]));
    s_part[t] = ((a0 - k0) + (a1 - k1)) + ((a2 - k2) + (a3 - k3));
    barrier();
    for (uint h = wg / 2u; h > 0u; h >>= 1) {
        if (t < h) s_part[t] += s_part[t + h];
        barrier();
    }
    if (t == 0u) z[pc.zo + row * pc.zs0] = s_part[0];
}
