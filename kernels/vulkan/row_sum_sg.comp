#version 450
// Row sums in f32, one workgroup per row, variant subgroup: each invocation reads 4-element vectors (VEC = 4,
// where every row starts on a vector boundary) or single elements, LOADS of them per loop iteration, all issued
// before any is added so that many loads are in flight; each subgroup adds its invocations' sums with
// subgroupAdd and the first invocation adds the subgroups' sums in order: one barrier where row_sum.comp's
// shared-memory tree takes log2(threads). z is f32 with element stride zs0. Loops stay short for lavapipe's
// 65535-iteration budget (the host checks it, check_config).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VEC = 1;
layout(constant_id = 2) const uint LOADS = 4;
#if defined(X_F16)
#define XV f16vec4
#elif defined(X_BF16)
#define XV uvec2
#else
#define XV vec4
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufXV { XV xv[]; };
shared float s_part[gl_WorkGroupSize.x]; // one per subgroup

float hsum(vec4 v) { return (v.x + v.y) + (v.z + v.w); }

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup
    uint t = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint xb = pc.xo + row * pc.xs0;
    // Every accumulator is compensated (Kahan, trr_kahan_add), as in row_sum.comp.
    float a[LOADS], k[LOADS];
    [[unroll]] for (uint i = 0u; i < LOADS; i++) {
        a[i] = 0.0;
        k[i] = 0.0;
    }
    uint tail = 0u; // first column the vector loop leaves
    if (VEC == 4u) {
        uint vb = xb / 4u, n4 = pc.cols / 4u, c = t;
        for (; c + (LOADS - 1u) * wg < n4; c += LOADS * wg) {
            vec4 v[LOADS];
            [[unroll]] for (uint i = 0u; i < LOADS; i++) v[i] = XVF(xv[vb + c + i * wg]);
            [[unroll]] for (uint i = 0u; i < LOADS; i++) trr_kahan_add(a[i], k[i], hsum(v[i]));
        }
        for (; c < n4; c += wg) trr_kahan_add(a[0], k[0], hsum(XVF(xv[vb + c])));
        tail = n4 * 4u;
    } else {
        uint c = t;
        for (; c + (LOADS - 1u) * wg < pc.cols; c += LOADS * wg) {
            float v[LOADS];
            [[unroll]] for (uint i = 0u; i < LOADS; i++) v[i] = XF(x[xb + c + i * wg]);
            [[unroll]] for (uint i = 0u; i < LOADS; i++) trr_kahan_add(a[i], k[i], v[i]);
        }
        tail = c - t; // the strided loop below finishes from here
    }
    float s = 0.0, ks = 0.0;
    for (uint c = tail + t; c < pc.cols; c += wg) trr_kahan_add(s, ks, XF(x[xb + c]));
    [[unroll]] for (uint i = 0u; i < LOADS; i++) trr_kahan_add(s, ks, a[i] - k[i]);
    s -= ks;
    s = subgroupAdd(s);
    if (subgroupElect()) s_part[gl_SubgroupID] = s;
    barrier();
    if (t == 0u) {
        float total = 0.0, kt = 0.0; // up to 128 subgroups' sums: compensated too
        for (uint i = 0u; i < gl_NumSubgroups; i++) trr_kahan_add(total, kt, s_part[i]);
        z[pc.zo + row * pc.zs0] = total - kt;
    }
}
