#version 450
// f16 matmul on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2), and with -DX_BF16 the bf16 one
// (GL_EXT_bfloat16, VK_KHR_shader_bfloat16): one workgroup per BM x BN tile in grouped order; the whole workgroup
// loads BM x BK slices of A and BK x BN slices of B through tensor layouts and accumulates in f32. The driver
// stages and pipelines the loads, which the subgroup-scope kernel (matmul_coop.comp) has to do by hand with one
// barrier per slice. A transposed operand is read through a tensor view with its two dimensions swapped. The
// epilogue runs on the accumulator element by element.
// Two loops. Tiles inside the matrix along M and N, with K a whole number of slices and both operands in whole
// 16-byte words (pc.pad bits 0 and 1), read through tensor layouts without clamping, with the strides and offsets
// visibly multiples of 8 elements, STAGES slices per unrolled iteration: no per-element bounds checks, and the
// driver sees whole aligned rows and several independent slices to overlap. The others (edges) read through
// clamped layouts, where loads past the matrix read zeros; stores past it are dropped.
// Needs a glslang of 15 or later (backend_vulkan/tools/slang_glslang.c), SPIR-V 1.6.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#if defined(X_BF16)
#extension GL_EXT_bfloat16 : require
#define ET bfloat16_t // the matrices' element type; common.glsl's bindings hold bf16 as uint16_t
#else
#define X_F16
#define ET float16_t
#endif
#include "common.glsl"

// The same specialization constants as matmul_coop.comp up to FOLD, so one host path sets both (WM is unused
// here; STAGES is this kernel's own meaning of the config's stages).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 2;
layout(constant_id = 5) const uint GROUP_M = 8;
layout(constant_id = 6) const uint TRANS_A = 0;
layout(constant_id = 7) const uint TRANS_B = 0;
layout(constant_id = 8) const uint EPI = 0;
// Slices per iteration of the interior loop, unrolled: independent loads the driver's compiler can overlap.
layout(constant_id = 9) const uint STAGES = 1;
// Long K with an f32 output: every FOLD slices the accumulator is added into a second one and restarted
// (matmul_coop.comp says why). 0: never.
layout(constant_id = 10) const uint FOLD = 0;

