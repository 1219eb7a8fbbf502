/* The op table: every op's name, operands, allowed dtypes, tile-parameter schema and default configs. This is
 * the one place an op is declared; adding an op touches this table, the reference and one kernel per backend. */
#ifndef TRR_OP_TABLE_H
#define TRR_OP_TABLE_H

#include "trireme.h"

/* Which trr_config fields an op uses (its tile-parameter schema). */
enum {
    TRR_CFG_BLOCK_M = 1u << 0,
    TRR_CFG_BLOCK_N = 1u << 1,
    TRR_CFG_BLOCK_K = 1u << 2,
    TRR_CFG_GROUP_M = 1u << 3,
    TRR_CFG_THREADS = 1u << 4,
    TRR_CFG_STAGES = 1u << 5,
    TRR_CFG_VECTOR_WIDTH = 1u << 6,
    TRR_CFG_SPLIT_K = 1u << 7,
    TRR_CFG_VARIANT = 1u << 8 /* the op has more than one kernel family somewhere (trr_variant) */
};

#define TRR_DTYPE_BIT(d) (1u << (unsigned)(d))

/* One allowed combination of operand dtypes. */
typedef struct trr_op_signature {
    trr_dtype in;  /* every input; where mixed is set, every input but the second */
    trr_dtype out;
    int mixed;     /* the second input (matmul's B) is in2: an 8-bit float product of e5m2 and e4m3 */
    trr_dtype in2;
} trr_op_signature;

/* The shape rule: how an op's operands relate, which fixes its validation, its normalised form (backend.h) and
 * how the harness lays out its operands. A new op of an existing rule needs no code outside its table row, its
 * reference and its kernels. */
typedef enum trr_op_shape {
    TRR_SHAPE_ELEMENTWISE = 0, /* inputs and output of one shape, rank 1-3, folded to rows x cols */
    TRR_SHAPE_PLANES,          /* x [3,H,W] planar -> z [H,W]: rows = H, cols = W */
    TRR_SHAPE_ROWS,            /* x [M,N] -> z [M,N], each row on its own */
    TRR_SHAPE_ROW_REDUCE,      /* x [M,N] -> z [M] */
    TRR_SHAPE_MATMUL,          /* A [M,K], B [K,N] -> C [M,N]: rows = M, cols = N, k = K */
    TRR_SHAPE_ROW_NORM,        /* x [M,N], w [N] (, b [N]) -> y [M,N]: each row on its own, scaled per column; by
                                  the operand rules, so a user's row op (x [M,N], r [M,N], w [N] -> y, h [M,N])
                                  is of it too */
    TRR_SHAPE_ATTENTION        /* q [B,Hq,Sq,D], k, v [B,Hkv,Skv,D] -> o [B,Hq,Sq,D] (, lse [B,Hq,Sq]): core/attention.c */
} trr_op_shape;
#define TRR_SHAPE_COUNT (TRR_SHAPE_ATTENTION + 1)

/* The problem dimensions an operand's stored extent is made of: a call's rows, cols and k (backend.h). */
typedef enum trr_dim { TRR_DIM_ONE = 0, TRR_DIM_ROWS, TRR_DIM_COLS, TRR_DIM_K } trr_dim;

/* One operand as the op sees it: [planes x] rows x cols, or a vector of cols when rows is TRR_DIM_ONE and
 * vector is set. transposable: 1 when the operand may be passed transposed as A (trans_a), 2 as B (trans_b). */
typedef struct trr_operand_rule {
    const char *name;
    unsigned char planes; /* 3 for rgb_to_grey's image, else 1 */
    unsigned char rows, cols; /* trr_dim */
    unsigned char vector;     /* a 1-D tensor (row_sum's output) */
    unsigned char transposable;
    unsigned char optional;   /* the caller may pass NULL (attention's lse) */
} trr_operand_rule;

/* The operand slots of a call: the first and second inputs, the output, a third input and a second output. The
 * public operand order (inputs in order, then the outputs) maps onto them: x, y, u, then z, w. */
