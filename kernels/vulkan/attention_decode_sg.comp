#version 450
// attention (docs/ops.md, attention), the decode form on subgroups (variant subgroup): the algorithm of
// attention_decode.comp (a workgroup takes one chunk of keys of one kv head and BM rows of its group, so K and V
// are read once per kv head; the host merges the chunks with attention.comp's COMBINE build), with the key slots
// independent of one another. The time here is the read of K and V, so the loop is built to keep loads in flight:
// no barrier and no shared memory inside it.
//
// The T invocations are KS = T / LN key slots of LN lanes (a power of two no wider than the subgroup, so a slot
// lies inside one subgroup). Word w of lane l holds 8-element group c = w·LN + l of a key's row (W words, the
// groups past D / 8 idle), so a slot's lanes read whole contiguous spans of the row. Each slot keeps, per row, its
// own running maximum m, sum l and f32 accumulator of its lanes' elements, and walks its own keys: in a step of
// BN = NK·KS keys, slot k takes keys k, k + KS, ..., so the workgroup reads BN contiguous rows a step. A step:
//   1. load the step's V words (in flight through 2);
//   2. each lane forms its part of q·k for its NK keys and BM rows, and the slot sums the parts with
//      subgroupShuffleXor over its LN lanes (every lane ends with the same sums: the butterfly adds the same
//      pairs in every lane);
//   3. load the next step's K words (in flight through 4 and the next step's 1);
//   4. the online softmax step of every row over the slot's NK keys, and p·v.
// STAGES 2 instead loads the next step's K and V at 1 into a second set of registers (moved over after 4), so
// a whole step's words stay in flight through the whole step, at twice the registers.
// The loop's bounds are the workgroup's, so every lane of a subgroup runs every shuffle. At the end the slots of a
// subgroup merge through shuffles and the subgroups through shared memory, each scaled to the largest of the
// maxima, then added. A row that has seen no key keeps m = -inf and weights 0, and never forms -inf - (-inf).
//
// Specialization constants: T, BM (rows, 1..16), BN (keys a step of the workgroup: a multiple of KS), D (a
// multiple of 8 up to 256), LN and STAGES (1 or 2). Push constants, bindings and flags as attention_decode.comp's.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#define TRR_OWN_BINDINGS
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 4;
layout(constant_id = 2) const uint BN = 32;
layout(constant_id = 3) const uint D = 128;
layout(constant_id = 4) const uint LN = 16;
layout(constant_id = 5) const uint STAGES = 2;
const uint T = gl_WorkGroupSize.x;
const uint L = D / 8u;               // 8-element groups of a row
const uint W = (L + LN - 1u) / LN;   // of them a lane holds
const uint KS = T / LN;              // key slots
const uint NK = BN / KS;             // keys per slot and step

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

shared float Acc[BM * D]; // the subgroups' accumulators added, [row][d]
shared float Mx[BM], Ls[BM];

