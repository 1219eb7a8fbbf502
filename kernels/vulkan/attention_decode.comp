#version 450
// attention (docs/ops.md, attention), the decode form: few query rows per kv head and many keys, where the time
// is the read of K and V. kernels/opencl/attention_decode.cl is the same algorithm in OpenCL C.
//
// A workgroup takes one chunk of keys of one kv head (batch b, kv head g, split s) and BM rows of that kv head's
// group: its G = Hq / Hkv query heads times Sq queries, row r being query r % Sq of head g·G + r / Sq. So K and
// V are read once per kv head, not once per query head, and the splits put enough workgroups in flight. The host
// then merges the splits with attention.comp's COMBINE build (the same scratch layout).
//
// The T invocations are KS = T / L key slots of L = D / 8 lanes: lane l of a slot holds elements 8l..8l+7 of one
// key's K and V row (one 16-byte word of f16 or bf16, two of f32) and of each row's q (f32, times scale·log2 e)
// and of each row's f32 accumulator, in registers. A step of BN = NK·KS keys (slot k takes keys k, k + KS, ...):
//   1. each lane forms its 8-element part of q·k for its keys and rows, into shared memory;
//   2. the invocations sum the L parts of each (key, row) score; a key the row does not see scores -inf;
//   3. each lane takes the online softmax step of every row over its slot's keys: the slot's running maximum m,
//      the rescale of its accumulator and of the slot's sum l, and p·v for the slot's keys.
// The V words of a step are loaded before step 1 and the next step's K words before step 2, so the loads are
// in flight across the barriers. The scores are double-buffered: step 3 of one step and step 2 of the next need
// no barrier between them. At the end the slots' results are merged in shared memory, as the splits are: each
// scaled to the largest of the slots' maxima, then added.
// A row that has seen no key yet keeps m = -inf and weights 0, and never forms -inf - (-inf).
//
// Specialization constants: T, BM (rows, 1..16), BN (keys a step: a multiple of KS) and D (a multiple of 8, up
// to 256; the host sends other calls to attention.comp, as it does K and V views that are not whole 16-byte
// words). Push constants and flags as attention.comp's: MODE 0 writes o and lse, MODE 1 the split's o_s and
// lse_s (base 2) to the f32 scratch.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define TRR_OWN_BINDINGS
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 4;
layout(constant_id = 2) const uint BN = 32;
layout(constant_id = 3) const uint D = 128;
const uint T = gl_WorkGroupSize.x;
const uint L = D / 8u;        // lanes per key
const uint KS = T / L;        // key slots
const uint NK = BN / KS;      // keys per slot and step
const uint LP = L + 1u;       // the parts' row pitch: a (key, row)'s L parts on distinct banks

#if defined(X_F16) || defined(X_BF16)
const uint WPK = 1u; // 16-byte words per 8 elements
#else
const uint WPK = 2u;
#endif

