#version 450
// C = act(A·B), SIMT: one workgroup per BM x BN output tile in grouped order (core/grouped.h), BK-deep slices
// of A and B staged in shared memory as f32, and a TM x TN register micro-tile per invocation. The micro-tile's
// rows and columns are spread one thread-grid apart (row ty + i·BM/TM), so shared reads are broadcasts or
// consecutive and the final stores are coalesced. A and B are f32 or f16 (-DX_F16), C f32 or f16 (-DZ_F16);
// accumulation is f32. Transposes and the epilogue are specialization constants, so each variant is
// compiled for its own layout.
// Every loop inside the K loop has a trip count fixed by the specialization and is unrolled, so an invocation
// runs about K / BK loop iterations in all: lavapipe ends any invocation's loops after 65535 iterations, and the
// host refuses a K too deep for that (check_config) rather than return what a cut-short loop leaves.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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

// One padding column keeps the transposing stores from hitting one bank.
const uint A_LD = BM + 1u;
const uint B_LD = BN + 1u;
shared float As[BK * A_LD]; // [k][m]
shared float Bs[BK * B_LD]; // [k][n]

float act(float v) {
    if (EPI == 1u) return max(v, 0.0);
    if (EPI == 2u) return v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) return trr_gelu(v);
    return v;
}

void main() {
    const uint WG = gl_WorkGroupSize.x;
    const uint TXC = BN / TN; // invocations along n
    const uint TYC = BM / TM; // invocations along m
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
    uint tx = t % TXC, ty = t / TXC;

    float acc[TM * TN];
    for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;
    float a[TM];
    float b[TN];

    const uint LOADS_A = (BM * BK + WG - 1u) / WG;
    const uint LOADS_B = (BN * BK + WG - 1u) / WG;
    for (uint k0 = 0; k0 < K; k0 += BK) {
        // Consecutive invocations read consecutive addresses of whichever dimension is contiguous.
        [[unroll]] for (uint r = 0; r < LOADS_A; r++) {
            uint i = t + r * WG;
            if (i < BM * BK) {
                uint mm, kk;
                if (TRANS_A == 0u) { mm = i / BK; kk = i % BK; } else { kk = i / BM; mm = i % BM; }
                uint gm = m0 + mm, gk = k0 + kk;
                float v = 0.0;
                if (gm < M && gk < K)
                    v = XF(x[TRR_XO + (TRANS_A == 0u ? gm * pc.xs0 + gk : gk * pc.xs0 + gm)]);
                As[kk * A_LD + mm] = v;
            }
        }
        [[unroll]] for (uint r = 0; r < LOADS_B; r++) {
            uint i = t + r * WG;
            if (i < BN * BK) {
                uint nn, kk;
                if (TRANS_B == 0u) { kk = i / BN; nn = i % BN; } else { nn = i / BK; kk = i % BK; }
                uint gn = n0 + nn, gk = k0 + kk;
                float v = 0.0;
                if (gn < N && gk < K)
                    v = XF(y[TRR_YO + (TRANS_B == 0u ? gk * pc.ys0 + gn : gn * pc.ys0 + gk)]);
                Bs[kk * B_LD + nn] = v;
            }
        }
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            [[unroll]] for (uint i = 0; i < TM; i++) a[i] = As[kk * A_LD + ty + i * TYC];
            [[unroll]] for (uint j = 0; j < TN; j++) b[j] = Bs[kk * B_LD + tx + j * TXC];
            [[unroll]] for (uint i = 0; i < TM; i++)
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
        }
        barrier();
    }

    for (uint i = 0; i < TM; i++) {
        uint gm = m0 + ty + i * TYC;
        if (gm >= M) continue;
        for (uint j = 0; j < TN; j++) {
            uint gn = n0 + tx + j * TXC;
            if (gn < N) z[TRR_ZO + gm * pc.zs0 + gn] = ZC(act(acc[i * TN + j]));
        }
    }
}
