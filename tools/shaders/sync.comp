#version 450
// trr_vk_sync_probe's dispatch: the library's operand layout (three storage buffers, 64 bytes of push constants)
// and a kernel whose workgroups read the row count (0) and exit, so a call's time is launch and synchronization.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(push_constant) uniform Push { uint rows; uint words[15]; } pc;
void main() {
    if (gl_WorkGroupID.x >= pc.rows) return;
    z[gl_GlobalInvocationID.x] = x[gl_GlobalInvocationID.x] + y[gl_GlobalInvocationID.x];
}
