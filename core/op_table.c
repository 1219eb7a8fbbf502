/* The op table (see op_table.h). */
#include "op_table.h"

#include "user_op.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* one dtype for every input: S(in, out); the second input apart (matmul's 8-bit float pairs): MIX(in, in2, out) */
#define S(i, o) {i, o, 0, i}
#define MIX(i, i2, o) {i, o, 1, i2}
static const trr_op_signature sig_any[] = {S(TRR_F32, TRR_F32),       S(TRR_F16, TRR_F16),
                                           S(TRR_BF16, TRR_BF16),     S(TRR_U8, TRR_U8),
                                           S(TRR_F8E4M3, TRR_F8E4M3), S(TRR_F8E5M2, TRR_F8E5M2)};
static const trr_op_signature sig_float[] = {S(TRR_F32, TRR_F32), S(TRR_F16, TRR_F16), S(TRR_BF16, TRR_BF16)};
static const trr_op_signature sig_rgb[] = {S(TRR_U8, TRR_U8), S(TRR_U8, TRR_F32)};
static const trr_op_signature sig_row_sum[] = {S(TRR_F32, TRR_F32), S(TRR_F16, TRR_F32), S(TRR_BF16, TRR_F32)};
/* 8-bit float products take the pairs cuBLASLt takes (e4m3 on at least one side) into f32, f16 or bf16 */
static const trr_op_signature sig_matmul[] = {
    S(TRR_F32, TRR_F32),  S(TRR_F16, TRR_F16),  S(TRR_F16, TRR_F32),  S(TRR_BF16, TRR_BF16), S(TRR_BF16, TRR_F32),
    /* bf16 first: the output an 8-bit float product gives unless asked (trr_op_output_shape, trireme run) */
    S(TRR_F8E4M3, TRR_BF16), S(TRR_F8E4M3, TRR_F16), S(TRR_F8E4M3, TRR_F32),
    MIX(TRR_F8E5M2, TRR_F8E4M3, TRR_BF16), MIX(TRR_F8E5M2, TRR_F8E4M3, TRR_F16), MIX(TRR_F8E5M2, TRR_F8E4M3, TRR_F32),
    MIX(TRR_F8E4M3, TRR_F8E5M2, TRR_BF16), MIX(TRR_F8E4M3, TRR_F8E5M2, TRR_F16), MIX(TRR_F8E4M3, TRR_F8E5M2, TRR_F32)};

/* cast: every ordered pair of float dtypes, the same dtype included */
#define CAST_FROM(d) S(d, TRR_F32), S(d, TRR_F16), S(d, TRR_BF16), S(d, TRR_F8E4M3), S(d, TRR_F8E5M2)
static const trr_op_signature sig_cast[] = {CAST_FROM(TRR_F32), CAST_FROM(TRR_F16), CAST_FROM(TRR_BF16),
                                            CAST_FROM(TRR_F8E4M3), CAST_FROM(TRR_F8E5M2)};

static const trr_param_info matmul_params[] = {
    [TRR_MATMUL_PARAM_EPILOGUE] = {"epilogue", TRR_PARAM_ENUM, 0, "none,relu,leaky_relu,gelu",
                                   "activation applied to the f32 accumulator before the store"},
    [TRR_MATMUL_PARAM_ALPHA] = {"alpha", TRR_PARAM_F32, TRR_LEAKY_RELU_DEFAULT_ALPHA, NULL, "leaky_relu's slope"},
    [TRR_MATMUL_PARAM_ALLOW_TF32] = {"allow_tf32", TRR_PARAM_BOOL, 0, NULL,
                                     "f32 inputs may run on TF32 tensor cores"},
    [TRR_MATMUL_PARAM_SCALE_A] = {"scale_a", TRR_PARAM_F32, 1.0, NULL,
                                  "per-tensor scale of an 8-bit float A: the accumulator is multiplied by scale_a * "
                                  "scale_b before the epilogue (other dtypes take 1)"},
    [TRR_MATMUL_PARAM_SCALE_B] = {"scale_b", TRR_PARAM_F32, 1.0, NULL, "per-tensor scale of an 8-bit float B"},
};

