#version 450
// f16 matmul on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2): one workgroup per BM x BN tile
// in grouped order; the whole workgroup loads BM x BK slices of A and BK x BN slices of B through tensor layouts
// and accumulates in f32. The driver stages and pipelines the loads, which the subgroup-scope kernel
// (matmul_coop.comp) has to do by hand with one barrier per slice. Edges are the tensor layouts' job: loads past
// the matrix read zeros (clamp mode constant) and stores past it are dropped. A transposed operand is read
// through a tensor view with its two dimensions swapped. The epilogue runs on the accumulator element by element.
// Needs a glslang of 15 or later (backend_vulkan/tools/slang_glslang.c), SPIR-V 1.6.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#define X_F16
#include "common.glsl"

// The same specialization constants as matmul_coop.comp, so one host path sets both (WM is unused here).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 2;
layout(constant_id = 5) const uint GROUP_M = 8;
layout(constant_id = 6) const uint TRANS_A = 0;
layout(constant_id = 7) const uint TRANS_B = 0;
layout(constant_id = 8) const uint EPI = 0;

#define LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

float act(const in uint r, const in uint c, const in float v) {
    if (EPI == 1u) return v <= 0.0 ? 0.0 : v; // a NaN stays NaN (max(NaN, 0) is undefined)
    if (EPI == 2u) return v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) return trr_gelu(v);
    return v;
}

void main() {
    const uint M = pc.rows, N = pc.cols, K = pc.k;
    uint npm = (M + BM - 1u) / BM;
    uint npn = (N + BN - 1u) / BN;
    uint pid = trr_group_id();
    if (pid >= npm * npn) return; // uniform across the workgroup

    uint width = GROUP_M * npn;
    uint first_m = (pid / width) * GROUP_M;
    uint gsize = min(npm - first_m, GROUP_M);
    uint m0 = (first_m + (pid % width) % gsize) * BM;
    uint n0 = ((pid % width) / gsize) * BN;

    // Each operand as stored: A is [M, K] (or [K, M] when transposed), B is [K, N] (or [N, K]), rows pc.*s0
    // elements apart; the view swaps a transposed operand's dimensions back to [M, K] and [K, N].
    LAYOUT ta = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    LAYOUT tb = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    LAYOUT tz = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    ta = TRANS_A == 0u ? setTensorLayoutDimensionNV(ta, M, K) : setTensorLayoutDimensionNV(ta, K, M);
    tb = TRANS_B == 0u ? setTensorLayoutDimensionNV(tb, K, N) : setTensorLayoutDimensionNV(tb, N, K);
    tz = setTensorLayoutDimensionNV(tz, M, N);
    ta = setTensorLayoutStrideNV(ta, pc.xs0, 1);
    tb = setTensorLayoutStrideNV(tb, pc.ys0, 1);
    tz = setTensorLayoutStrideNV(tz, pc.zs0, 1);
    tensorViewNV<2, false, 1, 0> swap = createTensorViewNV(2, false, 1, 0);

    ACC acc = ACC(0.0);
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
    for (uint k0 = 0; k0 < K; k0 += BK) {
        if (TRANS_A == 0u)
            coopMatLoadTensorNV(ma, x, TRR_XO, sliceTensorLayoutNV(ta, m0, BM, k0, BK));
        else
            coopMatLoadTensorNV(ma, x, TRR_XO, sliceTensorLayoutNV(ta, k0, BK, m0, BM), swap);
        if (TRANS_B == 0u)
            coopMatLoadTensorNV(mb, y, TRR_YO, sliceTensorLayoutNV(tb, k0, BK, n0, BN));
        else
            coopMatLoadTensorNV(mb, y, TRR_YO, sliceTensorLayoutNV(tb, n0, BN, k0, BK), swap);
        acc = coopMatMulAdd(ma, mb, acc);
    }
    if (EPI != 0u) coopMatPerElementNV(acc, acc, act);
#if defined(Z_F16)
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> h = coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
    coopMatStoreTensorNV(h, z, TRR_ZO, sliceTensorLayoutNV(tz, m0, BM, n0, BN));
#else
    coopMatStoreTensorNV(acc, z, TRR_ZO, sliceTensorLayoutNV(tz, m0, BM, n0, BN));
#endif
}
