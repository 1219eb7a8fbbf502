#version 450
// attention (docs/ops.md, attention): the subgroup-free SIMT kernel, GLSL 450; kernels/opencl/attention.cl is the
// same algorithm.
//
// A workgroup of T invocations takes BM query rows of one head (batch b, query head h, kv head h / group) against
// a range of keys: all of them, or one split of a long range. Shared memory holds its rows of q (f32, times
// scale·log2 e), one block of BN keys and values (f32), the block's BM x BN scores and, per row, the running
// maximum m, sum l and the block's rescale factor. For each key block:
//   1. the invocations load K and V, converted to f32 (zero past the range);
//   2. they compute the BM x BN scores, each a D-long dot product; a key a row does not see scores -inf;
//   3. invocation r (and r + T, ...) takes row r's online softmax step in base 2: the block's maximum m_new, the
//      weights p = 2^(s - m_new) in place of the scores, l = l·2^(m - m_new) + Σp;
//   4. each invocation rescales its share of the BM x D f32 accumulator (OPT elements) and adds P·V.
// A row that has seen no key yet keeps m = -inf and weights 0, and never forms -inf - (-inf).
//
// Specialization constants: T (the workgroup size), BM, BN and D (they size the shared arrays). Flags in the push
// constants: causal, has_lse and MODE. MODE 0 writes o (rounded once, 0 for a row without keys) and
// lse = (m + log2 l)·ln 2 (-inf without keys); MODE 1 writes the split's o_s (normalised by its own l_s) and
// lse_s = m_s + log2 l_s (base 2) to f32 scratch, which the COMBINE build merges: lse = log2 Σ 2^lse_s,
// o = Σ 2^(lse_s - lse)·o_s. The host splits the keys where the device limits an invocation's loop iterations
// (lavapipe), so every dispatch stays inside it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define TRR_OWN_BINDINGS
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 16;
layout(constant_id = 2) const uint BN = 32;
layout(constant_id = 3) const uint D = 64;
const uint T = gl_WorkGroupSize.x;
const uint OPT = (BM * D + T - 1u) / T; // accumulator elements per invocation