// The operands seen in the matrices' element type, for the tensor loads and stores (common.glsl declares bf16
// bindings as uint16_t).
#if defined(X_BF16)
layout(std430, set = 0, binding = 0) readonly buffer BufXE { bfloat16_t xe[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufYE { bfloat16_t ye[]; };
#define XE xe
#define YE ye
#else
#define XE x
#define YE y
#endif
#if defined(Z_BF16)
layout(std430, set = 0, binding = 2) writeonly buffer BufZE { bfloat16_t ze[]; };
#define ZE ze
#define ZET bfloat16_t
#elif defined(Z_F16)
#define ZE z
#define ZET float16_t
#else
#define ZE z
#define ZET float
#endif

#define CLAMPED tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define PLAIN tensorLayoutNV<2>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define AMAT coopmat<ET, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define BMAT coopmat<ET, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>

float act(const in uint r, const in uint c, const in float v) {
    float o = v;
    if (EPI == 1u) o = v <= 0.0 ? 0.0 : v; // a NaN stays NaN (max(NaN, 0) is undefined)
    if (EPI == 2u) o = v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) o = trr_gelu(v);
#if defined(Z_BF16)
    // Rounded to nearest even in f32 first (trr_f2bf), so the conversion to bfloat16 is exact whatever rounding
    // the driver's takes.
    o = uintBitsToFloat(trr_f2bf(o) << 16);
#endif
    return o;
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

    // The view that swaps a transposed operand's two dimensions back to [M, K] or [K, N].
    tensorViewNV<2, false, 1, 0> swap = createTensorViewNV(2, false, 1, 0);

    ACC acc = ACC(0.0);
    ACC total = ACC(0.0);
    AMAT ma;
    BMAT mb;
    // Slice k0 of A and B from layouts la and lb (either kind) at element offsets xo and yo, multiplied in.
#define STEP(la, lb, xo, yo, k0)                                                                               \
    if (TRANS_A == 0u)                                                                                         \
        coopMatLoadTensorNV(ma, XE, xo, sliceTensorLayoutNV(la, m0, BM, k0, BK));                              \
    else                                                                                                       \
        coopMatLoadTensorNV(ma, XE, xo, sliceTensorLayoutNV(la, k0, BK, m0, BM), swap);                        \
    if (TRANS_B == 0u)                                                                                         \
        coopMatLoadTensorNV(mb, YE, yo, sliceTensorLayoutNV(lb, k0, BK, n0, BN));                              \
    else                                                                                                       \
        coopMatLoadTensorNV(mb, YE, yo, sliceTensorLayoutNV(lb, n0, BN, k0, BK), swap);                        \
    acc = coopMatMulAdd(ma, mb, acc);
#define FOLD_AFTER(done)                                                                                       \
    if (FOLD != 0u && (done) % FOLD == 0u) {                                                                   \
        total = total + acc;                                                                                   \
        acc = ACC(0.0);                                                                                        \
    }

    // Uniform over the workgroup.
    const bool inner = (pc.pad & 3u) == 3u && m0 + BM <= M && n0 + BN <= N && K % BK == 0u;
    if (inner) {
        // Whole words: offsets and strides are multiples of 8 (the host's pc.pad bits), masked so that the
        // compiler sees it too.
        const uint xs = pc.xs0 & ~7u, ys = pc.ys0 & ~7u;
        const uint xo = TRR_XO & ~7u, yo = TRR_YO & ~7u;
        PLAIN ta = createTensorLayoutNV(2);
        PLAIN tb = createTensorLayoutNV(2);
        ta = TRANS_A == 0u ? setTensorLayoutDimensionNV(ta, M, K) : setTensorLayoutDimensionNV(ta, K, M);
        tb = TRANS_B == 0u ? setTensorLayoutDimensionNV(tb, K, N) : setTensorLayoutDimensionNV(tb, N, K);
        ta = setTensorLayoutStrideNV(ta, xs, 1);
        tb = setTensorLayoutStrideNV(tb, ys, 1);
        const uint nk = K / BK;
        uint kt = 0u;
        for (; kt + STAGES <= nk; kt += STAGES) {
            [[unroll]] for (uint u = 0u; u < STAGES; u++) {
                STEP(ta, tb, xo, yo, (kt + u) * BK)
                FOLD_AFTER(kt + u + 1u)
            }
        }
        for (; kt < nk; kt++) {
            STEP(ta, tb, xo, yo, kt * BK)
            FOLD_AFTER(kt + 1u)
        }
    } else {
        // Each operand as stored: A is [M, K] (or [K, M] when transposed), B is [K, N] (or [N, K]), rows pc.*s0
        // elements apart.
        CLAMPED ta = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        CLAMPED tb = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
        ta = TRANS_A == 0u ? setTensorLayoutDimensionNV(ta, M, K) : setTensorLayoutDimensionNV(ta, K, M);
        tb = TRANS_B == 0u ? setTensorLayoutDimensionNV(tb, K, N) : setTensorLayoutDimensionNV(tb, N, K);
        ta = setTensorLayoutStrideNV(ta, pc.xs0, 1);
        tb = setTensorLayoutStrideNV(tb, pc.ys0, 1);
        uint done = 0u;
        for (uint k0 = 0; k0 < K; k0 += BK) {
            STEP(ta, tb, TRR_XO, TRR_YO, k0)
            done++;
            FOLD_AFTER(done)
        }
    }
    if (FOLD != 0u) acc = total + acc;

    CLAMPED tz = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tz = setTensorLayoutDimensionNV(tz, M, N);
    tz = setTensorLayoutStrideNV(tz, pc.zs0, 1);
#if defined(Z_BF16)
    const bool per_element = true; // act() rounds to bfloat16
#else
    const bool per_element = EPI != 0u;
#endif
    if (per_element) coopMatPerElementNV(acc, acc, act);
#if defined(Z_F16) || defined(Z_BF16)
    coopmat<ZET, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> h =
        coopmat<ZET, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
    coopMatStoreTensorNV(h, ZE, TRR_ZO, sliceTensorLayoutNV(tz, m0, BM, n0, BN));
#else
    coopMatStoreTensorNV(acc, ZE, TRR_ZO, sliceTensorLayoutNV(tz, m0, BM, n0, BN));
#endif
}
