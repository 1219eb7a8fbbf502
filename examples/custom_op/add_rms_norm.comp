// add_rms_norm in GLSL 450, a row op, compiled to SPIR-V at build time (glslangValidator --vn): h = x + r,
// y = h / sqrt(mean(h^2) + eps) * w, f32. The layout is docs/custom-ops.md's for row ops on Vulkan: binding i the
// i-th operand (x, r, w, then y, h); push constants rows, cols, the dtype (f32 here: the definition's only one),
// five element offsets, five strides (x, r, y, h: row strides; w: its element stride), then the parameters (eps).
// Specialization constant 0 is the threads per workgroup, 1 the tile parameter THREADS (the same value here:
// the launch rule's threads are THREADS). One workgroup per row; the arithmetic is add_rms_norm.cl's.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint THREADS = 256;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufR { float r[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufW { float w[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 4) buffer BufH { float h[]; };
layout(push_constant) uniform Push {
    uint rows, cols, dtype;
    uint xo, ro, wo, yo, ho;
    uint xs, rs, ws, ys, hs;
    float eps;
} p;

shared float part[THREADS];

void main() {
    const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x; // one workgroup per row: none past the last
    const uint xb = p.xo + row * p.xs, rb = p.ro + row * p.rs, yb = p.yo + row * p.ys, hb = p.ho + row * p.hs;
    float ss = 0.0;
    for (uint c = t; c < p.cols; c += THREADS) {
        const precise float v = x[xb + c] + r[rb + c];
        h[hb + c] = v;
        ss += v * v;
    }
    part[t] = ss;
    barrier();
    for (uint s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        barrier();
    }
    const float rstd = 1.0 / sqrt(part[0] / float(p.cols) + p.eps);
    for (uint c = t; c < p.cols; c += THREADS) y[yb + c] = h[hb + c] * rstd * w[p.wo + c * p.ws];
}