layout(std430, set = 0, binding = 0) readonly buffer BufQ { XT q[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { XT k[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { XT v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { ZT o[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufL { float lse[]; };
layout(std430, set = 0, binding = 5) buffer BufP { float part[]; };
layout(std430, set = 0, binding = 6) buffer BufPL { float part_lse[]; };

// Element offsets (relative to each binding's start) and strides of batch, head and sequence; sizes; flags.
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

#ifndef COMBINE

shared float Qs[BM * D];
shared float Ks[BN * (D + 1u)]; // the pad keeps a column's reads on distinct banks
shared float Vs[BN * D];
shared float Ss[BM * BN];
shared float Ms[BM], Ls[BM], As[BM];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint i0 = gl_WorkGroupID.x * BM, h = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z / pc.nsplit, split = gl_WorkGroupID.z % pc.nsplit;
    const uint g = h / pc.group_;
    const int sq = int(pc.sq), skv = int(pc.skv);

    for (uint e = tid; e < BM * D; e += T) {
        const uint r = e / D, d = e - r * D, i = i0 + r;
        Qs[e] = i < pc.sq ? XF(q[pc.qo + b * pc.qb + h * pc.qh + i * pc.qs + d]) * pc.qscale : 0.0;
    }
    for (uint r = tid; r < BM; r += T) {
        Ms[r] = NEG_INF;
        Ls[r] = 0.0;
    }
    float acc[OPT];
    [[dont_unroll]] for (uint u = 0u; u < OPT; u++) acc[u] = 0.0;
    // the keys of this split that any row of the block sees: up to the last row's limit under causal
    const int last = min(int(i0 + BM), sq) - 1;
    const int kend = CAUSAL ? clamp(last + skv - sq + 1, 0, skv) : skv;
    const int kbeg = int(split * pc.kps), kstop = min(kend, kbeg + int(pc.kps));
    barrier();

    for (int j0 = kbeg; j0 < kstop; j0 += int(BN)) {
        for (uint e = tid; e < BN * D; e += T) {
            const uint j = e / D, d = e - j * D;
            const int jj = j0 + int(j);
            float kx = 0.0, vx = 0.0;
            if (jj < kstop) {
                kx = XF(k[pc.ko + b * pc.kb + g * pc.kh + uint(jj) * pc.ks + d]);
                vx = XF(v[pc.vo + b * pc.vb + g * pc.vh + uint(jj) * pc.vs + d]);
            }
            Ks[j * (D + 1u) + d] = kx;
            Vs[e] = vx;
        }
        barrier();
        for (uint e = tid; e < BM * BN; e += T) {
            const uint r = e / BN, j = e - r * BN;
            const int jj = j0 + int(j);
            float s = 0.0;
            [[dont_unroll]] for (uint d = 0u; d < D; d++) s = fma(Qs[r * D + d], Ks[j * (D + 1u) + d], s);
            const int limit = CAUSAL ? int(i0 + r) + skv - sq : skv - 1; // the last key row r sees
            Ss[e] = jj < kstop && jj <= limit ? s : NEG_INF;
        }
        barrier();
        for (uint r = tid; r < BM; r += T) {
            const float mo = Ms[r];
            float mb = NEG_INF;
            [[dont_unroll]] for (uint j = 0u; j < BN; j++) mb = max(mb, Ss[r * BN + j]);
            const float mn = max(mo, mb);
            if (mn == NEG_INF) { // no key seen yet: weights 0
                [[dont_unroll]] for (uint j = 0u; j < BN; j++) Ss[r * BN + j] = 0.0;
                As[r] = 1.0;
            } else {
                float sum = 0.0;
                [[dont_unroll]] for (uint j = 0u; j < BN; j++) {
                    const float sj = Ss[r * BN + j];
                    const float p = sj == NEG_INF ? 0.0 : exp2(sj - mn);
                    Ss[r * BN + j] = p;
                    sum += p;
                }
                const float alpha = mo == NEG_INF ? 0.0 : exp2(mo - mn);
                As[r] = alpha;
                Ls[r] = Ls[r] * alpha + sum;
                Ms[r] = mn;
            }
        }
        barrier();
        [[dont_unroll]] for (uint u = 0u; u < OPT; u++) {
            const uint e = tid + u * T;
            if (e < BM * D) {
                const uint r = e / D, d = e - r * D;
                float a = acc[u] * As[r];
                [[dont_unroll]] for (uint j = 0u; j < BN; j++) a = fma(Ss[r * BN + j], Vs[j * D + d], a);
                acc[u] = a;
            }
        }
        barrier();
    }

    [[dont_unroll]] for (uint u = 0u; u < OPT; u++) {
        const uint e = tid + u * T;
        const uint r = e / D, d = e - r * D, i = i0 + r;
        if (e >= BM * D || i >= pc.sq) continue;
        const float l = Ls[r];
        const float res = l > 0.0 ? acc[u] / l : 0.0;
        const float lse2 = l > 0.0 ? Ms[r] + log2(l) : NEG_INF;
        if (MODE == 0u) {
            o[pc.oo + b * pc.ob + h * pc.oh + i * pc.os + d] = ZC(res);
            if (HAS_LSE && d == 0u)
                lse[pc.lo + b * pc.lb + h * pc.lh + i * pc.ls] = l > 0.0 ? lse2 * float(LN2) : NEG_INF;
        } else {
            const uint row = (b * pc.hq + h) * pc.sq + i;
            part[(split * pc.rows + row) * D + d] = res;
            if (d == 0u) part_lse[split * pc.rows + row] = lse2;
        }
    }
}

#else

// Merges MODE 1's splits: one invocation per (row, d) of the B·Hq·Sq rows (pc.rows), over x and y.
void main() {
    const uint id = trr_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (id >= pc.rows * D) return;
    const uint row = id / D, d = id - row * D;
    const uint i = row % pc.sq, h = (row / pc.sq) % pc.hq, b = row / pc.sq / pc.hq;
    float m = NEG_INF;
    [[dont_unroll]] for (uint s = 0u; s < pc.nsplit; s++) m = max(m, part_lse[s * pc.rows + row]);
    float res = 0.0, total = 0.0;
    if (m != NEG_INF) {
        [[dont_unroll]] for (uint s = 0u; s < pc.nsplit; s++) {
            const float ls_ = part_lse[s * pc.rows + row];
            const float w = ls_ == NEG_INF ? 0.0 : exp2(ls_ - m);
            total += w;
            res = fma(w, part[(s * pc.rows + row) * D + d], res);
        }
        res /= total;
    }
    o[pc.oo + b * pc.ob + h * pc.oh + i * pc.os + d] = ZC(res);
    if (HAS_LSE && d == 0u)
        lse[pc.lo + b * pc.lb + h * pc.lh + i * pc.ls] = m != NEG_INF ? (m + log2(total)) * float(LN2) : NEG_INF;
}

#endif
