// silu as a user op in GLSL 450 (SPIR-V at build time), with the structure of the built-in's kernel
// (kernels/vulkan/elementwise.comp): where the row's operands start on a 4-element boundary and the config asks
// for vectors (VEC = 4), each invocation loads its EPT 4-float vectors (spaced one workgroup apart, coalesced)
// before it computes and stores them, and the row's last cols % 4 elements go one by one; otherwise EPT single
// elements an invocation. The tile parameters are the built-in's config fields: THREADS (threads), VEC
// (vector_width: 4 or 1) and BLOCK_N (block_n, elements a workgroup: EPT = BLOCK_N / (THREADS * VEC)), so one
// config means the same kernel shape for both; the same expression as the built-in's silu.
// Layout: docs/custom-ops.md's for Vulkan (binding 0 x, 1 x again, 2 y; push constants as swiglu.comp's);
// specialization constant 0 is the threads per workgroup, 1.. the tile parameters in the definition's order.
#version 450
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint THREADS = 256;
layout(constant_id = 2) const uint VEC = 4;
layout(constant_id = 3) const uint BLOCK_N = 1024;
const uint EPT_ = BLOCK_N / (THREADS * VEC);
const uint EPT = EPT_ > 0u ? EPT_ : 1u;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufXV { vec4 xv[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufYV { vec4 yv[]; };
layout(push_constant) uniform Push {
    uint rows, cols, dtype;
    uint xo, unused_o, yo;
    uint xs, unused1, unused_s, ys;
} p;

float unary(float a) {
    float h = exp(-0.5 * abs(a));
    return (a < 0.0 ? a * h * h : a) / (1.0 + h * h);
}

void main() {
    const uint r = gl_WorkGroupID.y, t = gl_LocalInvocationID.x, g = gl_WorkGroupID.x;
    if (r >= p.rows) return;
    const uint x0 = p.xo + r * p.xs, y0 = p.yo + r * p.ys, n = p.cols;
    if (VEC == 4u && x0 % 4u == 0u && y0 % 4u == 0u) {
        const uint n4 = n / 4u, base = g * THREADS * EPT + t;
        vec4 a[EPT];
        [[unroll]] for (uint e = 0; e < EPT; e++) {
            const uint i = base + e * THREADS;
            if (i < n4) a[e] = xv[x0 / 4u + i];
        }
        [[unroll]] for (uint e = 0; e < EPT; e++) {
            const uint i = base + e * THREADS;
            if (i < n4) yv[y0 / 4u + i] = vec4(unary(a[e].x), unary(a[e].y), unary(a[e].z), unary(a[e].w));
        }
        if (g == 0u) // the row's tail past the last whole vector
            for (uint i = n4 * 4u + t; i < n; i += THREADS) y[y0 + i] = unary(x[x0 + i]);
        return;
    }
    const uint base = g * THREADS * EPT * VEC + t;
    [[unroll]] for (uint e = 0; e < EPT * VEC; e++) {
        const uint c = base + e * THREADS;
        if (c >= n) break;
        y[y0 + c] = unary(x[x0 + c]);
    }
}
