#version 450
// Row norms, one workgroup per row, f32 arithmetic and one rounding on store. The entry is the op's name, given
// as a define (backend_vulkan/vk_kinds.h): ENTRY_rms_norm, y = x / sqrt(mean(x^2) + eps) * w, or
// ENTRY_layer_norm, y = (x - mean) / sqrt(var + eps) * w + b with the biased variance.
// layer_norm sums d = x - x0, shifted by the row's first element: sums of d and d^2 cancel far less than sums
// of x and x^2 where the mean is large against the spread, and a constant row gives d = 0 exactly, so mean and
// variance are exactly 0 and the row comes out exactly b (0 / 0 = NaN with eps = 0, as docs/ops.md's float64
// definition gives).
// LOOP = 0: the row in registers, VPT 16-byte vectors (4 f32, 8 f16 or bf16: UNIT) per invocation spaced one
// workgroup apart (coalesced), so x is read once; the two sums go through subgroupAdd, one pair per subgroup in
// shared memory, one barrier.
// LOOP = 1: rows longer than registers hold: one pass for the sums, a second that reads x again and writes y,
// four vectors per invocation and loop iteration. lavapipe ends any invocation's loops after 65535 iterations in
// all; the host sizes the workgroup so that both passes stay well inside that, and refuses a config that would
// not (vk_norm.c).
// VEC: x and y rows are whole vectors on vector boundaries, read and written as vectors; else single
// elements, bounds-checked, in the same layout. WVEC: w (and b) contiguous on a vector boundary as well.
// FULL: the row is exactly VPT vectors per invocation (no bounds checks). PREFETCH (with WVEC): the register
// kernel reads w and b before the barrier, which hides their latency behind the reduction's but holds them in
// registers across it (the host asks for it on small workgroups, where fewer resident invocations cost less).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define TRR_OWN_BINDINGS
#include "common.glsl"

// The specialization constants, as a user row op's tile parameters reach its kernel (docs/custom-ops.md, Row
// ops), so a user op defined with this shader runs it as it is: 0 the threads, 1 VPT, 2 PATH, the kernel's path
// as a set of flags: exactly one of REGS (1) and LOOP (2) (so it is at least 1, as a tile parameter is), then
// VEC (4), WVEC (8), FULL (16), PREFETCH (32). Specialization folds the flags as it folds constants.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VPT = 4;
layout(constant_id = 2) const uint PATH = 1;
const uint LOOP = (PATH >> 1) & 1u;
const uint VEC = (PATH >> 2) & 1u;
const uint WVEC = (PATH >> 3) & 1u;
const uint FULL = (PATH >> 4) & 1u;
const uint PREFETCH = (PATH >> 5) & 1u;

#if defined(ENTRY_layer_norm)
#define LAYER 1
#elif defined(ENTRY_rms_norm)
#define LAYER 0
#else
#error "norm.comp: define ENTRY_rms_norm or ENTRY_layer_norm"
#endif

