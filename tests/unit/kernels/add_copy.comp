// A copy of the built-in add as a user op's Vulkan kernel (test_user_op.c), in docs/custom-ops.md's layout:
// bindings 0, 1 the inputs and 2 the output; push constants rows, cols, the dtype, the element offsets,
// x's row stride, an unused word, y's and z's row strides; specialization constant 0 the threads per workgroup.
#version 450
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) readonly buffer BufX { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY { float y[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufZ { float z[]; };
layout(push_constant) uniform Push {
    uint rows, cols, dtype;
    uint xo, yo, zo;
    uint xs, unused1, ys, zs;
} p;

void main() {
    const uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (c >= p.cols || r >= p.rows) return;
    z[p.zo + r * p.zs + c] = x[p.xo + r * p.xs + c] + y[p.yo + r * p.ys + c];
}