static const trr_param_info rms_norm_params[] = {
    [TRR_NORM_PARAM_EPS] = {"eps", TRR_PARAM_F32, 1e-6, NULL, "added to the mean square before the square root", 1},
};
static const trr_param_info layer_norm_params[] = {
    [TRR_NORM_PARAM_EPS] = {"eps", TRR_PARAM_F32, 1e-5, NULL, "added to the variance before the square root", 1},
};

static const trr_param_info attention_params[] = {
    [TRR_ATTN_PARAM_SCALE] = {"scale", TRR_PARAM_F32, 0.0, NULL, "multiplies q.k before the softmax; 0 = 1/sqrt(D)"},
    [TRR_ATTN_PARAM_CAUSAL] = {"causal", TRR_PARAM_BOOL, 0, NULL,
                               "query i sees keys j <= i + (Skv - Sq), bottom-right aligned"},
};

/* The benchmarks of docs/ops.md, Benchmarks: each one's name, chart title, dtypes and sizes (quick, full). */
#define P2(e) ((int64_t)1 << (e))
#define ROW_NORM_SIZES {.list = {{1024}, {4096}, {8192}, {16384}}}
#define MATMUL_QUICK {.list = {{1024}, {4096}}} /* 1024 first: on a slow device its time predicts 4096's */
#define MATMUL_FULL {.from = 256, .to = 4096, .step = 128, .list = {{6144}, {8192}}}
#define BMM_SIZES {.list = {{512, 128, 128, 128}, {64, 1024, 1024, 128}}} /* many small products; fewer wide ones */
static const trr_op_bench add_benches[] = {
    {"add_f32", "add f32 (GB/s = 12n/t)", TRR_F32, TRR_F32, TRR_EPI_NONE, TRR_SIZING_VECTOR, 0,
     {.list = {{P2(20)}, {P2(24)}, {P2(27)}}}, {.from = P2(12), .to = P2(27), .factor = 2}},
};
static const trr_op_bench gelu_benches[] = {
    {"gelu_f32", "gelu f32 (GB/s = 8n/t)", TRR_F32, TRR_F32, TRR_EPI_NONE, TRR_SIZING_VECTOR, 0,
     {.list = {{P2(24)}}}, {.from = P2(12), .to = P2(28), .factor = 2}},
};
static const trr_op_bench silu_benches[] = {
    {"silu_f32", "silu f32 (GB/s = 8n/t)", TRR_F32, TRR_F32, TRR_EPI_NONE, TRR_SIZING_VECTOR, 0,
     {.list = {{P2(24)}}}, {.from = P2(12), .to = P2(28), .factor = 2}},
};
static const trr_op_bench rgb_benches[] = {
    {"rgb_to_grey", "rgb_to_grey u8 -> u8 (GB/s = 4HW/t)", TRR_U8, TRR_U8, TRR_EPI_NONE, TRR_SIZING_IMAGE, 0,
     {.list = {{1066, 1600}, {4320, 7680}}}, {.list = {{1066, 1600}, {4320, 7680}}}},
};
static const trr_op_bench softmax_benches[] = {
    {"softmax_f32", "softmax f32, M = 4096 (GB/s = 8MN/t)", TRR_F32, TRR_F32, TRR_EPI_NONE, TRR_SIZING_ROWS, 0,
     {.list = {{256}, {1024}, {4096}, {12288}}}, {.from = 256, .to = 12672, .step = 128}},
};
static const trr_op_bench row_sum_benches[] = {
    {"row_sum_f32", "row_sum f32, M = 4096 (GB/s = 4MN/t)", TRR_F32, TRR_F32, TRR_EPI_NONE, TRR_SIZING_ROWS, 1,
     {.list = {{8192}}}, {.from = 256, .to = 65536, .factor = 2}},
};
static const trr_op_bench matmul_benches[] = {
    {"matmul_f16", "matmul f16 -> f16 (TFLOPS = 2MNK/t)", TRR_F16, TRR_F16, TRR_EPI_NONE, TRR_SIZING_CUBE, 0,
     MATMUL_QUICK, MATMUL_FULL},
    /* the epilogue costs nothing at large sizes; a few points show that */
    {"matmul_f16_relu", "matmul f16 -> f16 + ReLU (TFLOPS = 2MNK/t)", TRR_F16, TRR_F16, TRR_EPI_RELU,
     TRR_SIZING_CUBE, 0, {.list = {{4096}}}, {.from = 1024, .to = 8192, .factor = 2}},
    {"matmul_f32", "matmul f32, no TF32 (TFLOPS = 2MNK/t)", TRR_F32, TRR_F32, TRR_EPI_NONE, TRR_SIZING_CUBE, 0,
     MATMUL_QUICK, {.from = 256, .to = 4096, .step = 128, .list = {{6144}, {8192}, {8192, 4096, 6144}}}},
    {"bmm_f16", "batched matmul f16 -> f16 (TFLOPS = 2BMNK/t)", TRR_F16, TRR_F16, TRR_EPI_NONE, TRR_SIZING_BATCH, 0,
     BMM_SIZES, BMM_SIZES},
    {"matmul_bf16", "matmul bf16 -> bf16 (TFLOPS = 2MNK/t)", TRR_BF16, TRR_BF16, TRR_EPI_NONE, TRR_SIZING_CUBE, 0,
     MATMUL_QUICK, MATMUL_FULL},
    {"bmm_bf16", "batched matmul bf16 -> bf16 (TFLOPS = 2BMNK/t)", TRR_BF16, TRR_BF16, TRR_EPI_NONE,
     TRR_SIZING_BATCH, 0, BMM_SIZES, BMM_SIZES},
    /* B stored [N,K] (the bench's cases of 8-bit floats), the sizes cuBLASLt's FP8 figures are quoted at */
    {"matmul_fp8", "matmul f8e4m3 x f8e4m3 -> bf16, B stored [N,K] (TFLOPS = 2MNK/t)", TRR_F8E4M3, TRR_BF16,
     TRR_EPI_NONE, TRR_SIZING_CUBE, 0, {.list = {{2048}, {4096}, {8192}}},
     {.from = 1024, .to = 8192, .factor = 2, .list = {{6144}}}},
};
/* the row norms at the hidden sizes of common models: GB/s = bytes of x, w (, b) and y over time */
static const trr_op_bench rms_norm_benches[] = {
    {"rms_norm_f32", "rms_norm f32, M = 4096 (GB/s = (8MN + 8N)/t)", TRR_F32, TRR_F32, TRR_EPI_NONE,
     TRR_SIZING_ROWS, 0, ROW_NORM_SIZES, ROW_NORM_SIZES},
    {"rms_norm_f16", "rms_norm f16, M = 4096 (GB/s = (4MN + 4N)/t)", TRR_F16, TRR_F16, TRR_EPI_NONE,
     TRR_SIZING_ROWS, 0, ROW_NORM_SIZES, ROW_NORM_SIZES},
    {"rms_norm_bf16", "rms_norm bf16, M = 4096 (GB/s = (4MN + 4N)/t)", TRR_BF16, TRR_BF16, TRR_EPI_NONE,
     TRR_SIZING_ROWS, 0, ROW_NORM_SIZES, ROW_NORM_SIZES},
};
static const trr_op_bench layer_norm_benches[] = {
    {"layer_norm_f32", "layer_norm f32, M = 4096 (GB/s = (8MN + 12N)/t)", TRR_F32, TRR_F32, TRR_EPI_NONE,
     TRR_SIZING_ROWS, 0, ROW_NORM_SIZES, ROW_NORM_SIZES},
    {"layer_norm_f16", "layer_norm f16, M = 4096 (GB/s = (4MN + 6N)/t)", TRR_F16, TRR_F16, TRR_EPI_NONE,
     TRR_SIZING_ROWS, 0, ROW_NORM_SIZES, ROW_NORM_SIZES},
    {"layer_norm_bf16", "layer_norm bf16, M = 4096 (GB/s = (4MN + 6N)/t)", TRR_BF16, TRR_BF16, TRR_EPI_NONE,
     TRR_SIZING_ROWS, 0, ROW_NORM_SIZES, ROW_NORM_SIZES},
};
/* attention: prefill at B·S = 16384 and Hq·D = 2048 (D = 64: 32 heads, D = 128: 16), causal off and on; decode
 * (Sq = 1, B = 32, Hq = 32, Hkv = 8, D = 128) at two lengths of keys */
