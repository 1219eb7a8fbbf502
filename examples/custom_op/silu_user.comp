// silu as a user op in GLSL 450 (SPIR-V at build time): four floats an invocation, the built-in's expression.
// Layout: docs/custom-ops.md's for Vulkan (binding 0 x, 1 x again, 2 y; push constants as swiglu.comp's);
// specialization constant 0 is the threads per workgroup, 1 the tile parameter BLOCK.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BLOCK = 128;

layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { float y[]; };
layout(push_constant) uniform Push {
    uint rows, cols, dtype;
    uint xo, unused_o, yo;
    uint xs, unused1, unused_s, ys;
} p;

float silu_of(float a) {
    const float h = exp(-0.5 * abs(a));
    return (a < 0.0 ? a * h * h : a) / (1.0 + h * h);
}

void main() {
    const uint r = gl_WorkGroupID.y;
    const uint c = gl_GlobalInvocationID.x * 4;
    if (r >= p.rows) return;
    for (uint i = c; i < c + 4 && i < p.cols; i++) y[p.yo + r * p.ys + i] = silu_of(x[p.xo + r * p.xs + i]);
}