// A vector is 16 bytes: 4 f32 or 8 f16 / bf16 elements (UNIT), held as HALVES vec4 registers. The 16-bit types
// are read and written as uvec4 words (unpacked exactly, packed with one rounding each), so every load is as
// wide for them as for f32.
#if defined(X_F16) || defined(X_BF16)
#define UNIT 8u
#define XV uvec4
#else
#define UNIT 4u
#define XV vec4
#endif
#define HALVES (UNIT / 4u)
// The operands in order, binding i the i-th: x (0), w (1), then layer_norm's b (2) and y (3), or rms_norm's y (2).
#if LAYER
#define Y_BINDING 3
#else
#define Y_BINDING 2
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufX { XT x[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufXV { XV xv[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufW { XT w[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufWV { XV wv[]; };
layout(std430, set = 0, binding = Y_BINDING) writeonly buffer BufZ { ZT z[]; };
layout(std430, set = 0, binding = Y_BINDING) writeonly buffer BufZV { XV zv[]; };
#if LAYER
layout(std430, set = 0, binding = 2) readonly buffer BufU { XT u[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufUV { XV uv[]; };
#endif

// A user row op's push constants: rows, cols, the dtype (the shader is built per dtype and ignores it), each
// binding's element offset and stride (x and y: row strides; w and b: element strides), the parameters (eps's
// f32 bits first). Offsets and strides are in elements; every index fits in 32 bits because the front-end cuts
// views whose extent reaches 2^31 elements.
layout(push_constant) uniform Push {
    uint rows, cols, dtype;
    uint offset[5];
    uint stride[5];
    uint params[8];
} pc;

#define XO pc.offset[0]
#define XS pc.stride[0]
#define WO pc.offset[1]
#define WS pc.stride[1]
#define UO pc.offset[2]
#define US pc.stride[2]
#define ZO pc.offset[Y_BINDING]
#define ZS pc.stride[Y_BINDING]
#define EPS uintBitsToFloat(pc.params[0])

shared float s_a[gl_WorkGroupSize.x]; // one per subgroup; sized for the smallest subgroups
shared float s_b[gl_WorkGroupSize.x];

float sum4(vec4 a) {
    return (a.x + a.y) + (a.z + a.w);
}

// One 16-byte word as floats: elements 0-3 in lo, 4-7 in hi (16-bit types).
void unpack_word(XV r, out vec4 lo, out vec4 hi) {
#if defined(X_F16)
    lo = vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y));
    hi = vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
#elif defined(X_BF16)
    lo = uintBitsToFloat(uvec4(r.x << 16, r.x & 0xffff0000u, r.y << 16, r.y & 0xffff0000u));
    hi = uintBitsToFloat(uvec4(r.z << 16, r.z & 0xffff0000u, r.w << 16, r.w & 0xffff0000u));
#else
    lo = r;
    hi = vec4(0.0);
#endif
}

XV pack_word(vec4 lo, vec4 hi) {
#if defined(Z_F16)
    return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
#elif defined(Z_BF16)
    return uvec4(trr_f2bf4(lo), trr_f2bf4(hi));
#else
    return lo;
#endif
}

// Vector c (elements UNIT*c ..) of the row starting at element xb; elements past n read as pad.
void load_x(uint xb, uint c, uint n, float pad, out vec4 lo, out vec4 hi) {
    uint e = UNIT * c;
    if (VEC != 0u) {
        if (e < n) {
            unpack_word(xv[xb / UNIT + c], lo, hi);
        } else {
            lo = vec4(pad);
            hi = vec4(pad);
        }
        return;
    }
    float v[8];
    [[unroll]] for (uint k = 0; k < UNIT; k++) v[k] = e + k < n ? XF(x[xb + e + k]) : pad;
    lo = vec4(v[0], v[1], v[2], v[3]);
    hi = UNIT == 8u ? vec4(v[4], v[5], v[6], v[7]) : vec4(0.0);
}

// w (or, from binding 3, b) at vector c; columns past n read column n - 1 (never stored).
void load_w(uint c, uint n, out vec4 lo, out vec4 hi) {
    if (WVEC != 0u) {
        unpack_word(wv[WO / UNIT + c], lo, hi);
        return;
    }
    float v[8];
    [[unroll]] for (uint k = 0; k < UNIT; k++) v[k] = XF(w[WO + min(UNIT * c + k, n - 1u) * WS]);
    lo = vec4(v[0], v[1], v[2], v[3]);
    hi = UNIT == 8u ? vec4(v[4], v[5], v[6], v[7]) : vec4(0.0);
}

#if LAYER
void load_b(uint c, uint n, out vec4 lo, out vec4 hi) {
    if (WVEC != 0u) {
        unpack_word(uv[UO / UNIT + c], lo, hi);
        return;
    }
    float v[8];
    [[unroll]] for (uint k = 0; k < UNIT; k++) v[k] = XF(u[UO + min(UNIT * c + k, n - 1u) * US]);
    lo = vec4(v[0], v[1], v[2], v[3]);
    hi = UNIT == 8u ? vec4(v[4], v[5], v[6], v[7]) : vec4(0.0);
}

#endif

void store_y(uint zb, uint c, uint n, vec4 lo, vec4 hi) {
    uint e = UNIT * c;
    if (VEC != 0u) {
        zv[zb / UNIT + c] = pack_word(lo, hi);
        return;
    }
    float v[8] = float[8](lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w);
    [[unroll]] for (uint k = 0; k < UNIT; k++)
        if (e + k < n) z[zb + e + k] = ZC(v[k]);
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

// y at vector c from d (x - shift, or x) in (lo, hi), with w (and b) as loaded.
void norm_store_wb(uint zb, uint c, uint n, vec4 lo, vec4 hi, vec2 mr, vec4 wl, vec4 wh, vec4 bl, vec4 bh) {
#if LAYER
    store_y(zb, c, n, (lo - mr.x) * mr.y * wl + bl, (hi - mr.x) * mr.y * wh + bh);
#else
    store_y(zb, c, n, lo * mr.y * wl, hi * mr.y * wh);
#endif
}

void norm_store(uint zb, uint c, uint n, vec4 lo, vec4 hi, vec2 mr) {
    vec4 wl, wh, bl = vec4(0.0), bh = vec4(0.0);
    load_w(c, n, wl, wh);
#if LAYER
    load_b(c, n, bl, bh);
#endif
    norm_store_wb(zb, c, n, lo, hi, mr, wl, wh, bl, bh);
}

// d = x - shift at vector c into (lo, hi), its sums added to a and b
void load_d(uint xb, uint c, uint n, float sh, out vec4 lo, out vec4 hi, inout float a, inout float b) {
    load_x(xb, c, n, sh, lo, hi);
    lo -= sh;
    hi = UNIT == 8u ? hi - sh : vec4(0.0); // f32: lo alone
    a += sum4(lo) + sum4(hi);
    b += dot(lo, lo) + dot(hi, hi);
}

void row_in_regs(uint xb, uint zb, uint n, uint t, uint wg) {
    uint nv = (n + UNIT - 1u) / UNIT;
    // layer_norm's shift, and the pad past the row's end (d = 0 there: it adds nothing)
    float sh = LAYER != 0 ? XF(x[xb]) : 0.0;
    vec4 lo[VPT], hi[VPT];
    XV wr[VPT], br[VPT];
    float a = 0.0, b = 0.0;
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        lo[i] = vec4(0.0);
        hi[i] = vec4(0.0);
        if (FULL != 0u || c < nv) {
            load_d(xb, c, n, sh, lo[i], hi[i], a, b);
            if (PREFETCH != 0u && WVEC != 0u) {
                wr[i] = wv[WO / UNIT + c];
#if LAYER
                br[i] = uv[UO / UNIT + c];
#endif
            }
        }
    }
    vec2 mr = row_scale(row_sums(a, b), n);
    [[unroll]] for (uint i = 0; i < VPT; i++) {
        uint c = t + i * wg;
        if (FULL != 0u || c < nv) {
            if (PREFETCH != 0u && WVEC != 0u) {
                vec4 wl, wh, bl = vec4(0.0), bh = vec4(0.0);
                unpack_word(wr[i], wl, wh);
#if LAYER
                unpack_word(br[i], bl, bh);
#endif
                norm_store_wb(zb, c, n, lo[i], hi[i], mr, wl, wh, bl, bh);
            } else {
                norm_store(zb, c, n, lo[i], hi[i], mr);
            }
        }
    }
}

void row_in_loops(uint xb, uint zb, uint n, uint t, uint wg) {
    uint nv = (n + UNIT - 1u) / UNIT;
    float sh = LAYER != 0 ? XF(x[xb]) : 0.0;
    // four vectors in flight per iteration, each summed on its own (four chains, shorter than one)
    vec4 a4 = vec4(0.0), b4 = vec4(0.0);
    vec4 l0, h0, l1, h1, l2, h2, l3, h3;
    uint c = t;
    for (; c + 3u * wg < nv; c += 4u * wg) {
        load_d(xb, c, n, sh, l0, h0, a4.x, b4.x);
        load_d(xb, c + wg, n, sh, l1, h1, a4.y, b4.y);
        load_d(xb, c + 2u * wg, n, sh, l2, h2, a4.z, b4.z);
        load_d(xb, c + 3u * wg, n, sh, l3, h3, a4.w, b4.w);
    }
    for (; c < nv; c += wg) load_d(xb, c, n, sh, l0, h0, a4.x, b4.x);
    vec2 mr = row_scale(row_sums(sum4(a4), sum4(b4)), n);
    float da = 0.0, db = 0.0; // the second pass's sums, unused
    c = t;
    for (; c + 3u * wg < nv; c += 4u * wg) {
        load_d(xb, c, n, sh, l0, h0, da, db);
        load_d(xb, c + wg, n, sh, l1, h1, da, db);
        load_d(xb, c + 2u * wg, n, sh, l2, h2, da, db);
        load_d(xb, c + 3u * wg, n, sh, l3, h3, da, db);
        norm_store(zb, c, n, l0, h0, mr);
        norm_store(zb, c + wg, n, l1, h1, mr);
        norm_store(zb, c + 2u * wg, n, l2, h2, mr);
        norm_store(zb, c + 3u * wg, n, l3, h3, mr);
    }
    for (; c < nv; c += wg) {
        load_d(xb, c, n, sh, l0, h0, da, db);
        norm_store(zb, c, n, l0, h0, mr);
    }
}

void main() {
    uint row = trr_group_id();
    if (row >= pc.rows) return; // uniform across the workgroup, so no barrier is skipped by a subset
    uint xb = XO + row * XS;
    uint zb = ZO + row * ZS;
    if (LOOP == 0u)
        row_in_regs(xb, zb, pc.cols, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
    else
        row_in_loops(xb, zb, pc.cols, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
}