#define ATTN_PREFILL(s, causal) {16384 / (s), 32, s, 64, causal}, {16384 / (s), 16, s, 128, causal}
#define ATTN_QUICK {.list = {ATTN_PREFILL(1024, 0), ATTN_PREFILL(1024, 1), ATTN_PREFILL(4096, 0), ATTN_PREFILL(4096, 1)}}
#define ATTN_FULL                                                                                                \
    {.list = {ATTN_PREFILL(1024, 0), ATTN_PREFILL(1024, 1), ATTN_PREFILL(4096, 0), ATTN_PREFILL(4096, 1),           \
              ATTN_PREFILL(16384, 0), ATTN_PREFILL(16384, 1)}}
#define ATTN_DECODE {.list = {{4096}, {32768}}}
static const trr_op_bench attention_benches[] = {
    {"attention_f16", "attention f16, B·S = 16384, Hq·D = 2048 (TFLOPS = 4BHS²D/t, causal /2)", TRR_F16, TRR_F16,
     TRR_EPI_NONE, TRR_SIZING_ATTENTION, 0, ATTN_QUICK, ATTN_FULL},
    {"attention_bf16", "attention bf16, B·S = 16384, Hq·D = 2048 (TFLOPS = 4BHS²D/t, causal /2)", TRR_BF16, TRR_BF16,
     TRR_EPI_NONE, TRR_SIZING_ATTENTION, 0, ATTN_QUICK, ATTN_FULL},
    {"attention_decode_f16", "attention decode f16, B = 32, Hq = 32, Hkv = 8, D = 128 (GB/s = 2·B·Hkv·Skv·D·2/t)",
     TRR_F16, TRR_F16, TRR_EPI_NONE, TRR_SIZING_DECODE, 1, ATTN_DECODE, ATTN_DECODE},
    {"attention_decode_bf16", "attention decode bf16, B = 32, Hq = 32, Hkv = 8, D = 128 (GB/s = 2·B·Hkv·Skv·D·2/t)",
     TRR_BF16, TRR_BF16, TRR_EPI_NONE, TRR_SIZING_DECODE, 1, ATTN_DECODE, ATTN_DECODE},
};
#define BENCHES(a) .benches = a, .n_benches = (int)(sizeof a / sizeof a[0])

