#version 450
// Row norms, one workgroup per row, f32 arithmetic and one rounding on store. The entry is the op's name, given
// as a define (backend_vulkan/stems.cmake): ENTRY_rms_norm, y = x / sqrt(mean(x^2) + eps) * w, or
// ENTRY_layer_norm, y = (x - mean) / sqrt(var + eps) * w + b with the biased variance.
// layer_norm sums d = x - x0, shifted by the row's first element: sums of d and d^2 cancel far less than sums
// of x and x^2 where the mean is large against the spread, and a constant row gives d = 0 exactly, so mean and
// variance are exactly 0 and the row comes out exactly b (0 / 0 = NaN with eps = 0, as docs/ops.md's float64
// definition gives).
// LOOP = 0: the row in registers, VPT 4-element vectors per invocation spaced one workgroup apart (coalesced),
// so x is read once; the two sums go through subgroupAdd, one pair per subgroup in shared memory, one barrier.
// LOOP = 1: rows longer than registers hold: one pass for the sums, a second that reads x again and writes y,
// four vectors per invocation and loop iteration. lavapipe ends any invocation's loops after 65535 iterations in
// all; the host sizes the workgroup so that both passes stay well inside that, and refuses a config that would
// not (vk_norm.c).
// VEC: x and y rows are whole 4-element vectors on vector boundaries, read and written as vectors; else single
// elements, bounds-checked, in the same layout. WVEC: w (and b) contiguous on a vector boundary as well.
// FULL: the row is exactly VPT vectors per invocation (no bounds checks).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VPT = 4;
layout(constant_id = 2) const uint VEC = 0;
layout(constant_id = 3) const uint WVEC = 0;
layout(constant_id = 4) const uint FULL = 0;
layout(constant_id = 5) const uint LOOP = 0;

#if defined(ENTRY_layer_norm)
#define LAYER 1
#elif defined(ENTRY_rms_norm)
#define LAYER 0
#else
#error "norm.comp: define ENTRY_rms_norm or ENTRY_layer_norm"
#endif