layout(std430, set = 0, binding = 0) readonly buffer BufQ { XT q[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { uvec4 kw[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { uvec4 vw[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { ZT o[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufL { float lse[]; };
layout(std430, set = 0, binding = 5) writeonly buffer BufP { float part[]; };
layout(std430, set = 0, binding = 6) writeonly buffer BufPL { float part_lse[]; };

layout(push_constant) uniform Push {
    uint qo, ko, vo, oo, lo;
    uint qb, qh, qs, kb, kh, ks, vb, vh, vs, ob, oh, os, lb, lh, ls;
    uint hq, group_, sq, skv, flags, nsplit, kps, rows;
    float qscale;
} pc;

#define CAUSAL ((pc.flags & 1u) != 0u)
#define HAS_LSE ((pc.flags & 2u) != 0u)
#define MODE ((pc.flags >> 2) & 1u)
#define LN2 0.69314718055994530942

// Elements 0..3 and 4..7 of 8 held in words w0 (and w1 for f32).
vec4 lo4(uvec4 w0, uvec4 w1) {
#if defined(X_F16)
    return vec4(unpackHalf2x16(w0.x), unpackHalf2x16(w0.y));
#elif defined(X_BF16)
    return uintBitsToFloat(uvec4(w0.x << 16, w0.x & 0xffff0000u, w0.y << 16, w0.y & 0xffff0000u));
#else
    return uintBitsToFloat(w0);
#endif
}
vec4 hi4(uvec4 w0, uvec4 w1) {
#if defined(X_F16)
    return vec4(unpackHalf2x16(w0.z), unpackHalf2x16(w0.w));
#elif defined(X_BF16)
    return uintBitsToFloat(uvec4(w0.z << 16, w0.z & 0xffff0000u, w0.w << 16, w0.w & 0xffff0000u));
#else
    return uintBitsToFloat(w1);
#endif
}

// step 1's parts, [key][row][lane]; after the loop, the slots' accumulators added, [row][d]
const uint SPN = BN * BM * LP > BM * D ? BN * BM * LP : BM * D;
shared float Sp[SPN];
shared float Ss[2u * BM * BN]; // the scores, [buffer][row][key]
shared float Ls[BM], Ms[BM];

void main() {
    const uint tid = gl_LocalInvocationID.x, slot = tid / L, lane = tid - slot * L;
    const bool live = slot < KS;
    const uint g = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / pc.nsplit, split = gl_WorkGroupID.z % pc.nsplit;
    const uint nrows = pc.group_ * pc.sq, r0 = gl_WorkGroupID.x * BM;
    const int sq = int(pc.sq), skv = int(pc.skv);
    const uint E = 8u / WPK; // elements per word

    // this lane's share of q for each row, and the last key each row sees (-1: none of the rows past nrows)
    vec4 qr[2u * BM];
    int lim[BM];
    [[unroll]] for (uint r = 0u; r < BM; r++) {
        const uint rr = r0 + r, h = g * pc.group_ + rr / pc.sq, i = rr % pc.sq;
        lim[r] = rr >= nrows ? -1 : CAUSAL ? int(i) + skv - sq : skv - 1;
        [[unroll]] for (uint e = 0u; e < 8u; e++) {
            const uint d = lane * 8u + e, at = pc.qo + b * pc.qb + h * pc.qh + i * pc.qs + d;
            const float x = live && rr < nrows ? XF(q[at]) * pc.qscale : 0.0;
            if (e < 4u) qr[2u * r][e] = x;
            else qr[2u * r + 1u][e - 4u] = x;
        }
    }
    // the keys of this split that any row sees: up to the largest limit
    int kend = -1;
    [[unroll]] for (uint r = 0u; r < BM; r++) kend = max(kend, lim[r]);
    const int kbeg = int(split * pc.kps), kstop = min(kend + 1, kbeg + int(pc.kps));

    const uint kbase = (pc.ko + b * pc.kb + g * pc.kh) / E + lane * WPK, kstride = pc.ks / E;
    const uint vbase = (pc.vo + b * pc.vb + g * pc.vh) / E + lane * WPK, vstride = pc.vs / E;
    uvec4 kr[NK * WPK], vr[NK * WPK];
    float m[BM], l[BM];
    vec4 acc[2u * BM];
    [[unroll]] for (uint r = 0u; r < BM; r++) {
        m[r] = NEG_INF;
        l[r] = 0.0;
        acc[2u * r] = vec4(0.0);
        acc[2u * r + 1u] = vec4(0.0);
    }
    [[unroll]] for (uint n = 0u; n < NK; n++) {
        const int j = kbeg + int(n * KS + slot);
        [[unroll]] for (uint w = 0u; w < WPK; w++)
            kr[n * WPK + w] = live && j < kstop ? kw[kbase + uint(j) * kstride + w] : uvec4(0u);
    }

    uint buf = 0u;
    [[dont_unroll]] for (int j0 = kbeg; j0 < kstop; j0 += int(BN)) {
        [[unroll]] for (uint n = 0u; n < NK; n++) {
            const int j = j0 + int(n * KS + slot);
            [[unroll]] for (uint w = 0u; w < WPK; w++)
                vr[n * WPK + w] = live && j < kstop ? vw[vbase + uint(j) * vstride + w] : uvec4(0u);
        }
        // 1. the parts of q·k
        if (live) {
            [[unroll]] for (uint n = 0u; n < NK; n++) {
                const vec4 k0 = lo4(kr[n * WPK], kr[n * WPK + WPK - 1u]), k1 = hi4(kr[n * WPK], kr[n * WPK + WPK - 1u]);
                [[unroll]] for (uint r = 0u; r < BM; r++)
                    Sp[((n * KS + slot) * BM + r) * LP + lane] = dot(qr[2u * r], k0) + dot(qr[2u * r + 1u], k1);
            }
        }
        barrier();
        [[unroll]] for (uint n = 0u; n < NK; n++) { // the next step's K, in flight through steps 2 and 3
            const int j = j0 + int(BN + n * KS + slot);
            [[unroll]] for (uint w = 0u; w < WPK; w++)
                kr[n * WPK + w] = live && j < kstop ? kw[kbase + uint(j) * kstride + w] : uvec4(0u);
        }
        // 2. the scores
        for (uint p = tid; p < BN * BM; p += T) {
            const uint jb = p / BM, r = p - jb * BM;
            float s = 0.0;
            [[dont_unroll]] for (uint x = 0u; x < L; x++) s += Sp[p * LP + x];
            const int j = j0 + int(jb);
            int lr = -1;
            [[unroll]] for (uint rr = 0u; rr < BM; rr++) lr = rr == r ? lim[rr] : lr;
            Ss[(buf * BM + r) * BN + jb] = j < kstop && j <= lr ? s : NEG_INF;
        }
        barrier();
        // 3. the online softmax step over the slot's own keys and p·v
        if (live) {
            [[unroll]] for (uint r = 0u; r < BM; r++) {
                const uint srow = (buf * BM + r) * BN + slot;
                float mb = NEG_INF;
                [[unroll]] for (uint n = 0u; n < NK; n++) mb = max(mb, Ss[srow + n * KS]);
                const float mn = max(m[r], mb);
                if (mn == NEG_INF) continue; // no key seen yet: nothing to add
                const float alpha = m[r] == NEG_INF ? 0.0 : exp2(m[r] - mn);
                m[r] = mn;
                vec4 a0 = acc[2u * r] * alpha, a1 = acc[2u * r + 1u] * alpha;
                float sum = l[r] * alpha;
                [[unroll]] for (uint n = 0u; n < NK; n++) {
                    const float sj = Ss[srow + n * KS];
                    const float pj = sj == NEG_INF ? 0.0 : exp2(sj - mn);
                    sum += pj;
                    a0 += pj * lo4(vr[n * WPK], vr[n * WPK + WPK - 1u]);
                    a1 += pj * hi4(vr[n * WPK], vr[n * WPK + WPK - 1u]);
                }
                acc[2u * r] = a0;
                acc[2u * r + 1u] = a1;
                l[r] = sum;
            }
        }
        buf ^= 1u;
    }

    // the slots' results merged: each scaled by 2^(m_slot - M) to the rows' maxima M over the slots, then added
    // one slot after another
    barrier();
    if (live && lane == 0u)
        [[unroll]] for (uint r = 0u; r < BM; r++) Ss[slot * BM + r] = m[r];
    barrier();
    [[unroll]] for (uint r = 0u; r < BM; r++) {
        float mx = NEG_INF;
        [[dont_unroll]] for (uint k = 0u; k < KS; k++) mx = max(mx, Ss[k * BM + r]);
        const float f = m[r] == NEG_INF ? 0.0 : exp2(m[r] - mx);
        acc[2u * r] *= f;
        acc[2u * r + 1u] *= f;
        l[r] *= f;
        m[r] = mx;
    }
    [[dont_unroll]] for (uint k = 0u; k < KS; k++) {
        if (slot == k) {
            [[unroll]] for (uint r = 0u; r < BM; r++) {
                [[unroll]] for (uint e = 0u; e < 8u; e++) {
                    const uint at = r * D + lane * 8u + e;
                    const float x = e < 4u ? acc[2u * r][e] : acc[2u * r + 1u][e - 4u];
                    Sp[at] = k == 0u ? x : Sp[at] + x;
                }
                if (lane == 0u) {
                    Ls[r] = k == 0u ? l[r] : Ls[r] + l[r];
                    Ms[r] = m[r];
                }
            }
        }
        barrier();
    }

    for (uint e = tid; e < BM * D; e += T) {
        const uint r = e / D, d = e - r * D, rr = r0 + r;
        if (rr >= nrows) continue;
        const uint h = g * pc.group_ + rr / pc.sq, i = rr % pc.sq;
        const float lsum = Ls[r];
        const float res = lsum > 0.0 ? Sp[e] / lsum : 0.0;
        const float lse2 = lsum > 0.0 ? Ms[r] + log2(lsum) : NEG_INF;
        if (MODE == 0u) {
            o[pc.oo + b * pc.ob + h * pc.oh + i * pc.os + d] = ZC(res);
            if (HAS_LSE && d == 0u)
                lse[pc.lo + b * pc.lb + h * pc.lh + i * pc.ls] = lsum > 0.0 ? lse2 * float(LN2) : NEG_INF;
        } else {
            const uint row = (b * pc.hq + h) * pc.sq + i;
            part[(split * pc.rows + row) * D + d] = res;
            if (d == 0u) part_lse[split * pc.rows + row] = lse2;
        }
    }
}