#define SIGNATURES(a) .signatures = a, .n_signatures = (int)(sizeof a / sizeof a[0])
#define STREAM_FIELDS (TRR_CFG_BLOCK_N | TRR_CFG_THREADS | TRR_CFG_VECTOR_WIDTH)

#define STREAM_DEFAULTS {.block_n = 1024, .threads = 256, .vector_width = 4}
#define MATMUL_FIELDS                                                                                          \
    (TRR_CFG_BLOCK_M | TRR_CFG_BLOCK_N | TRR_CFG_BLOCK_K | TRR_CFG_GROUP_M | TRR_CFG_THREADS | TRR_CFG_STAGES |  \
     TRR_CFG_VECTOR_WIDTH | TRR_CFG_SPLIT_K | TRR_CFG_VARIANT)

/* operand rules */
#define ROWS_COLS(n) {n, 1, TRR_DIM_ROWS, TRR_DIM_COLS, 0, 0}
#define NONE {NULL, 0, 0, 0, 0, 0}
#define UNARY {ROWS_COLS("x"), NONE, ROWS_COLS("y"), NONE}
#define COLS_VECTOR(n) {n, 1, TRR_DIM_ONE, TRR_DIM_COLS, 1, 0}
#define PARAMS(a) .params = a, .n_params = (int)(sizeof a / sizeof a[0])

/* The facts of the ops a public definition cannot declare (below: the others), each written out. Defaults are
 * conservative values every backend can run (the portable SIMT kernels among them); backends' choose_config
 * heuristics refine them. Ops with kernel families (matmul, softmax, row_sum) carry TRR_CFG_VARIANT. The rows of
 * the ops declared by a definition are made into this table when it is first read. */
