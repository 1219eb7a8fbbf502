#version 450
// C = act(A·B), SIMT: one workgroup per BM x BN output tile in grouped order (core/grouped.h), BK-deep slices
// of A and B staged in shared memory as f32, and a TM x TN register micro-tile per invocation. A and B are f32,
// f16 (-DX_F16), bf16 (-DX_BF16) or 8-bit floats (-DX_F8: each of A and B e4m3 or e5m2 as A_E5M2 and B_E5M2 say,
// widened exactly as they are loaded, the f32 sums multiplied by scale_a * scale_b before the epilogue), C f32,
// f16 (-DZ_F16) or bf16 (-DZ_BF16); accumulation is f32. Tiles,
// transposes, the epilogue and the pipeline depth are specialization constants, so each variant is compiled for
// its own layout. The design is kernels/cuda/matmul_simt.cu's:
// - Where TM (TN) is a multiple of 4, the micro-tile's rows (columns) are groups of 4 consecutive ones, one
//   4-group per invocation side by side and the groups a thread-grid of them apart (8x8: two 4x4 quarters half
//   a tile apart), so each shared read is one 16-byte vector that a subgroup broadcasts or spreads over banks,
//   and C is written 4 columns at a time. Otherwise single rows (columns) one thread-grid apart.
// - Slices move global -> registers -> shared memory in chunks of CW = 4 consecutive elements (1 where a side
//   of the tile is not a multiple of 4): the next slice's loads are issued before the current one is multiplied.
//   With STAGES = 2 the shared tiles are double-buffered and one barrier per slice suffices; STAGES = 1 keeps
//   one buffer (half the shared memory) and waits twice.
// - pc.pad (host: offsets, leading and batch strides all multiples of 4 elements; bindings start 16-byte
//   aligned): bit 0 A, bit 1 B chunks whole inside the matrix load as one vector (16 bytes f32, 8 bytes
//   f16/bf16); bit 2 C's 4-column groups store as one. Chunks over an edge load element by element, zero-filled.
//   A push constant, not a specialization, so the alignment of a call's operands adds no pipelines.
// Every loop inside the K loop has a trip count fixed by the specialization and is unrolled, so an invocation
// runs about K / BK loop iterations in all: lavapipe ends any invocation's loops after 65535 iterations, and the
// host refuses a K too deep for that (check_config) rather than return what a cut-short loop leaves.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(X_F8)
#define X_U8 // common.glsl: the bytes through 8-bit storage
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint GROUP_M = 8;
layout(constant_id = 7) const uint TRANS_A = 0;
layout(constant_id = 8) const uint TRANS_B = 0;
layout(constant_id = 9) const uint EPI = 0; // 0 none, 1 relu, 2 leaky_relu, 3 gelu (trr_epilogue)
layout(constant_id = 10) const uint STAGES = 1; // shared buffers: 1 or 2
// Long K (the host sets it past 16384 for f32 outputs): every FOLD slices the accumulators are added into a second
// set and restarted, so each sum grows over a few hundred terms instead of all K (at K = 131075 one running f32
// sum came past docs/ops.md's 1e-5 Frobenius bound). 0: off, and the second set is compiled out.
layout(constant_id = 11) const uint FOLD = 0;
// -DX_F8: which 8-bit float A and B hold (0 e4m3, 1 e5m2), so one build serves the four pairs.
layout(constant_id = 12) const uint A_E5M2 = 0;
layout(constant_id = 13) const uint B_E5M2 = 0;

