#version 450
// attention (docs/ops.md, attention) on VK_KHR_cooperative_matrix, 16x16x16 subgroup matrices with f32
// accumulation: the FlashAttention-2 forward for f16 and, with -DX_BF16 (GL_EXT_bfloat16: Slang's glslang),
// bf16. vk_attention.c runs it where the device offers the shape and the operands meet its alignment; the SIMT
// kernel (attention.comp) takes every other call.
//
// A workgroup of NSG subgroups takes BM = 16·RT·NSG query rows of one head (batch b, query head h, kv head
// h / group); subgroup sg owns R = 16·RT rows (RT row tiles of 16, 1 or 2), its Q rows held as RT·D/16 A
// matrices and its output as RT·D/16 f32 accumulators for the whole key loop. Every K or V matrix a subgroup
// loads from shared memory feeds RT multiply-adds (2·RT for V, P being split below), and every K/V block staged
// serves the workgroup's BM rows: the two reuses that bound the kernel by shared-memory traffic rather than
// by the tensor cores. For each block of BN keys:
//   1. the workgroup stages K and V (16-byte words of 8 elements, zero past the keys it reads) in shared memory
//      from registers; with STAGES = 2 those registers were loaded during the previous block's MMAs (the
//      global loads of block j + 1 are issued before the MMAs of block j: no asynchronous copies here); with
//      STAGES = 3 there are two K/V buffers in shared memory: block j + 1 is stored into one while block j is
//      read from the other, and the global loads of block j + 2 are in flight during block j's MMAs, so one
//      workgroup barrier a block (after the MMAs) both shows the next block and frees this one's buffer;
//   2. each subgroup multiplies S = Q·Kᵀ (R x BN, f32) and stores S into its own shared rows;
//   3. LPR = SG/R invocations per row take the online-softmax step in base 2 on the row's scores times
//      scale·log2 e (masked keys -inf): the block's maximum and the sum (shuffles among the row's invocations),
//      the weights P (as two parts of the input type, hi + lo) over S's rows, and the rescale factor
//      alpha = 2^(m - m_new) written 16 times across a row of a 16x16 f32 matrix per row tile;
//   4. the subgroup loads that matrix as an accumulator, which lays its elements out as the output's
//      accumulators are (one type), scales the output element by element, and adds P·V.
// Under causal, a subgroup whose rows see none of a block's keys skips steps 2 to 4 (exactly what they would
// leave: weights 0, alpha 1). At the end 1/l replaces alpha the same way, and the output goes through shared
// memory to o with its strides, rounded once (0 for a row that saw no key; lse = (m + log2 l)·ln 2, -inf
// without keys). A row that has seen no key keeps m = -inf and weights 0, and never forms -inf - (-inf).
//
// Shared memory (16-byte words): K [BN][D/8 + 1], V [BN][D/8 + 1] (the pad word puts the 8 rows of each
// matrix-load phase on 8 different bank groups), twice with STAGES = 3, then per subgroup R rows of
// SLD = BN/4 + 5 words: S in f32; over it the weights P as two 16-bit parts (hi in the row's first BN/8 words,
// lo in the next BN/8, 8 halves a word), then the rescale matrix's row (words BN/4 to BN/4 + 3) and a pad word
// (SLD odd: the f32 tiles' rows fall on distinct bank groups too). Q is staged once, before the loop, from the
// start of the array. The host checks RT 1 or 2, SG a multiple of R, BN >= 32, BN a multiple of 8·LPR and of 16,
// D 64 or 128, and every q, k and v offset and stride a multiple of 8 elements.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#if defined(X_BF16)
#extension GL_EXT_bfloat16 : require
#define ET bfloat16_t // the buffers hold bf16 as uint16_t (common.glsl)
#else
#define ET float16_t // built with -DX_F16 -DZ_F16
#endif
#define TRR_OWN_BINDINGS
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64; // 16·RT rows per subgroup: the host passes 16·RT·threads/SG
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint D = 64;
layout(constant_id = 4) const uint SG = 32; // the device's subgroup size
layout(constant_id = 5) const uint STAGES = 1; // 2: the next block's K and V loaded during this block's MMAs;
                                                // 3: as 2, and two K/V buffers in shared memory (one barrier a block)