static trr_op_desc op_table[TRR_OP_COUNT] = {
    [TRR_OP_COPY] = {.op = TRR_OP_COPY, .name = "copy", .n_inputs = 1, .operands = "x -> z", SIGNATURES(sig_any),
                     .kernel = "elementwise", .bytewise = 1,
                     .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                     .shape = TRR_SHAPE_ELEMENTWISE, .alias_ok = 1,
                     .operand = {ROWS_COLS("x"), NONE, ROWS_COLS("z"), NONE}, .flops_per_point = 1, .exact = 2},
    [TRR_OP_RGB_TO_GREY] = {.op = TRR_OP_RGB_TO_GREY, .name = "rgb_to_grey", .n_inputs = 1,
                            .operands = "img[3,H,W] -> grey[H,W]", SIGNATURES(sig_rgb), .kernel = "rgb_to_grey",
                            BENCHES(rgb_benches),
                            .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                            .shape = TRR_SHAPE_PLANES,
                            .operand = {{"img", 3, TRR_DIM_ROWS, TRR_DIM_COLS, 0, 0}, NONE, ROWS_COLS("grey"), NONE},
                            .flops_per_point = 1},
    [TRR_OP_SOFTMAX] = {.op = TRR_OP_SOFTMAX, .name = "softmax", .n_inputs = 1, .operands = "x[M,N] -> y[M,N]",
                        SIGNATURES(sig_float), .kernel = "softmax", BENCHES(softmax_benches),
                        .config_fields = STREAM_FIELDS | TRR_CFG_VARIANT,
                        .default_config = {.block_n = 1024, .threads = 256, .vector_width = 4,
                                           .variant = TRR_VARIANT_SIMT},
                        .shape = TRR_SHAPE_ROWS, .operand = UNARY, .flops_per_point = 1},
    [TRR_OP_ROW_SUM] = {.op = TRR_OP_ROW_SUM, .name = "row_sum", .n_inputs = 1, .operands = "x[M,N] -> y[M]",
                        SIGNATURES(sig_row_sum), .kernel = "row_sum", BENCHES(row_sum_benches),
                        .bench_work = TRR_WORK_INPUT_BYTES, .config_fields = STREAM_FIELDS | TRR_CFG_VARIANT,
                        .default_config = STREAM_DEFAULTS,
                        .shape = TRR_SHAPE_ROW_REDUCE,
                        .operand = {ROWS_COLS("x"), NONE, {"y", 1, TRR_DIM_ONE, TRR_DIM_ROWS, 1, 0}, NONE},
                        .flops_per_point = 1},
    [TRR_OP_MATMUL] = {.op = TRR_OP_MATMUL, .name = "matmul", .n_inputs = 2, .operands = "A[M,K], B[K,N] -> C[M,N]",
                       SIGNATURES(sig_matmul), .kernel = "matmul", .config_fields = MATMUL_FIELDS,
                       BENCHES(matmul_benches), .bench_work = TRR_WORK_FLOPS,
                       PARAMS(matmul_params),
                       .default_config = {.block_m = 64, .block_n = 64, .block_k = 16, .group_m = 8, .threads = 256,
                                          .stages = 2, .vector_width = 4, .split_k = 1, .variant = TRR_VARIANT_SIMT},
                       .shape = TRR_SHAPE_MATMUL,
                       .operand = {{"A", 1, TRR_DIM_ROWS, TRR_DIM_K, 0, 1}, {"B", 1, TRR_DIM_K, TRR_DIM_COLS, 0, 2},
                                   ROWS_COLS("C"), NONE},
                       .flops_per_point = 2},
    /* Rank-4 operands normalised by core/attention.c; the operand rules name them (rows = S, cols = D) and mark
     * lse optional. Each backend runs it by its shape rule from kernels/<api>/attention.<ext>. block_m: query rows
     * per block, block_n: keys per step, split_k: splits of the keys whose partial results a second pass combines
     * (decode). flops_per_point: 4 per (query, key, d) point, two multiply-adds (q.k and p.v). */
    [TRR_OP_ATTENTION] = {.op = TRR_OP_ATTENTION, .name = "attention", .n_inputs = 3,
                          .operands = "q[B,Hq,Sq,D], k[B,Hkv,Skv,D], v[B,Hkv,Skv,D] -> o[B,Hq,Sq,D], lse[B,Hq,Sq] f32 "
                                      "(optional)",
                          SIGNATURES(sig_float), PARAMS(attention_params), .kernel = "attention",
                          .transcendental = 1, BENCHES(attention_benches), .bench_work = TRR_WORK_ATTENTION,
                          .config_fields = TRR_CFG_BLOCK_M | TRR_CFG_BLOCK_N | TRR_CFG_THREADS | TRR_CFG_STAGES |
                                           TRR_CFG_SPLIT_K | TRR_CFG_VARIANT,
                          .default_config = {.block_m = 64, .block_n = 64, .threads = 128, .stages = 1, .split_k = 1,
                                             .variant = TRR_VARIANT_SIMT},
                          .shape = TRR_SHAPE_ATTENTION,
                          .operand = {ROWS_COLS("q"), ROWS_COLS("k"), ROWS_COLS("o"), ROWS_COLS("v"),
                                      {"lse", 1, TRR_DIM_ONE, TRR_DIM_ROWS, 1, 0, 1}},
                          .flops_per_point = 4},
    /* its own kernel file on every API (cast.cu, cast.cl, cast.comp; the CPU's loop of stem cast), run by each
     * backend's element-wise rule: its input and output differ in dtype (converts), which the other element-wise
     * kernels never do */
    [TRR_OP_CAST] = {.op = TRR_OP_CAST, .name = "cast", .n_inputs = 1, .operands = "x -> y", SIGNATURES(sig_cast),
                     .kernel = "cast", .converts = 1, .config_fields = STREAM_FIELDS,
                     .default_config = STREAM_DEFAULTS,
                     .shape = TRR_SHAPE_ELEMENTWISE, .operand = UNARY, .flops_per_point = 1, .exact = 2},
};