enum { TRR_SLOT_X = 0, TRR_SLOT_Y = 1, TRR_SLOT_Z = 2, TRR_SLOT_U = 3, TRR_SLOT_W = 4, TRR_SLOTS = 5 };
/* 1 for the output slots (z, w). */
static inline int trr_slot_is_output(int slot) { return slot == TRR_SLOT_Z || slot == TRR_SLOT_W; }
/* The slot of public operand i of an op with n_inputs inputs (trr_op_run's order). */
static inline int trr_slot_of_operand(int n_inputs, int i) {
    if (i == n_inputs) return TRR_SLOT_Z;
    if (i == n_inputs + 1) return TRR_SLOT_W;
    return i == 2 ? TRR_SLOT_U : i;
}

/* ---- an op's benchmarks (docs/ops.md, Benchmarks): what `trireme bench` runs and how it counts the work ---- */

/* What a benchmark's sizes name, on the command line and in reports. */
typedef enum trr_bench_sizing {
    TRR_SIZING_VECTOR = 0, /* n: one packed vector (rows = 1) */
    TRR_SIZING_ROWS,       /* N: rows of N at M = TRR_BENCH_ROWS_M */
    TRR_SIZING_IMAGE,      /* H or HxW: an image of H rows (W = H·1600/1066 rounded when not given) */
    TRR_SIZING_CUBE,       /* M = N = K, MxN (K = M) or MxNxK */
    TRR_SIZING_BATCH,      /* BxMxNxK: B products of M x K by K x N */
    TRR_SIZING_ATTENTION,  /* BxHxSxD (Hkv = H, Sq = Skv = S), and 1 in the fifth field (c after it): causal */
    TRR_SIZING_DECODE      /* Skv at B = 32, Hq = 32, Hkv = 8, D = 128 (Sq = 1), or BxHqxHkvxSkvxD */
} trr_bench_sizing;
#define TRR_BENCH_ROWS_M 4096

/* How a case's work is counted; its figure is the work over the time. */
typedef enum trr_work_rule {
    TRR_WORK_BYTES = 0,   /* every operand read or written once, packed: GB/s */
    TRR_WORK_INPUT_BYTES, /* every input once; the output, one value per row, is not counted (row_sum): GB/s */
    TRR_WORK_FLOPS,       /* flops_per_point per point of rows x cols x k, every batch: TFLOPS */
    TRR_WORK_ATTENTION    /* 4·B·Hq·Sq·Skv·D, halved when causal: TFLOPS; with Sq = 1 (decode) the bytes of k and
                             v read: GB/s */
} trr_work_rule;

/* A benchmark's sizes: a range of the first size field (from, from + step or from * factor, ... up to to; none
 * when from is 0), then the sizes of list as a size list names them (unused fields 0), up to the first all-zero
 * one. */
#define TRR_BENCH_LISTED 12
typedef struct trr_bench_sizes {
    int64_t from, to, step, factor;
    int64_t list[TRR_BENCH_LISTED][5];
} trr_bench_sizes;

typedef struct trr_op_bench {
    const char *name;    /* "add_f32": on the command line and in reports */
    const char *title;   /* for charts: "add f32 (GB/s = 12n/t)" */
    trr_dtype in, out;
    trr_epilogue epilogue;
    trr_bench_sizing sizing;
    int reads_only;      /* its bytes are (nearly) all reads, which stream faster than a copy's reads and writes,
                            so a figure above the copy ceiling is expected (row_sum) */
    trr_bench_sizes quick, full; /* the bench's quick and full modes */
} trr_op_bench;

