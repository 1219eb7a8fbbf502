// swiglu in GLSL 450, compiled to SPIR-V at build time (glslangValidator --vn): y = x * silu(g), f32. The layout
// is docs/custom-ops.md's for Vulkan: bindings 0 and 1 the inputs (x, g), 2 the output (y); the push constants
// rows, cols, the dtype (always f32 here: the definition's only one), the three element offsets, x's row stride,
// an unused word, g's and y's row strides (then the parameters: none here); specialization constant 0 is the
// threads per workgroup, 1 and 2 the tile parameters BLOCK and ITEMS. silu: see swiglu.cl.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BLOCK = 256;
layout(constant_id = 2) const uint ITEMS = 4;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufG { float g[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y[]; };
layout(push_constant) uniform Push {
    uint rows, cols, dtype;
    uint xo, go, yo;
    uint xs, unused1, gs, ys;
} p;

void main() {
    const uint r = gl_WorkGroupID.y;
    const uint first = gl_WorkGroupID.x * BLOCK * ITEMS + gl_LocalInvocationID.x;
    for (uint i = 0; i < ITEMS; i++) {
        const uint c = first + i * BLOCK;
        if (c >= p.cols || r >= p.rows) return;
        const float gv = g[p.go + r * p.gs + c];
        const float h = exp(-0.5 * abs(gv));
        const float silu = (gv < 0.0 ? gv * h * h : gv) / (1.0 + h * h);
        y[p.yo + r * p.ys + c] = x[p.xo + r * p.xs + c] * silu;
    }
}