void main() {
    const uint tid = gl_LocalInvocationID.x, slot = tid / LN, lane = tid - slot * LN;
    const bool live = slot < KS;
    const uint g = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / pc.nsplit, split = gl_WorkGroupID.z % pc.nsplit;
    const uint nrows = pc.group_ * pc.sq, r0 = gl_WorkGroupID.x * BM;
    const int sq = int(pc.sq), skv = int(pc.skv);
    const uint E = 8u / WPK; // elements per word

    // this lane's share of q for each row (zero in idle groups), and the last key each row sees (-1: none)
    vec4 qr[2u * BM * W];
    int lim[BM];
    [[unroll]] for (uint r = 0u; r < BM; r++) {
        const uint rr = r0 + r, h = g * pc.group_ + rr / pc.sq, i = rr % pc.sq;
        lim[r] = rr >= nrows ? -1 : CAUSAL ? int(i) + skv - sq : skv - 1;
        [[unroll]] for (uint w = 0u; w < W; w++) {
            const uint c = w * LN + lane;
            [[unroll]] for (uint e = 0u; e < 8u; e++) {
                const uint at = pc.qo + b * pc.qb + h * pc.qh + i * pc.qs + c * 8u + e;
                const float x = live && c < L && rr < nrows ? XF(q[at]) * pc.qscale : 0.0;
                if (e < 4u) qr[2u * (r * W + w)][e] = x;
                else qr[2u * (r * W + w) + 1u][e - 4u] = x;
            }
        }
    }
    int kend = -1;
    [[unroll]] for (uint r = 0u; r < BM; r++) kend = max(kend, lim[r]);
    const int kbeg = int(split * pc.kps), kstop = min(kend + 1, kbeg + int(pc.kps));

    // word w' of group c of key j: base + j * stride + c * WPK + w'
    const uint kbase = (pc.ko + b * pc.kb + g * pc.kh) / E, kstride = pc.ks / E;
    const uint vbase = (pc.vo + b * pc.vb + g * pc.vh) / E, vstride = pc.vs / E;
    const uint NW = W * WPK; // words a lane holds of one key
    uvec4 kr[NK * NW], vr[NK * NW], kn[NK * NW], vn[NK * NW];
    float m[BM], l[BM];
    vec4 acc[2u * BM * W];
    [[unroll]] for (uint r = 0u; r < BM; r++) {
        m[r] = NEG_INF;
        l[r] = 0.0;
    }
    [[unroll]] for (uint u = 0u; u < 2u * BM * W; u++) acc[u] = vec4(0.0);
    [[unroll]] for (uint n = 0u; n < NK; n++) {
        const int j = kbeg + int(n * KS + slot);
        [[unroll]] for (uint w = 0u; w < W; w++) {
            const uint c = w * LN + lane;
            [[unroll]] for (uint x = 0u; x < WPK; x++)
                kr[n * NW + w * WPK + x] =
                    live && c < L && j < kstop ? kw[kbase + uint(j) * kstride + c * WPK + x] : uvec4(0u);
        }
    }
    if (STAGES == 2u)
        [[unroll]] for (uint n = 0u; n < NK; n++) {
            const int j = kbeg + int(n * KS + slot);
            [[unroll]] for (uint w = 0u; w < W; w++) {
                const uint c = w * LN + lane;
                [[unroll]] for (uint x = 0u; x < WPK; x++)
                    vr[n * NW + w * WPK + x] =
                        live && c < L && j < kstop ? vw[vbase + uint(j) * vstride + c * WPK + x] : uvec4(0u);
            }
        }

    [[dont_unroll]] for (int j0 = kbeg; j0 < kstop; j0 += int(BN)) {
        // 1. this step's V (stages 1), or the next step's K and V (stages 2: in flight through the whole step)
        [[unroll]] for (uint n = 0u; n < NK; n++) {
            const int j = j0 + int((STAGES == 2u ? BN : 0u) + n * KS + slot);
            [[unroll]] for (uint w = 0u; w < W; w++) {
                const uint c = w * LN + lane;
                [[unroll]] for (uint x = 0u; x < WPK; x++) {
                    const bool ok = live && c < L && j < kstop;
                    const uvec4 vx = ok ? vw[vbase + uint(j) * vstride + c * WPK + x] : uvec4(0u);
                    if (STAGES == 2u) {
                        vn[n * NW + w * WPK + x] = vx;
                        kn[n * NW + w * WPK + x] = ok ? kw[kbase + uint(j) * kstride + c * WPK + x] : uvec4(0u);
                    } else
                        vr[n * NW + w * WPK + x] = vx;
                }
            }
        }
        // 2. the scores: this lane's parts, summed over the slot's lanes
        float s[NK * BM];
        [[unroll]] for (uint n = 0u; n < NK; n++) {
            vec4 k0[W], k1[W];
            [[unroll]] for (uint w = 0u; w < W; w++) {
                k0[w] = lo4(kr[n * NW + w * WPK], kr[n * NW + w * WPK + WPK - 1u]);
                k1[w] = hi4(kr[n * NW + w * WPK], kr[n * NW + w * WPK + WPK - 1u]);
            }
            [[unroll]] for (uint r = 0u; r < BM; r++) {
                float x = 0.0;
                [[unroll]] for (uint w = 0u; w < W; w++)
                    x += dot(qr[2u * (r * W + w)], k0[w]) + dot(qr[2u * (r * W + w) + 1u], k1[w]);
                s[n * BM + r] = x;
            }
        }
        [[unroll]] for (uint h = 1u; h < LN; h <<= 1)
            [[unroll]] for (uint u = 0u; u < NK * BM; u++) s[u] += subgroupShuffleXor(s[u], h);
        // 3. the next step's K (stages 1), in flight through 4 and the next step's 1
        if (STAGES != 2u)
        [[unroll]] for (uint n = 0u; n < NK; n++) {
            const int j = j0 + int(BN + n * KS + slot);
            [[unroll]] for (uint w = 0u; w < W; w++) {
                const uint c = w * LN + lane;
                [[unroll]] for (uint x = 0u; x < WPK; x++)
                    kr[n * NW + w * WPK + x] =
                        live && c < L && j < kstop ? kw[kbase + uint(j) * kstride + c * WPK + x] : uvec4(0u);
            }
        }
        // 4. the online softmax step over the slot's keys, and p·v
        [[unroll]] for (uint r = 0u; r < BM; r++) {
            float mb = NEG_INF;
            [[unroll]] for (uint n = 0u; n < NK; n++) {
                const int j = j0 + int(n * KS + slot);
                s[n * BM + r] = j < kstop && j <= lim[r] ? s[n * BM + r] : NEG_INF;
                mb = max(mb, s[n * BM + r]);
            }
            const float mn = max(m[r], mb);
            const float ms = mn == NEG_INF ? 0.0 : mn; // no key seen yet: every weight stays 0
            const float alpha = m[r] == NEG_INF ? 0.0 : exp2(m[r] - ms);
            m[r] = mn;
            float sum = l[r] * alpha;
            [[unroll]] for (uint w = 0u; w < W; w++) {
                acc[2u * (r * W + w)] *= alpha;
                acc[2u * (r * W + w) + 1u] *= alpha;
            }
            [[unroll]] for (uint n = 0u; n < NK; n++) {
                const float sj = s[n * BM + r];
                const float pj = sj == NEG_INF ? 0.0 : exp2(sj - ms);
                sum += pj;
                [[unroll]] for (uint w = 0u; w < W; w++) {
                    acc[2u * (r * W + w)] += pj * lo4(vr[n * NW + w * WPK], vr[n * NW + w * WPK + WPK - 1u]);
                    acc[2u * (r * W + w) + 1u] += pj * hi4(vr[n * NW + w * WPK], vr[n * NW + w * WPK + WPK - 1u]);
                }
            }
            l[r] = sum;
        }
        if (STAGES == 2u)
            [[unroll]] for (uint u = 0u; u < NK * NW; u++) {
                kr[u] = kn[u];
                vr[u] = vn[u];
            }
    }

    // the slots of a subgroup merged through shuffles (lane l with the lanes l ^ LN, l ^ 2·LN, ...): each pair
    // scaled to the larger maximum, then added
    [[dont_unroll]] for (uint h = LN; h < gl_SubgroupSize; h <<= 1) {
        [[unroll]] for (uint r = 0u; r < BM; r++) {
            const float mo = subgroupShuffleXor(m[r], h), lo = subgroupShuffleXor(l[r], h);
            const float mx = max(m[r], mo), ms = mx == NEG_INF ? 0.0 : mx;
            const float f = m[r] == NEG_INF ? 0.0 : exp2(m[r] - ms), fo = mo == NEG_INF ? 0.0 : exp2(mo - ms);
            [[unroll]] for (uint u = 2u * r * W; u < 2u * (r + 1u) * W; u++) {
                const vec4 ao = vec4(subgroupShuffleXor(acc[u].x, h), subgroupShuffleXor(acc[u].y, h),
                                     subgroupShuffleXor(acc[u].z, h), subgroupShuffleXor(acc[u].w, h));
                acc[u] = acc[u] * f + ao * fo;
            }
            l[r] = l[r] * f + lo * fo;
            m[r] = mx;
        }
    }
    // then the subgroups through shared memory: the rows' maxima over them, and each subgroup's first slot adding
    // its scaled accumulator, one subgroup after another
    const bool first = live && gl_SubgroupInvocationID < LN;
    if (tid < BM) Mx[tid] = NEG_INF;
    barrier();
    [[dont_unroll]] for (uint k = 0u; k < gl_NumSubgroups; k++) {
        if (gl_SubgroupID == k && first && lane == 0u)
            [[unroll]] for (uint r = 0u; r < BM; r++) Mx[r] = max(Mx[r], m[r]);
        barrier();
    }
    [[unroll]] for (uint r = 0u; r < BM; r++) {
        const float mx = Mx[r], ms = mx == NEG_INF ? 0.0 : mx;
        const float f = m[r] == NEG_INF ? 0.0 : exp2(m[r] - ms);
        [[unroll]] for (uint u = 2u * r * W; u < 2u * (r + 1u) * W; u++) acc[u] *= f;
        l[r] *= f;
    }
    [[dont_unroll]] for (uint k = 0u; k < gl_NumSubgroups; k++) {
        if (gl_SubgroupID == k && first) {
            [[unroll]] for (uint r = 0u; r < BM; r++) {
                [[unroll]] for (uint w = 0u; w < W; w++) {
                    const uint c = w * LN + lane;
                    if (c < L)
                        [[unroll]] for (uint e = 0u; e < 8u; e++) {
                            const uint at = r * D + c * 8u + e;
                            const float x = e < 4u ? acc[2u * (r * W + w)][e] : acc[2u * (r * W + w) + 1u][e - 4u];
                            Acc[at] = k == 0u ? x : Acc[at] + x;
                        }
                }
                if (lane == 0u) Ls[r] = k == 0u ? l[r] : Ls[r] + l[r];
            }
        }
        barrier();
    }

    for (uint e = tid; e < BM * D; e += T) {
        const uint r = e / D, d = e - r * D, rr = r0 + r;
        if (rr >= nrows) continue;
        const uint h = g * pc.group_ + rr / pc.sq, i = rr % pc.sq;
        const float lsum = Ls[r];
        const float res = lsum > 0.0 ? Acc[e] / lsum : 0.0;
        const float lse2 = lsum > 0.0 ? Mx[r] + log2(lsum) : NEG_INF;
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