const uint WG = gl_WorkGroupSize.x;
const uint NSG = WG / SG;
const uint RT = BM / (16u * NSG); // row tiles of 16 per subgroup
const uint R = 16u * RT;          // rows per subgroup
const uint LPR = SG / R;          // invocations per row in the softmax
const uint CPL = BN / LPR;        // scores per invocation (a multiple of 8)
const uint DT = D / 16u;          // 16-wide tiles of a row of Q, K, V or o
const uint DW = D / 8u;           // words of one K, V or Q row
const uint LD = DW + 1u;          // their padded stride
const uint SLD = BN / 4u + 5u;    // the stride of a subgroup's S rows: S, then the rescale matrix, one pad word
const uint NBUF = STAGES > 2u ? 2u : 1u; // K/V buffers in shared memory
const uint KV_WORDS = 2u * BN * LD;       // one buffer: K, then V
const uint K_AT = 0u;                     // within a buffer
const uint V_AT = BN * LD;
const uint S_AT = NBUF * KV_WORDS;
const uint SUB = R * SLD;         // words of one subgroup's rows
const uint A_OFF = BN / 4u;       // the rescale matrix's first word in a row (past P's two parts)
const uint WORDS = S_AT + NSG * SUB > BM * LD ? S_AT + NSG * SUB : BM * LD;
const uint KVW = BN * DW;            // words of one K (or V) block
const uint NPF = (KVW + WG - 1u) / WG; // of them per invocation
shared uvec4 SH[WORDS];

