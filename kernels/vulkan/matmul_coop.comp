#version 450
// f16 matmul on cooperative matrices (VK_NV_cooperative_matrix, 16x16x16, f32 accumulation): one workgroup per
// BM x BN tile in grouped order; WM x WN subgroups of 32 each own a (BM/WM) x (BN/WN) patch of 16x16
// accumulators. A and B slices of depth BK are staged in shared memory (zero-filled at the edges, any layout),
// and the accumulators go through a per-subgroup shared scratch for the masked, fused-epilogue store.
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#define X_F16
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 2; // subgroups along M
layout(constant_id = 5) const uint GROUP_M = 8;
layout(constant_id = 6) const uint TRANS_A = 0;
layout(constant_id = 7) const uint TRANS_B = 0;
layout(constant_id = 8) const uint EPI = 0;

const uint NSG = gl_WorkGroupSize.x / 32u;
const uint WN = NSG / WM;
const uint WTM = BM / WM / 16u; // accumulator tiles per subgroup along M
const uint WTN = BN / WN / 16u;
// Rows padded by 8 halves: keeps 16-byte row alignment for the matrix loads and spreads banks.
const uint A_LD = BK + 8u;
const uint B_LD = BN + 8u;
shared float16_t As[BM * A_LD]; // [m][k]
shared float16_t Bs[BK * B_LD]; // [k][n]
shared float Cs[NSG * 256u];    // one 16x16 f32 tile per subgroup

// The same bindings seen as 16-byte words: when the host finds an operand's offset, leading stride and
// contiguous extent all multiples of 8 halves (pc.pad bit 0 for A, bit 1 for B), tiles load 8 halves at once.
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { uvec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY4 { uvec4 y4[]; };


#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HMAT fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

float act(float v) {
    if (EPI == 1u) return max(v, 0.0);
    if (EPI == 2u) return v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) return trr_gelu(v);
    return v;
}

void main() {
    const uint WG = gl_WorkGroupSize.x;
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
    uint m0 = pm * BM, n0 = pn * BN;

    uint t = gl_LocalInvocationID.x;
    uint sg = t / 32u, lane = t % 32u;
    uint wm = sg % WM, wn = sg / WM;

    ACC acc[WTM * WTN];
    for (uint i = 0; i < WTM * WTN; i++) acc[i] = ACC(0.0);
    HMAT ma[WTM];
    HMAT mb;

    for (uint k0 = 0; k0 < K; k0 += BK) {
        if ((pc.pad & 1u) != 0u) {
            // 8 consecutive halves along A's contiguous dimension per step.
            for (uint i = t; i < BM * BK / 8u; i += WG) {
                uint mm, kk;
                if (TRANS_A == 0u) { mm = i / (BK / 8u); kk = (i % (BK / 8u)) * 8u; } else { kk = i / (BM / 8u); mm = (i % (BM / 8u)) * 8u; }
                uint gm = m0 + mm, gk = k0 + kk;
                uvec4 w = uvec4(0u);
                if (gm < M && gk < K) w = x4[(pc.xo + (TRANS_A == 0u ? gm * pc.xs0 + gk : gk * pc.xs0 + gm)) / 8u];
                for (uint q = 0; q < 4u; q++) {
                    f16vec2 h = unpackFloat2x16(w[q]);
                    if (TRANS_A == 0u) {
                        As[mm * A_LD + kk + 2u * q] = h.x;
                        As[mm * A_LD + kk + 2u * q + 1u] = h.y;
                    } else {
                        As[(mm + 2u * q) * A_LD + kk] = h.x;
                        As[(mm + 2u * q + 1u) * A_LD + kk] = h.y;
                    }
                }
            }
        } else {
            for (uint i = t; i < BM * BK; i += WG) {
                uint mm, kk;
                if (TRANS_A == 0u) { mm = i / BK; kk = i % BK; } else { kk = i / BM; mm = i % BM; }
                uint gm = m0 + mm, gk = k0 + kk;
                float16_t v = float16_t(0.0);
                if (gm < M && gk < K) v = x[pc.xo + (TRANS_A == 0u ? gm * pc.xs0 + gk : gk * pc.xs0 + gm)];
                As[mm * A_LD + kk] = v;
            }
        }
        if ((pc.pad & 2u) != 0u) {
            for (uint i = t; i < BN * BK / 8u; i += WG) {
                uint nn, kk;
                if (TRANS_B == 0u) { kk = i / (BN / 8u); nn = (i % (BN / 8u)) * 8u; } else { nn = i / (BK / 8u); kk = (i % (BK / 8u)) * 8u; }
                uint gn = n0 + nn, gk = k0 + kk;
                uvec4 w = uvec4(0u);
                if (gn < N && gk < K) w = y4[(pc.yo + (TRANS_B == 0u ? gk * pc.ys0 + gn : gn * pc.ys0 + gk)) / 8u];
                for (uint q = 0; q < 4u; q++) {
                    f16vec2 h = unpackFloat2x16(w[q]);
                    if (TRANS_B == 0u) {
                        Bs[kk * B_LD + nn + 2u * q] = h.x;
                        Bs[kk * B_LD + nn + 2u * q + 1u] = h.y;
                    } else {
                        Bs[(kk + 2u * q) * B_LD + nn] = h.x;
                        Bs[(kk + 2u * q + 1u) * B_LD + nn] = h.y;
                    }
                }
            }
        } else {
            for (uint i = t; i < BN * BK; i += WG) {
                uint nn, kk;
                if (TRANS_B == 0u) { kk = i / BN; nn = i % BN; } else { nn = i / BK; kk = i % BK; }
                uint gn = n0 + nn, gk = k0 + kk;
                float16_t v = float16_t(0.0);
                if (gn < N && gk < K) v = y[pc.yo + (TRANS_B == 0u ? gk * pc.ys0 + gn : gn * pc.ys0 + gk)];
                Bs[kk * B_LD + nn] = v;
            }
        }
        barrier();
        for (uint ks = 0; ks < BK; ks += 16u) {
            for (uint i = 0; i < WTM; i++)
                coopMatLoadNV(ma[i], As, (wm * WTM * 16u + i * 16u) * A_LD + ks, A_LD, false);
            for (uint j = 0; j < WTN; j++) {
                coopMatLoadNV(mb, Bs, ks * B_LD + wn * WTN * 16u + j * 16u, B_LD, false);
                for (uint i = 0; i < WTM; i++) acc[i * WTN + j] = coopMatMulAddNV(ma[i], mb, acc[i * WTN + j]);
            }
        }
        barrier();
    }

    for (uint i = 0; i < WTM; i++) {
        for (uint j = 0; j < WTN; j++) {
            coopMatStoreNV(acc[i * WTN + j], Cs, sg * 256u, 16u, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 256u; e += 32u) {
                uint gm = m0 + (wm * WTM + i) * 16u + e / 16u;
                uint gn = n0 + (wn * WTN + j) * 16u + e % 16u;
                if (gm < M && gn < N) z[pc.zo + gm * pc.zs0 + gn] = ZT(act(Cs[sg * 256u + e]));
            }
            subgroupBarrier(); // the scratch is rewritten by the next tile
        }
    }
}
