#version 450
// Row softmax, one workgroup per row. Pass 1 keeps an online (max, sum) pair per invocation, so rows of any
// length take one read; the pairs are merged in shared memory; pass 2 re-reads the row (mostly from cache) and
// writes exp(x - max) / sum. The workgroup size must be a power of two.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

shared float s_max[gl_WorkGroupSize.x];
shared float s_sum[gl_WorkGroupSize.x];

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup, so no barrier is skipped by a subset
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint xb = pc.xo + row * pc.xs0;
    uint zb = pc.zo + row * pc.zs0;

    float m = NEG_INF;
    float s = 0.0;
    for (uint c = t; c < pc.cols; c += wg) {
        float v = float(x[xb + c]);
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else {
            s += exp(v - m);
        }
    }
    s_max[t] = m;
    s_sum[t] = s;
    barrier();
    for (uint h = wg / 2u; h > 0u; h >>= 1) {
        if (t < h) {
            float m2 = s_max[t + h];
            if (m2 != NEG_INF) { // an invocation that saw no element contributes nothing
                float m1 = s_max[t];
                float mm = max(m1, m2);
                float s1 = m1 == NEG_INF ? 0.0 : s_sum[t] * exp(m1 - mm);
                s_sum[t] = s1 + s_sum[t + h] * exp(m2 - mm);
                s_max[t] = mm;
            }
        }
        barrier();
    }
    m = s_max[0];
    float inv = 1.0 / s_sum[0];
    for (uint c = t; c < pc.cols; c += wg) {
        z[zb + c] = ZT(exp(float(x[xb + c]) - m) * inv);
    }
}