typedef struct trr_op_desc {
    trr_op op;
    const char *name;
    int n_inputs;              /* 1 to 3 */
    const trr_param_info *params; /* the op's named scalar parameters, in slot order */
    /* The kernel source stem every backend compiles for this op, kernels/<api>/<kernel>.<ext>, with the op's name
     * as the entry point (core/kernel_find.h says how a backend finds it). Ops of one shape rule may share a stem
     * (the element-wise ops "elementwise", the row norms "norm"); matmul's backends pick their files by variant. */
    const char *kernel;
    int n_params;
    const char *operands;      /* "x, y -> z", for people */
    const trr_op_signature *signatures;
    int n_signatures;
    unsigned config_fields;    /* TRR_CFG_* */
    trr_config default_config; /* used for any field a backend's heuristic leaves at zero */
    trr_op_shape shape;
    int alias_ok;              /* the output may be exactly an input (each element read before it is written) */
    /* x, y, z, u in the order of trr_call's slots (TRR_SLOT_*): a name is NULL where the op has no such operand */
    trr_operand_rule operand[TRR_SLOTS];
    int flops_per_point;       /* floating-point operations per point of rows x cols x k (2 for matmul's FMA) */
    int exact;                 /* results must be bit-exact: 2 in every dtype (copy), 1 for f32 outputs (add) */
    /* Facts the backends' generic paths and heuristics read in place of the op's identity: */
    int bytewise;              /* the output is the input's bytes (copy): a backend may run it as a byte move of
                                  any dtype, with no kernel of its own */
    int transcendental;        /* evaluates exp or the like per element (gelu, silu): compute costs count against
                                  memory, so heuristics give such ops smaller pieces of work */
    int converts;              /* the element-wise output's dtype is not the input's (cast): a backend runs it through
                                  converting kernels, one per dtype pair, found by the op's stem and name */
    /* the bench's benchmarks of the op (none: the op is not benchmarked) and how they count work */
    const trr_op_bench *benches;
    int n_benches;
    trr_work_rule bench_work;
    /* a user op (trr_op_define, core/user_op.h): its kernels come from the definition, through each backend's user
     * path; NULL for the built-in ops */
    const struct trr_user_op *user;
    /* the checked definition the row was made from (core/user_op.h): every user op's, and the built-ins' declared
     * by a public trr_op_def (add, gelu, silu, the row norms); NULL for rows written out here. The harness's
     * reference runs its reference. */
    const struct trr_user_op *defined;
} trr_op_desc;

/* matmul's parameter slots (op_table.c declares them in this order) */
enum {
    TRR_MATMUL_PARAM_EPILOGUE = 0,
    TRR_MATMUL_PARAM_ALPHA,
    TRR_MATMUL_PARAM_ALLOW_TF32,
    TRR_MATMUL_PARAM_SCALE_A, /* per-tensor scales of 8-bit float inputs (docs/ops.md, matmul) */
    TRR_MATMUL_PARAM_SCALE_B
};
/* the norms' parameter slot */
enum { TRR_NORM_PARAM_EPS = 0 };
/* attention's parameter slots: scale (0 means 1/sqrt(D); the call's attn.scale holds the resolved value) and
 * causal */
enum { TRR_ATTN_PARAM_SCALE = 0, TRR_ATTN_PARAM_CAUSAL };
/* attention's largest head dimension (docs/ops.md, attention) */
#define TRR_ATTN_MAX_HEAD_DIM 256

const trr_op_desc *trr_op_desc_get(trr_op op);
/* Why a built-in op's definition was refused when the table was made (a defect the tests catch: that op's row
 * then takes no call), or NULL. */
const char *trr_op_table_fault(void);
/* gelu's float64 value, 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3))): the reference of the op and of
 * matmul's gelu epilogue. */
double trr_gelu_reference(double x);
/* The ops defined now: the built-ins, then the user ops (TRR_OP_COUNT ..). */
int trr_op_desc_count(void);
/* Adds a user op's row (core/user_op.c, under its lock); its id, or -1 when TRR_MAX_USER_OPS are defined. */
int trr_op_desc_add(const trr_op_desc *desc);
/* The op's outputs: 1, or 2 when it declares a second output (slot W). */
static inline int trr_op_outputs(const trr_op_desc *d) { return d->operand[TRR_SLOT_W].name ? 2 : 1; }
/* Tests only: op's definition becomes *desc (NULL restores the table's row), so a test can present a backend with
 * an op it has no kernel for. Not thread-safe: call it with no op in flight. */
void trr_op_desc_replace(trr_op op, const trr_op_desc *desc);
/* 1 if (in, out) is one of op's signatures: in is the first input's dtype. */
int trr_op_allows(trr_op op, trr_dtype in, trr_dtype out);
/* 1 if a signature of op takes first input x, second input y (ignored by ops of one input) and output out. */
int trr_op_allows_inputs(trr_op op, trr_dtype x, trr_dtype y, trr_dtype out);
/* The dtype signature s gives the input in slot (TRR_SLOT_X, TRR_SLOT_Y, TRR_SLOT_U). */
static inline trr_dtype trr_signature_input(const trr_op_signature *s, int slot) {
    return s->mixed && slot == TRR_SLOT_Y ? s->in2 : s->in;
}

/* The known-good f16 matmul configs on NVIDIA (docs/ops.md, Known-good NVIDIA configs), the starting set for tuning. */
extern const trr_config trr_matmul_f16_nvidia_configs[];
extern const int trr_matmul_f16_nvidia_config_count;

#endif