layout(std430, set = 0, binding = 0) readonly buffer BufQ { uvec4 q4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { uvec4 k4[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { uvec4 v4[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { ZT o[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufL { float lse[]; };

// attention.comp's push constants (vk_attention.c fills one struct for both kernels; nsplit, kps and rows are
// the SIMT kernel's).
layout(push_constant) uniform Push {
    uint qo, ko, vo, oo, lo;
    uint qb, qh, qs, kb, kh, ks, vb, vh, vs, ob, oh, os, lb, lh, ls;
    uint hq, group_, sq, skv, flags, nsplit, kps, rows;
    float qscale;
} pc;

#define CAUSAL ((pc.flags & 1u) != 0u)
#define HAS_LSE ((pc.flags & 2u) != 0u)
#define LN2 0.69314718055994530942

#define ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define AMAT coopmat<ET, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define BMAT coopmat<ET, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define ROW_MAJOR gl_CooperativeMatrixLayoutRowMajor
#define COL_MAJOR gl_CooperativeMatrixLayoutColumnMajor

// Two weights a and b as two words of the input type: x their rounding (a in the low half), y what that left,
// rounded in turn. P = hi + lo keeps ~22 (f16) or ~16 (bf16) bits of each weight. One rounding puts 2^-12 (f16)
// or 2^-9 (bf16) of each weight into o, which elements of o that cancel to near zero cannot absorb within
// docs/ops.md's element bound for half outputs.
#if defined(X_BF16)
// f to bf16, nearest even, in f32's upper half with the lower half zero: a weight's bits (in [0, 1], or NaN),
// so without trr_f2bf's NaN case, which is most of the softmax's integer work. A NaN weight comes out as a
// number, but its row's sum is NaN, which 1/l carries to the row's o.
uint bf_round(float f) {
    const uint b = floatBitsToUint(f);
    return (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
}
uvec2 split2(float a, float b) {
    const uint ha = bf_round(a), hb = bf_round(b);
    const uint la = bf_round(a - uintBitsToFloat(ha)), lb = bf_round(b - uintBitsToFloat(hb));
    return uvec2((ha >> 16) | hb, (la >> 16) | lb);
}
const float P_SCALE = 1.0;
#else
// f16: the weights are split at 2^12 times their value (at most 4096, inside f16's range) and 1/l takes the
// 2^-12 back, so that what the rounding leaves of a weight is a normal f16 down to weights of 2^-15. Both parts are
// rounded in integer registers, as bf16's: with packHalf2x16 and unpackHalf2x16 the residual v - f16(v) is a
// float expression that a driver's compiler may fold or evaluate in f16 (either leaves a lo of 0: one rounding of
// each weight, the bound's miss), and the conversions' rounding mode and subnormals are the driver's.
const float P_SCALE = 4096.0;
// v (>= 0, at most P_SCALE, or NaN) rounded to f16's 11 significant bits, nearest even, as f32 bits; 0 below f16's
// smallest normal, 2^-14 (where the second part takes all of v).
uint h_round(float v) {
    const uint b = floatBitsToUint(v);
    const uint r = (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
    return r < 0x38800000u ? 0u : r;
}
// Those bits (0, or a normal f16 value) as f16 bits: the exponent rebiased from 127 to 15. A NaN weight comes
// out as a number (masked to 15 bits: it cannot reach the neighbouring half), but its row's sum is NaN, which
// 1/l carries to the row's o.
uint h_bits(uint r) { return r == 0u ? 0u : ((r >> 13) - 0x1c000u) & 0x7fffu; }
// The residual x (finite, of either sign) as f16 bits, nearest even, subnormals kept (as multiples of 2^-24:
// exact in f32, and rounded by roundEven, not by a conversion).
uint h_lo(float x) {
    const uint b = floatBitsToUint(x), a = b & 0x7fffffffu, s = (b >> 16) & 0x8000u;
    if (a < 0x38800000u) return uint(roundEven(uintBitsToFloat(a) * 16777216.0)) | s;
    return ((((a + 0xfffu + ((a >> 13) & 1u)) >> 13) - 0x1c000u) & 0x7fffu) | s;
}
uvec2 split2(float a, float b) {
    const float va = a * P_SCALE, vb = b * P_SCALE;
    const uint ha = h_round(va), hb = h_round(vb);
    return uvec2(h_bits(ha) | (h_bits(hb) << 16),
                 h_lo(va - uintBitsToFloat(ha)) | (h_lo(vb - uintBitsToFloat(hb)) << 16));
}
#endif

// This invocation's share of a K and V block, in registers between the global loads and the shared stores.
uvec4 kr[NPF], vr[NPF];

// Block j0's words of K and V into kr and vr (zero past the keys the workgroup reads).
void fetch_kv(uint kbase, uint vbase, int j0, int kend) {
    [[unroll]] for (uint i = 0u; i < NPF; i++) {
        const uint e = gl_LocalInvocationID.x + i * WG, j = e / DW, w = e - j * DW;
        const int jj = j0 + int(j);
        kr[i] = uvec4(0u);
        vr[i] = uvec4(0u);
        if (e < KVW && jj < kend) {
            kr[i] = k4[(kbase + uint(jj) * pc.ks) / 8u + w];
            vr[i] = v4[(vbase + uint(jj) * pc.vs) / 8u + w];
        }
    }
}

// kr and vr into the K/V buffer at word `at`.
void stage_kv(uint at) {
    [[unroll]] for (uint i = 0u; i < NPF; i++) {
        const uint e = gl_LocalInvocationID.x + i * WG, j = e / DW, w = e - j * DW;
        if (e < KVW) {
            SH[at + K_AT + j * LD + w] = kr[i];
            SH[at + V_AT + j * LD + w] = vr[i];
        }
    }
}

// f across this invocation's part of its row of the rescale matrix (16 floats from word `at`).
void put_row(uint at, uint part, float f) {
    if (LPR <= 4u) { // whole words
        [[unroll]] for (uint c = part * (16u / LPR); c < (part + 1u) * (16u / LPR); c += 4u)
            SH[at + c / 4u] = uvec4(floatBitsToUint(f));
    } else {
        [[unroll]] for (uint c = part * (16u / LPR); c < (part + 1u) * (16u / LPR); c++)
            SH[at + c / 4u][c % 4u] = floatBitsToUint(f);
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint sg = tid / SG, lane = tid % SG;
    const uint i0 = gl_WorkGroupID.x * BM, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint g = h / pc.group_;
    const int sq = int(pc.sq), skv = int(pc.skv);
    const uint qbase = pc.qo + b * pc.qb + h * pc.qh;
    const uint kbase = pc.ko + b * pc.kb + g * pc.kh;
    const uint vbase = pc.vo + b * pc.vb + g * pc.vh;
    const uint sub = S_AT + sg * SUB; // the subgroup's rows in shared memory

    // Q: staged once (zero past the queries), then held as A matrices.
    for (uint e = tid; e < BM * DW; e += WG) {
        const uint r = e / DW, w = e - r * DW, i = i0 + r;
        SH[r * LD + w] = i < pc.sq ? q4[(qbase + i * pc.qs) / 8u + w] : uvec4(0u);
    }
    barrier();
    AMAT qa[RT * DT];
    [[unroll]] for (uint rt = 0u; rt < RT; rt++)
        [[unroll]] for (uint t = 0u; t < DT; t++)
            coopMatLoad(qa[rt * DT + t], SH, (sg * R + rt * 16u) * LD + 2u * t, LD, ROW_MAJOR);
    ACC acc[RT * DT];
    [[unroll]] for (uint t = 0u; t < RT * DT; t++) acc[t] = ACC(0.0);

    // this invocation's row of the softmax and its scores' columns
    const uint r = lane / LPR, part = lane % LPR, c0 = part * CPL;
    const int row = int(i0 + sg * R + r);
    const int limit = CAUSAL ? row + skv - sq : skv - 1; // the last key the row sees
    const uint srow = sub + r * SLD;                     // the row's words in shared memory
    float m = NEG_INF, l = 0.0;

    // the keys any row of the workgroup sees: up to the last row's limit under causal; and past the last key any
    // row of this subgroup sees (uniform in the subgroup; none for a subgroup past the queries)
    const int last = min(int(i0 + BM), sq) - 1;
    const int kend = CAUSAL ? clamp(last + skv - sq + 1, 0, skv) : skv;
    const int first = int(i0 + sg * R);
    const int sg_end = first >= sq ? 0 : CAUSAL ? min(first + int(R), sq) + skv - sq : skv;
    if (STAGES > 1u && kend > 0) fetch_kv(kbase, vbase, 0, kend);
    barrier(); // every subgroup holds its Q before K overwrites it
    if (STAGES > 2u && kend > 0) { // block 0 into buffer 0, block 1's loads in flight
        stage_kv(0u);
        if (int(BN) < kend) fetch_kv(kbase, vbase, int(BN), kend);
        barrier();
    }

    for (int j0 = 0; j0 < kend; j0 += int(BN)) {
        // 1. K and V
        uint kv = 0u; // this block's buffer
        if (STAGES > 2u) {
            // this block's in buffer (j0 / BN) % 2, stored and made visible by the last block's barrier (or the
            // one before the loop); the next block's from registers into the other buffer, whose block every
            // subgroup finished reading before that barrier; then the global loads of the block after it, in
            // flight during this block's MMAs
            const uint blk = uint(j0) / BN;
            kv = (blk & 1u) * KV_WORDS;
            if (j0 + int(BN) < kend) {
                stage_kv(((blk + 1u) & 1u) * KV_WORDS);
                if (j0 + 2 * int(BN) < kend) fetch_kv(kbase, vbase, j0 + 2 * int(BN), kend);
            }
        } else {
            if (STAGES == 1u) fetch_kv(kbase, vbase, j0, kend);
            stage_kv(0u);
            barrier();
            if (STAGES > 1u && j0 + int(BN) < kend) fetch_kv(kbase, vbase, j0 + int(BN), kend);
        }

        if (j0 < sg_end) { // else no row of the subgroup sees a key of the block
            // 2. S = Q·Kᵀ, 16 keys at a time, each K matrix feeding the RT row tiles
            [[unroll]] for (uint n = 0u; n < BN / 16u; n++) {
                ACC s[RT];
                [[unroll]] for (uint rt = 0u; rt < RT; rt++) s[rt] = ACC(0.0);
                [[unroll]] for (uint t = 0u; t < DT; t++) {
                    BMAT kb;
                    coopMatLoad(kb, SH, kv + K_AT + n * 16u * LD + 2u * t, LD, COL_MAJOR);
                    [[unroll]] for (uint rt = 0u; rt < RT; rt++) s[rt] = coopMatMulAdd(qa[rt * DT + t], kb, s[rt]);
                }
                [[unroll]] for (uint rt = 0u; rt < RT; rt++)
                    coopMatStore(s[rt], SH, sub + rt * 16u * SLD + 4u * n, SLD, ROW_MAJOR);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // 3. the online softmax step of row r over columns c0 to c0 + CPL - 1
            float sv[CPL];
            float mb = NEG_INF;
            const int lim = min(kend - 1, limit) - j0 - int(c0); // the last of the columns the row sees
            [[unroll]] for (uint c = 0u; c < CPL; c++) {
                const float s = uintBitsToFloat(SH[srow + (c0 + c) / 4u][(c0 + c) % 4u]) * pc.qscale;
                sv[c] = int(c) <= lim ? s : NEG_INF;
                mb = max(mb, sv[c]);
            }
            [[unroll]] for (uint x = 1u; x < LPR; x <<= 1) mb = max(mb, subgroupShuffleXor(mb, x));
            const float mn = max(m, mb);
            float alpha = 1.0, sum = 0.0;
            if (mn != NEG_INF) { // else no key seen yet: weights 0
                [[unroll]] for (uint c = 0u; c < CPL; c++) {
                    sv[c] = sv[c] == NEG_INF ? 0.0 : exp2(sv[c] - mn);
                    sum += sv[c];
                }
                alpha = m == NEG_INF ? 0.0 : exp2(m - mn);
            } else {
                [[unroll]] for (uint c = 0u; c < CPL; c++) sv[c] = 0.0;
            }
            [[unroll]] for (uint x = 1u; x < LPR; x <<= 1) sum += subgroupShuffleXor(sum, x);
            l = l * alpha + sum;
            m = mn;
            subgroupMemoryBarrierShared();
            subgroupBarrier(); // every score is read before P and the rescale matrix overwrite them
            [[unroll]] for (uint c = 0u; c < CPL; c += 8u) {
                const uvec2 w0 = split2(sv[c], sv[c + 1u]), w1 = split2(sv[c + 2u], sv[c + 3u]);
                const uvec2 w2 = split2(sv[c + 4u], sv[c + 5u]), w3 = split2(sv[c + 6u], sv[c + 7u]);
                SH[srow + (c0 + c) / 8u] = uvec4(w0.x, w1.x, w2.x, w3.x);
                SH[srow + BN / 8u + (c0 + c) / 8u] = uvec4(w0.y, w1.y, w2.y, w3.y);
            }
            put_row(srow + A_OFF, part, alpha);
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // 4. O = alpha·O + P·V, each V matrix feeding the RT row tiles' two parts of P
            [[unroll]] for (uint rt = 0u; rt < RT; rt++) {
                ACC am;
                coopMatLoad(am, SH, sub + rt * 16u * SLD + A_OFF, SLD, ROW_MAJOR);
                [[unroll]] for (uint t = 0u; t < DT; t++)
                    [[unroll]] for (int e = 0; e < am.length(); e++) acc[rt * DT + t][e] *= am[e];
            }
            [[unroll]] for (uint n = 0u; n < BN / 16u; n++) {
                AMAT pa[RT];
                AMAT pl[RT]; // one declarator a line: glslang 13 types a second one of a coopmat declaration wrongly
                [[unroll]] for (uint rt = 0u; rt < RT; rt++) {
                    coopMatLoad(pa[rt], SH, sub + rt * 16u * SLD + 2u * n, SLD, ROW_MAJOR);
                    coopMatLoad(pl[rt], SH, sub + rt * 16u * SLD + BN / 8u + 2u * n, SLD, ROW_MAJOR);
                }
                [[unroll]] for (uint t = 0u; t < DT; t++) {
                    BMAT vb;
                    coopMatLoad(vb, SH, kv + V_AT + n * 16u * LD + 2u * t, LD, ROW_MAJOR);
                    [[unroll]] for (uint rt = 0u; rt < RT; rt++) {
                        acc[rt * DT + t] = coopMatMulAdd(pa[rt], vb, acc[rt * DT + t]);
                        acc[rt * DT + t] = coopMatMulAdd(pl[rt], vb, acc[rt * DT + t]);
                    }
                }
            }
        }
        // K and V are read before the next block's overwrite them (stages 1 and 2), or before the block after
        // next's (stages 3, which this barrier also shows the next block's K and V)
        barrier();
    }

    // 1/l (over P_SCALE; 0 for a row without keys, NaN for a NaN sum) across the rescale matrix's row, then the
    // output 16 columns at a time through the first 4 words of each row of the row tile (the rescale matrix starts
    // at word A_OFF >= 8).
    const float inv = l > 0.0 ? 1.0 / (l * P_SCALE) : l == 0.0 ? 0.0 : l;
    put_row(srow + A_OFF, part, inv);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const uint obase = pc.oo + b * pc.ob + h * pc.oh;
    [[unroll]] for (uint rt = 0u; rt < RT; rt++) {
        const uint tile = sub + rt * 16u * SLD;
        ACC am;
        coopMatLoad(am, SH, tile + A_OFF, SLD, ROW_MAJOR);
        [[unroll]] for (uint t = 0u; t < DT; t++) {
            ACC ot = acc[rt * DT + t];
            [[unroll]] for (int e = 0; e < ot.length(); e++) ot[e] *= am[e];
            coopMatStore(ot, SH, tile, SLD, ROW_MAJOR);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 256u; e += SG) {
                const uint rr = e / 16u, c = e % 16u, i = i0 + sg * R + rt * 16u + rr;
                if (i < pc.sq)
                    o[obase + i * pc.os + 16u * t + c] = ZC(uintBitsToFloat(SH[tile + rr * SLD + c / 4u][c % 4u]));
            }
            subgroupBarrier(); // read before the next tile overwrites it
        }
    }
    if (HAS_LSE && part == 0u && row < sq)
        lse[pc.lo + b * pc.lb + h * pc.lh + uint(row) * pc.ls] = l > 0.0 ? (m + log2(l)) * float(LN2) : NEG_INF;
}
