#version 450
// trr_vk_dispatch_probe's dispatches that read before they exit (READS: 1 a push constant, 2 a word of binding
// 0, 3 that word at an index read from a push constant, 4 both independently), under the library's pipeline
// layout: what the first memory reads of a dispatch cost after the flush. Nothing is written: x holds zeros.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Z { float z[]; };
layout(push_constant) uniform P { uint rows; } pc;
void main() {
#if READS == 1
    if (pc.rows == 0u) return;
    z[0] = 1.0;
#elif READS == 2
    float v = x[0];
    if (v == 0.0) return;
    z[0] = v;
#elif READS == 3
    float v = x[pc.rows];
    if (v == 0.0) return;
    z[0] = v;
#else
    uint r = pc.rows;
    float v = x[0];
    if (r == 0u && v == 0.0) return;
    z[0] = v;
#endif
}