#if defined(X_F16)
#define XV f16vec4
#elif defined(X_BF16)
#define XV uvec2
#elif defined(X_F8)
#define XV uint // four bytes, element 0 the lowest
#else
#define XV vec4
#endif
#if defined(X_F8)
// An 8-bit float's bytes (e5m2 != 0: e5m2, else e4m3) as its f32 value, exactly.
float f8_value(uint b, uint e5m2) {
    return uintBitsToFloat(e5m2 != 0u ? trr_e5m2_to_f32_bits(b) : trr_e4m3_to_f32_bits(b));
}
#endif
#if defined(Z_F16)
#define ZV f16vec4
#elif defined(Z_BF16)
#define ZV uvec2
#else
#define ZV vec4
#endif
// The same bindings as common.glsl's, seen as 4-element vectors (used only where pc.pad says they are aligned).
layout(std430, set = 0, binding = 0) readonly buffer BufXV { XV xv[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufYV { XV yv[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufZV { ZV zv[]; };

const uint TXC = BN / TN; // invocations along n
const uint TYC = BM / TM; // invocations along m
const uint WG = TXC * TYC; // = the workgroup size (the host's micro-tile)
const uint VA = TM % 4u == 0u ? 4u : 1u; // consecutive rows per group of the micro-tile
const uint VB = TN % 4u == 0u ? 4u : 1u; // consecutive columns per group
const uint CW = ((BM | BN | BK) & 3u) == 0u ? 4u : 1u; // elements per load chunk
const uint CA = (BM * BK / CW + WG - 1u) / WG; // A chunks per invocation
const uint CB = (BN * BK / CW + WG - 1u) / WG;

// Tiles stored k-major, [stage][k][m] and [stage][k][n], in 4-element words with one word of padding per row.
const uint A_LD = (BM + 3u) / 4u + 1u;
const uint B_LD = (BN + 3u) / 4u + 1u;
shared vec4 As[STAGES * BK * A_LD];
shared vec4 Bs[STAGES * BK * B_LD];

float act(float v) {
#if defined(X_F8)
    v *= uintBitsToFloat(pc.aux);
#endif
    if (EPI == 1u) return v <= 0.0 ? 0.0 : v; // a NaN stays NaN (max(NaN, 0) is undefined)
    if (EPI == 2u) return v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) return trr_gelu(v);
    return v;
}

#if defined(X_F8)
// 8-bit floats stay raw (CW bytes a chunk, the lowest first) from load_slice to store_slice and are widened only
// there: used right after their loads, they would hold every slice's loads up before its multiply-adds.
uint ra[CA];
uint rb[CB];
#define A_ELEM(r, j) f8_value((ra[r] >> (8u * (j))) & 0xffu, A_E5M2)
#define B_ELEM(r, j) f8_value((rb[r] >> (8u * (j))) & 0xffu, B_E5M2)
#else
float ra[CA * CW];
float rb[CB * CW];
#define A_ELEM(r, j) ra[(r) * CW + (j)]
#define B_ELEM(r, j) rb[(r) * CW + (j)]
#endif
uint m0, n0, t;

// Global -> registers: this invocation's chunks of the slice starting at k0 (consecutive invocations take
// consecutive chunks of whichever dimension is contiguous).
void load_slice(uint k0) {
    const uint M = pc.rows, N = pc.cols, K = pc.k;
    [[unroll]] for (uint r = 0; r < CA; r++) {
        uint i = t + r * WG;
        uint row, col, ext; // row index, first column of the chunk, the column extent (in storage order)
        if (TRANS_A == 0u) { row = m0 + i / (BK / CW); col = k0 + (i % (BK / CW)) * CW; ext = K; }
        else { row = k0 + i / (BM / CW); col = m0 + (i % (BM / CW)) * CW; ext = M; }
        bool in_row = i < BM * BK / CW && row < (TRANS_A == 0u ? M : K);
        uint at = TRR_XO + row * pc.xs0 + col;
#if defined(X_F8)
        if (CW == 4u && (pc.pad & 1u) != 0u && in_row && col + 3u < ext) {
            ra[r] = xv[at / 4u];
        } else {
            ra[r] = 0u;
            [[unroll]] for (uint j = 0; j < CW; j++)
                if (in_row && col + j < ext) ra[r] |= uint(x[at + j]) << (8u * j);
        }
#else
        if (CW == 4u && (pc.pad & 1u) != 0u && in_row && col + 3u < ext) {
            vec4 v = XVF(xv[at / 4u]);
            [[unroll]] for (uint j = 0; j < 4u; j++) ra[r * CW + j] = v[j];
        } else {
            [[unroll]] for (uint j = 0; j < CW; j++)
                ra[r * CW + j] = in_row && col + j < ext ? XF(x[at + j]) : 0.0;
        }
#endif
    }
    [[unroll]] for (uint r = 0; r < CB; r++) {
        uint i = t + r * WG;
        uint row, col, ext;
        if (TRANS_B == 0u) { row = k0 + i / (BN / CW); col = n0 + (i % (BN / CW)) * CW; ext = N; }
        else { row = n0 + i / (BK / CW); col = k0 + (i % (BK / CW)) * CW; ext = K; }
        bool in_row = i < BN * BK / CW && row < (TRANS_B == 0u ? K : N);
        uint at = TRR_YO + row * pc.ys0 + col;
#if defined(X_F8)
        if (CW == 4u && (pc.pad & 2u) != 0u && in_row && col + 3u < ext) {
            rb[r] = yv[at / 4u];
        } else {
            rb[r] = 0u;
            [[unroll]] for (uint j = 0; j < CW; j++)
                if (in_row && col + j < ext) rb[r] |= uint(y[at + j]) << (8u * j);
        }
#else
        if (CW == 4u && (pc.pad & 2u) != 0u && in_row && col + 3u < ext) {
            vec4 v = XVF(yv[at / 4u]);
            [[unroll]] for (uint j = 0; j < 4u; j++) rb[r * CW + j] = v[j];
        } else {
            [[unroll]] for (uint j = 0; j < CW; j++)
                rb[r * CW + j] = in_row && col + j < ext ? XF(y[at + j]) : 0.0;
        }
#endif
    }
}

// Registers -> shared buffer s: chunks along m (n) are one vector store, chunks along k are transposed.
void store_slice(uint s) {
    [[unroll]] for (uint r = 0; r < CA; r++) {
        uint i = t + r * WG;
        if (i < BM * BK / CW) {
            if (TRANS_A == 0u) {
                uint m = i / (BK / CW), k = (i % (BK / CW)) * CW;
                [[unroll]] for (uint j = 0; j < CW; j++) As[(s * BK + k + j) * A_LD + m / 4u][m % 4u] = A_ELEM(r, j);
            } else {
                uint k = i / (BM / CW), m = (i % (BM / CW)) * CW;
                if (CW == 4u)
                    As[(s * BK + k) * A_LD + m / 4u] = vec4(A_ELEM(r, 0u), A_ELEM(r, 1u), A_ELEM(r, 2u), A_ELEM(r, 3u));
                else
                    As[(s * BK + k) * A_LD + m / 4u][m % 4u] = A_ELEM(r, 0u);
            }
        }
    }
    [[unroll]] for (uint r = 0; r < CB; r++) {
        uint i = t + r * WG;
        if (i < BN * BK / CW) {
            if (TRANS_B == 0u) {
                uint k = i / (BN / CW), n = (i % (BN / CW)) * CW;
                if (CW == 4u)
                    Bs[(s * BK + k) * B_LD + n / 4u] = vec4(B_ELEM(r, 0u), B_ELEM(r, 1u), B_ELEM(r, 2u), B_ELEM(r, 3u));
                else
                    Bs[(s * BK + k) * B_LD + n / 4u][n % 4u] = B_ELEM(r, 0u);
            } else {
                uint n = i / (BK / CW), k = (i % (BK / CW)) * CW;
                [[unroll]] for (uint j = 0; j < CW; j++) Bs[(s * BK + k + j) * B_LD + n / 4u][n % 4u] = B_ELEM(r, j);
            }
        }
    }
}

void main() {
    uint M = pc.rows, N = pc.cols, K = pc.k;
    uint npm = (M + BM - 1u) / BM;
    uint npn = (N + BN - 1u) / BN;
    uint pid = trr_group_id();
    if (pid >= npm * npn) return; // uniform across the workgroup

    uint width = GROUP_M * npn;
    uint first_m = (pid / width) * GROUP_M;
    uint gsize = min(npm - first_m, GROUP_M);
    uint pm = first_m + (pid % width) % gsize;
    uint pn = (pid % width) / gsize;
    m0 = pm * BM;
    n0 = pn * BN;

    t = gl_LocalInvocationID.x;
    uint tx = t % TXC, ty = t / TXC;

    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    float folded[TM * TN];
    if (FOLD != 0u)
        [[unroll]] for (uint i = 0; i < TM * TN; i++) folded[i] = 0.0;
    float a[TM];
    float b[TN];

    uint nk = (K + BK - 1u) / BK;
    if (nk > 0u) {
        load_slice(0u);
        store_slice(0u);
    }
    barrier();
    for (uint kt = 0; kt < nk; kt++) {
        uint s = STAGES == 2u ? kt & 1u : 0u;
        bool more = kt + 1u < nk;
        if (more) load_slice((kt + 1u) * BK);
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            uint ar = (s * BK + kk) * A_LD, br = (s * BK + kk) * B_LD;
            if (VA == 4u) {
                [[unroll]] for (uint g = 0; g < TM / 4u; g++) {
                    vec4 v = As[ar + g * TYC + ty];
                    [[unroll]] for (uint e = 0; e < 4u; e++) a[g * 4u + e] = v[e];
                }
            } else {
                [[unroll]] for (uint i = 0; i < TM; i++) {
                    uint m = i * TYC + ty;
                    a[i] = As[ar + m / 4u][m % 4u];
                }
            }
            if (VB == 4u) {
                [[unroll]] for (uint g = 0; g < TN / 4u; g++) {
                    vec4 v = Bs[br + g * TXC + tx];
                    [[unroll]] for (uint e = 0; e < 4u; e++) b[g * 4u + e] = v[e];
                }
            } else {
                [[unroll]] for (uint j = 0; j < TN; j++) {
                    uint n = j * TXC + tx;
                    b[j] = Bs[br + n / 4u][n % 4u];
                }
            }
            [[unroll]] for (uint i = 0; i < TM; i++)
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
        }
        if (FOLD != 0u && (kt + 1u) % FOLD == 0u) {
            [[unroll]] for (uint i = 0; i < TM * TN; i++) {
                folded[i] += acc[i];
                acc[i] = 0.0;
            }
        }
        if (STAGES == 1u) barrier(); // every invocation is done with the buffer before it is overwritten
        if (more) store_slice(STAGES == 2u ? s ^ 1u : 0u);
        barrier();
    }
    if (FOLD != 0u)
        [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] += folded[i];

    [[unroll]] for (uint i = 0; i < TM; i++) {
        uint gm = m0 + (i / VA) * (VA * TYC) + ty * VA + i % VA;
        if (gm >= M) continue;
        uint zrow = TRR_ZO + gm * pc.zs0;
        [[unroll]] for (uint g = 0; g < TN / VB; g++) {
            uint gn = n0 + g * (VB * TXC) + tx * VB;
            if (VB == 4u && (pc.pad & 4u) != 0u && gn + 3u < N) {
                vec4 v = vec4(act(acc[i * TN + g * 4u]), act(acc[i * TN + g * 4u + 1u]), act(acc[i * TN + g * 4u + 2u]),
                              act(acc[i * TN + g * 4u + 3u]));
                zv[(zrow + gn) / 4u] = ZVC(v);
            } else {
                [[unroll]] for (uint e = 0; e < VB; e++)
                    if (gn + e < N) z[zrow + gn + e] = ZC(act(acc[i * TN + g * VB + e]));
            }
        }
    }
}
