/* The op table (see op_table.h). */
#include "op_table.h"

#include <stddef.h>

static const trr_op_signature sig_any[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F16}, {TRR_U8, TRR_U8}};
static const trr_op_signature sig_float[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F16}};
static const trr_op_signature sig_rgb[] = {{TRR_U8, TRR_U8}, {TRR_U8, TRR_F32}};
static const trr_op_signature sig_row_sum[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F32}};
static const trr_op_signature sig_matmul[] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_F16}, {TRR_F16, TRR_F32}};

#define SIGS(a) a, (int)(sizeof a / sizeof a[0])
#define STREAM_FIELDS (TRR_CFG_BLOCK_N | TRR_CFG_THREADS | TRR_CFG_VECTOR_WIDTH)

#define STREAM_DEFAULTS {.block_n = 1024, .threads = 256, .vector_width = 4}
#define MATMUL_FIELDS                                                                                          \
    (TRR_CFG_BLOCK_M | TRR_CFG_BLOCK_N | TRR_CFG_BLOCK_K | TRR_CFG_GROUP_M | TRR_CFG_THREADS | TRR_CFG_STAGES |  \
     TRR_CFG_VECTOR_WIDTH | TRR_CFG_SPLIT_K | TRR_CFG_VARIANT)

/* operand rules */
#define ROWS_COLS(n) {n, 1, TRR_DIM_ROWS, TRR_DIM_COLS, 0, 0}
#define NONE {NULL, 0, 0, 0, 0, 0}
#define UNARY_ELEMENTWISE {ROWS_COLS("x"), NONE, ROWS_COLS("y")}

/* Defaults are conservative values every backend can run (the portable SIMT kernels among them); backends'
 * choose_config heuristics refine them. Ops with kernel families (matmul, softmax) carry TRR_CFG_VARIANT. */
static const trr_op_desc op_table[TRR_OP_COUNT] = {
    {TRR_OP_COPY, "copy", 1, "x -> z", SIGS(sig_any), STREAM_FIELDS, STREAM_DEFAULTS, TRR_SHAPE_ELEMENTWISE, 1,
     {ROWS_COLS("x"), NONE, ROWS_COLS("z")}},
    {TRR_OP_ADD, "add", 2, "x, y -> z", SIGS(sig_float), STREAM_FIELDS, STREAM_DEFAULTS, TRR_SHAPE_ELEMENTWISE, 1,
     {ROWS_COLS("x"), ROWS_COLS("y"), ROWS_COLS("z")}},
    {TRR_OP_GELU, "gelu", 1, "x -> y", SIGS(sig_float), STREAM_FIELDS, STREAM_DEFAULTS, TRR_SHAPE_ELEMENTWISE, 1,
     UNARY_ELEMENTWISE},
    {TRR_OP_RGB_TO_GREY, "rgb_to_grey", 1, "img[3,H,W] -> grey[H,W]", SIGS(sig_rgb), STREAM_FIELDS,
     STREAM_DEFAULTS, TRR_SHAPE_PLANES, 0,
     {{"img", 3, TRR_DIM_ROWS, TRR_DIM_COLS, 0, 0}, NONE, ROWS_COLS("grey")}},
    {TRR_OP_SOFTMAX, "softmax", 1, "x[M,N] -> y[M,N]", SIGS(sig_float), STREAM_FIELDS | TRR_CFG_VARIANT,
     {.block_n = 1024, .threads = 256, .vector_width = 4, .variant = TRR_VARIANT_SIMT},
     TRR_SHAPE_ROWS, 0, UNARY_ELEMENTWISE},
    {TRR_OP_ROW_SUM, "row_sum", 1, "x[M,N] -> y[M]", SIGS(sig_row_sum), STREAM_FIELDS, STREAM_DEFAULTS,
     TRR_SHAPE_ROW_REDUCE, 0, {ROWS_COLS("x"), NONE, {"y", 1, TRR_DIM_ONE, TRR_DIM_ROWS, 1, 0}}},
    {TRR_OP_MATMUL, "matmul", 2, "A[M,K], B[K,N] -> C[M,N]", SIGS(sig_matmul), MATMUL_FIELDS,
     {.block_m = 64, .block_n = 64, .block_k = 16, .group_m = 8, .threads = 256, .stages = 2, .vector_width = 4,
      .split_k = 1, .variant = TRR_VARIANT_SIMT},
     TRR_SHAPE_MATMUL, 0,
     {{"A", 1, TRR_DIM_ROWS, TRR_DIM_K, 0, 1}, {"B", 1, TRR_DIM_K, TRR_DIM_COLS, 0, 2}, ROWS_COLS("C")}},
    {TRR_OP_SILU, "silu", 1, "x -> y", SIGS(sig_float), STREAM_FIELDS, STREAM_DEFAULTS, TRR_SHAPE_ELEMENTWISE, 1,
     UNARY_ELEMENTWISE},
};

const trr_config trr_matmul_f16_nvidia_configs[] = {
    /* SPEC.md: (BM, BN, BK, GROUP_M, stages, warps) */
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
