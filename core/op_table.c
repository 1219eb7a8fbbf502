/* The op table (see op_table.h). */
#include "op_table.h"

#include <stddef.h>

static const trr_op_signature sig_any[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F16}, {TRR_BF16, TRR_BF16}, {TRR_U8, TRR_U8}};
static const trr_op_signature sig_float[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F16}, {TRR_BF16, TRR_BF16}};
static const trr_op_signature sig_rgb[] = {{TRR_U8, TRR_U8}, {TRR_U8, TRR_F32}};
static const trr_op_signature sig_row_sum[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F32}, {TRR_BF16, TRR_F32}};
static const trr_op_signature sig_matmul[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F16}, {TRR_F16, TRR_F32},
                                                {TRR_BF16, TRR_BF16}, {TRR_BF16, TRR_F32}};

static const trr_param_info matmul_params[] = {
    [TRR_MATMUL_PARAM_EPILOGUE] = {"epilogue", TRR_PARAM_ENUM, 0, "none,relu,leaky_relu,gelu",
                                   "activation applied to the f32 accumulator before the store"},
    [TRR_MATMUL_PARAM_ALPHA] = {"alpha", TRR_PARAM_F32, TRR_LEAKY_RELU_DEFAULT_ALPHA, NULL, "leaky_relu's slope"},
    [TRR_MATMUL_PARAM_ALLOW_TF32] = {"allow_tf32", TRR_PARAM_BOOL, 0, NULL,
                                     "f32 inputs may run on TF32 tensor cores"},
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

/* Every op's facts. Defaults are conservative values every backend can run (the portable SIMT kernels among
 * them); backends' choose_config heuristics refine them. Ops with kernel families (matmul, softmax, row_sum) carry
 * TRR_CFG_VARIANT. */
static const trr_op_desc op_table[TRR_OP_COUNT] = {
    [TRR_OP_COPY] = {.op = TRR_OP_COPY, .name = "copy", .n_inputs = 1, .operands = "x -> z", SIGNATURES(sig_any),
                     .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                     .shape = TRR_SHAPE_ELEMENTWISE, .alias_ok = 1,
                     .operand = {ROWS_COLS("x"), NONE, ROWS_COLS("z"), NONE}, .flops_per_point = 1, .exact = 2},
    [TRR_OP_ADD] = {.op = TRR_OP_ADD, .name = "add", .n_inputs = 2, .operands = "x, y -> z", SIGNATURES(sig_float),
                    .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                    .shape = TRR_SHAPE_ELEMENTWISE, .alias_ok = 1,
                    .operand = {ROWS_COLS("x"), ROWS_COLS("y"), ROWS_COLS("z"), NONE}, .flops_per_point = 1,
                    .exact = 1},
    [TRR_OP_GELU] = {.op = TRR_OP_GELU, .name = "gelu", .n_inputs = 1, .operands = "x -> y", SIGNATURES(sig_float),
                     .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                     .shape = TRR_SHAPE_ELEMENTWISE, .alias_ok = 1, .operand = UNARY, .flops_per_point = 1},
    [TRR_OP_RGB_TO_GREY] = {.op = TRR_OP_RGB_TO_GREY, .name = "rgb_to_grey", .n_inputs = 1,
                            .operands = "img[3,H,W] -> grey[H,W]", SIGNATURES(sig_rgb),
                            .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                            .shape = TRR_SHAPE_PLANES,
                            .operand = {{"img", 3, TRR_DIM_ROWS, TRR_DIM_COLS, 0, 0}, NONE, ROWS_COLS("grey"), NONE},
                            .flops_per_point = 1},
    [TRR_OP_SOFTMAX] = {.op = TRR_OP_SOFTMAX, .name = "softmax", .n_inputs = 1, .operands = "x[M,N] -> y[M,N]",
                        SIGNATURES(sig_float), .config_fields = STREAM_FIELDS | TRR_CFG_VARIANT,
                        .default_config = {.block_n = 1024, .threads = 256, .vector_width = 4,
                                           .variant = TRR_VARIANT_SIMT},
                        .shape = TRR_SHAPE_ROWS, .operand = UNARY, .flops_per_point = 1},
    [TRR_OP_ROW_SUM] = {.op = TRR_OP_ROW_SUM, .name = "row_sum", .n_inputs = 1, .operands = "x[M,N] -> y[M]",
                        SIGNATURES(sig_row_sum), .config_fields = STREAM_FIELDS | TRR_CFG_VARIANT,
                        .default_config = STREAM_DEFAULTS,
                        .shape = TRR_SHAPE_ROW_REDUCE,
                        .operand = {ROWS_COLS("x"), NONE, {"y", 1, TRR_DIM_ONE, TRR_DIM_ROWS, 1, 0}, NONE},
                        .flops_per_point = 1},
    [TRR_OP_MATMUL] = {.op = TRR_OP_MATMUL, .name = "matmul", .n_inputs = 2, .operands = "A[M,K], B[K,N] -> C[M,N]",
                       SIGNATURES(sig_matmul), .config_fields = MATMUL_FIELDS, PARAMS(matmul_params),
                       .default_config = {.block_m = 64, .block_n = 64, .block_k = 16, .group_m = 8, .threads = 256,
                                          .stages = 2, .vector_width = 4, .split_k = 1, .variant = TRR_VARIANT_SIMT},
                       .shape = TRR_SHAPE_MATMUL,
                       .operand = {{"A", 1, TRR_DIM_ROWS, TRR_DIM_K, 0, 1}, {"B", 1, TRR_DIM_K, TRR_DIM_COLS, 0, 2},
                                   ROWS_COLS("C"), NONE},
                       .flops_per_point = 2},
    [TRR_OP_SILU] = {.op = TRR_OP_SILU, .name = "silu", .n_inputs = 1, .operands = "x -> y", SIGNATURES(sig_float),
                     .config_fields = STREAM_FIELDS, .default_config = STREAM_DEFAULTS,
                     .shape = TRR_SHAPE_ELEMENTWISE, .alias_ok = 1, .operand = UNARY, .flops_per_point = 1},
    [TRR_OP_RMS_NORM] = {.op = TRR_OP_RMS_NORM, .name = "rms_norm", .n_inputs = 2, .operands = "x[M,N], w[N] -> y[M,N]",
                         SIGNATURES(sig_float), PARAMS(rms_norm_params), .kernel = "norm", .config_fields = STREAM_FIELDS,
                         .default_config = STREAM_DEFAULTS, .shape = TRR_SHAPE_ROW_NORM,
                         .operand = {ROWS_COLS("x"), COLS_VECTOR("w"), ROWS_COLS("y"), NONE}, .flops_per_point = 1},
    [TRR_OP_LAYER_NORM] = {.op = TRR_OP_LAYER_NORM, .name = "layer_norm", .n_inputs = 3,
                           .operands = "x[M,N], w[N], b[N] -> y[M,N]", SIGNATURES(sig_float),
                           PARAMS(layer_norm_params), .kernel = "norm", .config_fields = STREAM_FIELDS,
                           .default_config = STREAM_DEFAULTS, .shape = TRR_SHAPE_ROW_NORM,
                           .operand = {ROWS_COLS("x"), COLS_VECTOR("w"), ROWS_COLS("y"), COLS_VECTOR("b")},
                           .flops_per_point = 1},
    /* Rank-4 operands normalised by core/attention.c; the operand rules name them (rows = S, cols = D) and mark
     * lse optional. Its own host code per backend, as matmul. block_m: query rows per block, block_n: keys per
     * step, split_k: splits of the keys whose partial results a second pass combines (decode). flops_per_point: 4
     * per (query, key, d) point, two multiply-adds (q.k and p.v). */
    [TRR_OP_ATTENTION] = {.op = TRR_OP_ATTENTION, .name = "attention", .n_inputs = 3,
                          .operands = "q[B,Hq,Sq,D], k[B,Hkv,Skv,D], v[B,Hkv,Skv,D] -> o[B,Hq,Sq,D], lse[B,Hq,Sq] f32 "
                                      "(optional)",
                          SIGNATURES(sig_float), PARAMS(attention_params),
                          .config_fields = TRR_CFG_BLOCK_M | TRR_CFG_BLOCK_N | TRR_CFG_THREADS | TRR_CFG_STAGES |
                                           TRR_CFG_SPLIT_K | TRR_CFG_VARIANT,
                          .default_config = {.block_m = 64, .block_n = 64, .threads = 128, .stages = 1, .split_k = 1,
                                             .variant = TRR_VARIANT_SIMT},
                          .shape = TRR_SHAPE_ATTENTION,
                          .operand = {ROWS_COLS("q"), ROWS_COLS("k"), ROWS_COLS("o"), ROWS_COLS("v"),
                                      {"lse", 1, TRR_DIM_ONE, TRR_DIM_ROWS, 1, 0, 1}},
                          .flops_per_point = 4},
};

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

const trr_op_desc *trr_op_desc_get(trr_op op) {
    if ((unsigned)op >= TRR_OP_COUNT) return NULL;
    return &op_table[op];
}

int trr_op_allows(trr_op op, trr_dtype in, trr_dtype out) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return 0;
    for (int i = 0; i < d->n_signatures; i++)
        if (d->signatures[i].in == in && d->signatures[i].out == out) return 1;
    return 0;
}
