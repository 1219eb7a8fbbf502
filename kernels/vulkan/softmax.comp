#version 450
// Row softmax, one workgroup per row. Pass 1 keeps an online (max, sum) pair per invocation, so rows of any
// length take one read; the pairs are merged in shared memory; pass 2 re-reads the row (mostly from cache) and
// writes exp(x - max) / sum. The workgroup size must be a power of two.
// -inf is a masked entry: it adds exactly 0 and never takes part in a rescale, since exp(-inf - -inf) is NaN; a
// row of -inf alone ends with max -inf and sum 0 and comes out NaN, as docs/ops.md's float64 definition gives. A NaN
// makes its invocation's sum NaN, and the merge passes that on whatever that invocation's max is.
// Each invocation's running sum is compensated (Kahan), so a row of 2^20 over few invocations keeps the error of
// a handful of roundings. Both passes take four elements per loop iteration: lavapipe ends any invocation's
// loops after 65535 iterations in all, and the host refuses (check_config) rows too long for that.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;

shared float s_max[gl_WorkGroupSize.x];
shared float s_sum[gl_WorkGroupSize.x];

// Adds v to the running (m, s, comp): s·e^m is the sum so far, less comp·e^m (the compensation).
void online_add(float v, inout float m, inout float s, inout float comp) {
    float t;
    if (v > m) {
        float f = exp(m - v); // 0 while m is still -inf
        s *= f;
        comp *= f;
        m = v;
        t = 1.0;
    } else if (v != NEG_INF) {
        t = exp(v - m); // NaN for a NaN v
    } else {
        return; // masked: adds exactly 0
    }
    precise float y = t - comp;
    precise float u = s + y;
    precise float nc = (u - s) - y;
    comp = nc;
    s = u;
}

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup, so no barrier is skipped by a subset
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint xb = pc.xo + row * pc.xs0;
    uint zb = pc.zo + row * pc.zs0;
    uint n = pc.cols;

    float m = NEG_INF, s = 0.0, comp = 0.0;
    uint c = t;
    for (; c + 3u * wg < n; c += 4u * wg) {
        online_add(XF(x[xb + c]), m, s, comp);
        online_add(XF(x[xb + c + wg]), m, s, comp);
        online_add(XF(x[xb + c + 2u * wg]), m, s, comp);
        online_add(XF(x[xb + c + 3u * wg]), m, s, comp);
    }
    for (; c < n; c += wg) online_add(XF(x[xb + c]), m, s, comp);
    s_max[t] = m;
    s_sum[t] = s - comp;
    barrier();
    for (uint h = wg / 2u; h > 0u; h >>= 1) {
        if (t < h) {
            float m1 = s_max[t], m2 = s_max[t + h];
            float s1 = s_sum[t], s2 = s_sum[t + h];
            float mm = max(m1, m2);
            // a sum of 0 (nothing but masked entries seen) contributes nothing, whatever its max
            float a = s1 == 0.0 ? 0.0 : s1 * exp(m1 - mm);
            float b = s2 == 0.0 ? 0.0 : s2 * exp(m2 - mm);
            s_max[t] = mm;
            s_sum[t] = a + b;
        }
        barrier();
    }
    m = s_max[0];
    float inv = 1.0 / s_sum[0];
    c = t;
    for (; c + 3u * wg < n; c += 4u * wg) {
        z[zb + c] = ZC(exp(XF(x[xb + c]) - m) * inv);
        z[zb + c + wg] = ZC(exp(XF(x[xb + c + wg]) - m) * inv);
        z[zb + c + 2u * wg] = ZC(exp(XF(x[xb + c + 2u * wg]) - m) * inv);
        z[zb + c + 3u * wg] = ZC(exp(XF(x[xb + c + 3u * wg]) - m) * inv);
    }
    for (; c < n; c += wg) z[zb + c] = ZC(exp(XF(x[xb + c]) - m) * inv);
}