#if defined(X_F16)
#define XV f16vec4
#elif defined(X_BF16)
#define XV uvec2
#else
#define XV vec4
#endif
#if defined(Z_F16)
#define ZV f16vec4
#elif defined(Z_BF16)
#define ZV uvec2
#else
#define ZV vec4
#endif
// binding 0: x; 1: w; 2: y; 3: b (layer_norm; rms_norm binds w there and never reads it)
layout(std430, set = 0, binding = 0) readonly buffer BufXV { XV xv[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufWV { XV wv[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufZV { ZV zv[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufU { XT u[]; };
layout(std430, set = 0, binding = 3) readonly buffer BufUV { XV uv[]; };

// The push constants of common.glsl as the row norms use them: x's row stride xs0, w's offset yo and element
// stride ys0, y's row stride zs0; eps in alpha; b's offset and element stride in the (matmul) batch fields.
#define EPS pc.alpha
#define UO pc.xb
#define US pc.yb

shared float s_a[gl_WorkGroupSize.x]; // one per subgroup; sized for the smallest subgroups
shared float s_b[gl_WorkGroupSize.x];

float sum4(vec4 a) {
    return (a.x + a.y) + (a.z + a.w);
}

// Vector c (elements 4c .. 4c + 3) of the row starting at element xb; elements past n read as pad.
vec4 load_x(uint xb, uint c, uint n, float pad) {
    uint e = 4u * c;
    if (VEC != 0u) return e < n ? XVF(xv[xb / 4u + c]) : vec4(pad);
    vec4 v = vec4(pad);
    [[unroll]] for (uint k = 0; k < 4u; k++)
        if (e + k < n) v[k] = XF(x[xb + e + k]);
    return v;
}

// w (or b, from binding 3) at columns 4c .. 4c + 3; columns past n read column n - 1 (never stored).
vec4 load_w(uint c, uint n) {
    if (WVEC != 0u) return XVF(wv[pc.yo / 4u + c]);
    vec4 v;
    [[unroll]] for (uint k = 0; k < 4u; k++) v[k] = XF(y[pc.yo + min(4u * c + k, n - 1u) * pc.ys0]);
    return v;
}

vec4 load_b(uint c, uint n) {
    if (WVEC != 0u) return XVF(uv[UO / 4u + c]);
    vec4 v;
    [[unroll]] for (uint k = 0; k < 4u; k++) v[k] = XF(u[UO + min(4u * c + k, n - 1u) * US]);
    return v;
}

void store_y(uint zb, uint c, uint n, vec4 r) {
    uint e = 4u * c;
    if (VEC != 0u) {
        zv[zb / 4u + c] = ZVC(r);
        return;
    }
    [[unroll]] for (uint k = 0; k < 4u; k++)
        if (e + k < n) z[zb + e + k] = ZC(r[k]);
}

// The workgroup's totals of a and b: subgroup sums, one pair per subgroup in shared memory, one barrier; every
// invocation adds the pairs in the same order, so all of them get the same totals.
vec2 row_sums(float a, float b) {
#if LAYER
    a = subgroupAdd(a);
#endif
    b = subgroupAdd(b);
    if (subgroupElect()) {
        s_a[gl_SubgroupID] = a;
        s_b[gl_SubgroupID] = b;
    }
    barrier();
    float ta = 0.0, tb = 0.0;
    if (gl_NumSubgroups <= 8u) {
        for (uint i = 0; i < gl_NumSubgroups; i++) {
#if LAYER
            ta += s_a[i];
#endif
            tb += s_b[i];
        }
    } else {
        // many subgroups: each lane adds a share, then the subgroup adds the shares
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
#if LAYER
            ta += s_a[i];
#endif
            tb += s_b[i];
        }
#if LAYER
        ta = subgroupAdd(ta);
#endif
        tb = subgroupAdd(tb);
    }
    return vec2(ta, tb);
}

// From the row's sums of d and d^2 (layer_norm; d = x - shift) or of x^2 (rms_norm): what y = (v - m) * r * w
// (+ b) takes, v being d or x. 1 / sqrt rather than inversesqrt, which is undefined at 0 (eps = 0).
vec2 row_scale(vec2 s, uint n) {
    float inv_n = 1.0 / float(n);
#if LAYER
    float m = s.x * inv_n;
    float var = max(s.y * inv_n - m * m, 0.0);
    return vec2(m, 1.0 / sqrt(var + EPS));
#else
    return vec2(0.0, 1.0 / sqrt(s.y * inv_n + EPS));
#endif
}

vec4 norm_out(vec4 d, vec2 mr, uint c, uint n) {
#if LAYER
    return (d - mr.x) * mr.y * load_w(c, n) + load_b(c, n);
#else
    return d * mr.y * load_w(c, n);
#endif
}

void row_in_regs(uint xb, uint zb, uint n, uint t, uint wg) {
    uint n4 = (n + 3u) / 4u;
    // layer_norm's shift, and the pad past the row's end (d = 0 there: it adds nothing)
    float sh = LAYER != 0 ? XF(x[xb]) : 0.0;
    vec4 v[VPT];
    float a = 0.0, b = 0.0;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        v[i] = vec4(0.0);
        if (FULL != 0u || c < n4) v[i] = load_x(xb, c, n, sh) - sh;
        a += sum4(v[i]);
        b += dot(v[i], v[i]);
    }
    vec2 mr = row_scale(row_sums(a, b), n);
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        if (FULL != 0u || c < n4) store_y(zb, c, n, norm_out(v[i], mr, c, n));
    }
}

void row_in_loops(uint xb, uint zb, uint n, uint t, uint wg) {
    uint n4 = (n + 3u) / 4u;
    float sh = LAYER != 0 ? XF(x[xb]) : 0.0;
    // four vectors in flight per iteration, each summed on its own (four chains, shorter than one)
    vec4 a4 = vec4(0.0), b4 = vec4(0.0);
    uint c = t;
    for (; c + 3u * wg < n4; c += 4u * wg) {
        vec4 d0 = load_x(xb, c, n, sh) - sh, d1 = load_x(xb, c + wg, n, sh) - sh;
        vec4 d2 = load_x(xb, c + 2u * wg, n, sh) - sh, d3 = load_x(xb, c + 3u * wg, n, sh) - sh;
        a4 += vec4(sum4(d0), sum4(d1), sum4(d2), sum4(d3));
        b4 += vec4(dot(d0, d0), dot(d1, d1), dot(d2, d2), dot(d3, d3));
    }
    for (; c < n4; c += wg) {
        vec4 d = load_x(xb, c, n, sh) - sh;
        a4.x += sum4(d);
        b4.x += dot(d, d);
    }
    vec2 mr = row_scale(row_sums(sum4(a4), sum4(b4)), n);
    c = t;
    for (; c + 3u * wg < n4; c += 4u * wg) {
        vec4 d0 = load_x(xb, c, n, sh) - sh, d1 = load_x(xb, c + wg, n, sh) - sh;
        vec4 d2 = load_x(xb, c + 2u * wg, n, sh) - sh, d3 = load_x(xb, c + 3u * wg, n, sh) - sh;
        store_y(zb, c, n, norm_out(d0, mr, c, n));
        store_y(zb, c + wg, n, norm_out(d1, mr, c + wg, n));
        store_y(zb, c + 2u * wg, n, norm_out(d2, mr, c + 2u * wg, n));
        store_y(zb, c + 3u * wg, n, norm_out(d3, mr, c + 3u * wg, n));
    }
    for (; c < n4; c += wg) store_y(zb, c, n, norm_out(load_x(xb, c, n, sh) - sh, mr, c, n));
}

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup, so no barrier is skipped by a subset
    uint xb = pc.xo + row * pc.xs0;
    uint zb = pc.zo + row * pc.zs0;
    if (LOOP == 0u)
        row_in_regs(xb, zb, pc.cols, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
    else
        row_in_loops(xb, zb, pc.cols, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
}