/* ---- the ops declared by the public definition ----
 * add, gelu, silu and the row norms are declared as trr_op_def values, the structure a user gives trr_op_define,
 * and made into their rows by the same conversion and checks (trr_op_def_convert, core/op_def.c): name, operands
 * and their dims, dtypes, named parameters, the float64 reference (the harness's), the error bound, FLOPs and the
 * transcendental hint. Beside each is what a definition does not say of a built-in (trr_op_builtin): its id, the
 * stem of its kernels, which the backends' own tuned paths run (no user path, no launch rule), its tile schema,
 * its benchmarks and whether its output may alias an input. copy (any dtype, run as a byte move) and cast (pairs
 * of dtypes, a value its output's dtype decides) say more than a definition can and stay written out above. */

static double add_reference(const double *in, const double *params, void *user) {
    return (void)params, (void)user, in[0] + in[1];
}

/* Evaluated as x / (1 + exp(-2u)), algebraically identical to 0.5 x (1 + tanh u) but free of the cancellation in
 * 1 + tanh(u) for negative x, so the reference stays accurate in the tail. */
double trr_gelu_reference(double x) {
    const double u = 0.7978845608 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

static double gelu_reference(const double *in, const double *params, void *user) {
    return (void)params, (void)user, trr_gelu_reference(in[0]);
}

static double silu_reference(const double *in, const double *params, void *user) {
    return (void)params, (void)user, in[0] / (1.0 + exp(-in[0]));
}

/* The row norms over one row of x with the weight w (and layer_norm's bias b), eps the first parameter. Where the
 * definition leaves a choice:
 *  - layer_norm subtracts a shift (the row's first element) from every element before summing, exactly as the
 *    kernels do: x - x0 is exact in double for f32 / f16 / bf16 inputs, so a constant row has x - mean exactly
 *    0 and gives exactly b (and N = 1 gives b), while the mean and variance are those of the row.
 *  - eps = 0 with a constant row (layer_norm) or an all-zero row (rms_norm) is 0/0: NaN across that row (w and
 *    b do not change it). These are the reference's values; docs/ops.md, Special values. */
static void rms_norm_reference(const double *const *in, double *const *out, int64_t n, const double *params,
                               void *user) {
    (void)user;
    const double *x = in[0], *w = in[1];
    double *y = out[0], ss = 0.0;
    for (int64_t j = 0; j < n; j++) ss += x[j] * x[j];
    const double rstd = 1.0 / sqrt(ss / (double)n + params[TRR_NORM_PARAM_EPS]);
    for (int64_t j = 0; j < n; j++) y[j] = x[j] * rstd * w[j];
}

static void layer_norm_reference(const double *const *in, double *const *out, int64_t n, const double *params,
                                 void *user) {
    (void)user;
    const double *x = in[0], *w = in[1], *b = in[2];
    double *y = out[0], s = 0.0, v = 0.0;
    for (int64_t j = 0; j < n; j++) {
        y[j] = x[j] - x[0]; /* exact */
        s += y[j];
    }
    const double mean = s / (double)n;
    for (int64_t j = 0; j < n; j++) {
        y[j] -= mean;
        v += y[j] * y[j];
    }
    const double rstd = 1.0 / sqrt(v / (double)n + params[TRR_NORM_PARAM_EPS]);
    /* a zero deviation times an infinite rstd (eps = 0, constant row) is NaN, as 0/0 is */
    for (int64_t j = 0; j < n; j++) y[j] = y[j] * rstd * w[j] + b[j];
}

/* A built-in's declaration: its public definition, a row op's row reference (NULL for the element-wise ops), and
 * what the definition does not say. */
typedef struct builtin_decl {
    trr_op_def def;
    trr_op_row_reference_fn row_reference;
    trr_op_builtin builtin;
} builtin_decl;

#define FLOATS .dtypes = {TRR_F32, TRR_F16, TRR_BF16}, .n_dtypes = 3
#define STREAM_TILES .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS
/* the row norms add the kernel family (OpenCL: simt, or subgroup's shuffle reductions) */
#define NORM_TILES .config_fields = STREAM_FIELDS | TRR_CFG_VARIANT, .default_config = STREAM_DEFAULTS

static const builtin_decl declared[] = {
    {{.name = "add", .operands = "x[M,N], y[M,N] -> z[M,N]", FLOATS, .reference = add_reference,
      .bound = TRR_BOUND_EXACT_F32, .flops_per_point = 1},
     NULL, {.op = TRR_OP_ADD, .kernel = "elementwise", STREAM_TILES, BENCHES(add_benches), .alias_ok = 1}},
    {{.name = "gelu", .operands = "x[M,N] -> y[M,N]", FLOATS, .reference = gelu_reference, .flops_per_point = 1,
      .transcendental = 1},
     NULL, {.op = TRR_OP_GELU, .kernel = "elementwise", STREAM_TILES, BENCHES(gelu_benches), .alias_ok = 1}},
    {{.name = "silu", .operands = "x[M,N] -> y[M,N]", FLOATS, .reference = silu_reference, .flops_per_point = 1,
      .transcendental = 1},
     NULL, {.op = TRR_OP_SILU, .kernel = "elementwise", STREAM_TILES, BENCHES(silu_benches), .alias_ok = 1}},
    {{.name = "rms_norm", .operands = "x[M,N], w[N] -> y[M,N]", FLOATS, PARAMS(rms_norm_params),
      .flops_per_point = 1},
     rms_norm_reference, {.op = TRR_OP_RMS_NORM, .kernel = "norm", NORM_TILES, BENCHES(rms_norm_benches)}},
    {{.name = "layer_norm", .operands = "x[M,N], w[N], b[N] -> y[M,N]", FLOATS, PARAMS(layer_norm_params),
      .flops_per_point = 1},
     layer_norm_reference, {.op = TRR_OP_LAYER_NORM, .kernel = "norm", NORM_TILES, BENCHES(layer_norm_benches)}},
};
#define N_DECLARED (sizeof declared / sizeof declared[0])

static trr_user_op declared_defs[N_DECLARED]; /* the checked copies the rows point into */
static pthread_once_t declared_once = PTHREAD_ONCE_INIT;
static char declared_fault[512];

static void make_declared_rows(void) {
    for (size_t i = 0; i < N_DECLARED; i++) {
        const builtin_decl *b = &declared[i];
        if (trr_op_def_convert(&b->def, b->row_reference, NULL, &b->builtin, &declared_defs[i]) == TRR_OK) {
            op_table[b->builtin.op] = declared_defs[i].desc;
            continue;
        }
        if (!declared_fault[0]) snprintf(declared_fault, sizeof declared_fault, "%s", trr_last_error(NULL));
        op_table[b->builtin.op] = (trr_op_desc){.op = b->builtin.op, .name = b->def.name}; /* no signature: no call */
    }
}

const char *trr_op_table_fault(void) {
    pthread_once(&declared_once, make_declared_rows);
    return declared_fault[0] ? declared_fault : NULL;
}

const trr_config trr_matmul_f16_nvidia_configs[] = {
    /* docs/ops.md, Known-good NVIDIA configs: (BM, BN, BK, GROUP_M, stages, warps) */
    {.block_m = 128, .block_n = 256, .block_k = 64, .group_m = 8, .stages = 3, .threads = 256},
    {.block_m = 64, .block_n = 256, .block_k = 32, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 128, .block_n = 128, .block_k = 32, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 128, .block_n = 64, .block_k = 32, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 64, .block_n = 128, .block_k = 32, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 128, .block_n = 32, .block_k = 32, .group_m = 8, .stages = 4, .threads = 128},
    {.block_m = 64, .block_n = 32, .block_k = 32, .group_m = 8, .stages = 5, .threads = 64},
    {.block_m = 32, .block_n = 64, .block_k = 32, .group_m = 8, .stages = 5, .threads = 64},
};
const int trr_matmul_f16_nvidia_config_count =
    (int)(sizeof trr_matmul_f16_nvidia_configs / sizeof trr_matmul_f16_nvidia_configs[0]);

/* trr_op_desc_replace's definitions, NULL where the table's row stands */
static const trr_op_desc *replaced[TRR_OP_COUNT];

/* user ops' rows (core/user_op.c), published by a release of the count */
static const trr_op_desc *user_rows[TRR_MAX_USER_OPS];
static _Atomic int user_count;

int trr_op_desc_count(void) { return TRR_OP_COUNT + atomic_load_explicit(&user_count, memory_order_acquire); }

int trr_op_desc_add(const trr_op_desc *desc) {
    const int n = atomic_load_explicit(&user_count, memory_order_relaxed);
    if (n == TRR_MAX_USER_OPS) return -1;
    user_rows[n] = desc;
    atomic_store_explicit(&user_count, n + 1, memory_order_release);
    return TRR_OP_COUNT + n;
}

const trr_op_desc *trr_op_desc_get(trr_op op) {
    if ((unsigned)op >= TRR_OP_COUNT) {
        /* in unsigned arithmetic: a negative id (a caller's garbage) must not overflow on its way to NULL */
        const unsigned i = (unsigned)op - (unsigned)TRR_OP_COUNT;
        return i < (unsigned)atomic_load_explicit(&user_count, memory_order_acquire) ? user_rows[i] : NULL;
    }
    pthread_once(&declared_once, make_declared_rows);
    return replaced[op] ? replaced[op] : &op_table[op];
}

void trr_op_desc_replace(trr_op op, const trr_op_desc *desc) {
    if ((unsigned)op < TRR_OP_COUNT) replaced[op] = desc;
}

int trr_op_allows(trr_op op, trr_dtype in, trr_dtype out) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return 0;
    for (int i = 0; i < d->n_signatures; i++)
        if (d->signatures[i].in == in && d->signatures[i].out == out) return 1;
    return 0;
}

int trr_op_allows_inputs(trr_op op, trr_dtype x, trr_dtype y, trr_dtype out) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return 0;
    for (int i = 0; i < d->n_signatures; i++) {
        const trr_op_signature *s = &d->signatures[i];
        if (s->in == x && s->out == out && (d->n_inputs < 2 || trr_signature_input(s, TRR_SLOT_Y) == y)) return 1;
    }
    return 0;
}
