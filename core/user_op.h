/* Ops defined by the public definition, trr_op_def (docs/custom-ops.md): a checked copy of the definition and the
 * op-table row made from it by one conversion (trr_op_def_convert, core/op_def.c). trr_op_define makes user ops
 * so; core/op_table.c makes the built-in element-wise ops and row norms so, from definitions of its own. The row
 * is of the element-wise shape rule, or for a row op of the row norms' (operand rules of [M,N] and [N] operands
 * in the slots x, y, u, z, w), so validation, parts, the harness's layout, cases and reference, the bench and the
 * CLI follow from it. A user op's `user` field sends each backend to its user path, which takes the kernel from
 * the definition; a built-in's is NULL: its kernels are those of its stem in kernels/<api>/, run by the backends'
 * tuned paths. */
#ifndef TRR_USER_OP_H
#define TRR_USER_OP_H

#include "backend.h"
#include "op_table.h"

#define TRR_USER_NAME_MAX 48
#define TRR_USER_EXPR_MAX 64

typedef enum trr_user_api { TRR_USER_CUDA = 0, TRR_USER_OPENCL, TRR_USER_VULKAN, TRR_USER_APIS } trr_user_api;

typedef struct trr_user_op {
    trr_op op;
    trr_op_def def;               /* the caller's definition; every pointer below points at this struct's copies */
    trr_op_desc desc;
    char name[TRR_USER_NAME_MAX];
    char operands[256];
    char operand_names[TRR_MAX_ROW_OPERANDS][TRR_USER_NAME_MAX]; /* in the convention's order */
    int n_operands;               /* inputs + outputs */
    int n_inputs;
    int row_op;                   /* a row op (trr_op_define_row_op): the row-norm shape rule; else element-wise */
    trr_op_row_reference_fn row_reference; /* a row op's reference (the definition's reference is NULL) */
    trr_op_cpu_row_fn row_cpu;    /* a row op's CPU function (the definition's cpu is NULL), or NULL */
    unsigned char vector[TRR_MAX_ROW_OPERANDS]; /* a row op's [N] operands, in the convention's order */
    int rank;                     /* of every operand (a row op: of its [M,N] ones): 1 or 2 */
    char dims[2][TRR_USER_NAME_MAX]; /* rank 2: rows' name, cols' name; rank 1: "", cols' name */
    trr_param_info params[TRR_MAX_OP_PARAMS];
    char param_names[TRR_MAX_OP_PARAMS][TRR_USER_NAME_MAX];
    char *param_choices[TRR_MAX_OP_PARAMS];
    char *param_docs[TRR_MAX_OP_PARAMS];
    char tile_names[TRR_MAX_TILE_PARAMS][TRR_USER_NAME_MAX];
    int tile_field[TRR_MAX_TILE_PARAMS]; /* index into trr_config_fields */
    char groups[3][TRR_USER_EXPR_MAX], threads[TRR_USER_EXPR_MAX];
    char entry[TRR_USER_APIS][TRR_USER_NAME_MAX];
    char *source[TRR_USER_APIS];  /* CUDA C, OpenCL C; NULL where the API has none. The disk caches' keys hash
                                     the whole text (OpenCL's programs, CUDA's cubins); in memory a kernel is
                                     kept per op id, which no other definition takes */
    uint32_t *spirv;              /* Vulkan */
    size_t spirv_words;
    trr_op_signature signatures[TRR_MAX_USER_DTYPES];
    trr_op_bench bench;
    char bench_name[TRR_USER_NAME_MAX + 8], bench_title[160];
} trr_user_op;

/* What a built-in op's row holds beyond its public definition (core/op_table.c): what a trr_op_def cannot say of
 * an op whose kernels are the library's own. */
typedef struct trr_op_builtin {
    trr_op op;              /* its id, fixed by the public enum (TRR_OP_*) */
    const char *kernel;     /* the stem of its kernels, kernels/<api>/<stem>, which each backend's own path compiles
                               and tunes (core/kernel_find.h); the definition gives no per-API code */
    unsigned config_fields; /* its tile-parameter schema and defaults, which the backends' heuristics refine */
    trr_config default_config;
    const trr_op_bench *benches; /* the bench's benchmarks of it (docs/ops.md, Benchmarks) */
    int n_benches;
    int alias_ok;           /* the output may be exactly an input */
} trr_op_builtin;

/* Checks def (with a row op's row_reference and row_cpu, else NULL) as trr_op_define documents it, copies it into
 * *u and makes u->desc, its op-table row: a user op's where builtin is NULL (u->op set by the caller; its name
 * must be new), else the built-in's that builtin completes (its kernels by stem, no user path). On a refusal,
 * TRR_ERR_INVALID_ARGUMENT with the reason in trr_last_error(NULL); *u may hold copies trr_user_op_free frees. */
trr_status trr_op_def_convert(const trr_op_def *def, trr_op_row_reference_fn row_reference, trr_op_cpu_row_fn row_cpu,
                              const trr_op_builtin *builtin, trr_user_op *u);
/* Frees a user op's copies and u itself (calloc'd). */
void trr_user_op_free(trr_user_op *u);
/* The user op of id op, or NULL (a built-in op, or no such op). */
const trr_user_op *trr_user_op_get(trr_op op);
/* The definition's tile-parameter values for a resolved config (one per tile parameter). */
void trr_user_tiles(const trr_user_op *u, const trr_config *config, int out[TRR_MAX_TILE_PARAMS]);
/* The launch rule evaluated for call: groups along x, y, z and threads per group; TRR_ERR_UNSUPPORTED on ctx when
 * a value is below 1 or past what an int holds. */
trr_status trr_user_launch(trr_context *ctx, const trr_user_op *u, const trr_call *call, int64_t groups[3],
                           int *out_threads);
/* The defines a CUDA or OpenCL compile gets: "-DBLOCK=256 ... -DTRR_DTYPE=0 -DTRR_THREADS=256". */
void trr_user_defines(const trr_user_op *u, const trr_call *call, int threads, char *out, size_t cap);
/* The operands of call in the convention's order (inputs, then the outputs). */
int trr_user_operands(const trr_user_op *u, const trr_call *call, const trr_operand *out[TRR_MAX_ROW_OPERANDS]);
/* 1 where parameter i is passed as a float (an f32 parameter), 0 as an int. */
static inline int trr_user_param_is_float(const trr_user_op *u, int i) { return u->params[i].type == TRR_PARAM_F32; }
/* The backend's run of call for a user op of rank-1 operands, whose launch rule has no rows: a call of several
 * rows (a strided view) runs as one call a row, each operand advanced by its row stride. */
trr_status trr_user_run_rows(trr_context *ctx, const trr_call *call);
/* "<backend>: <op> has no <api> kernel" as TRR_ERR_UNSUPPORTED when the definition gives that API nothing. */
trr_status trr_user_need_code(trr_context *ctx, const trr_user_op *u, trr_user_api api, const char *backend);
/* What every backend checks before it runs a user op, and then launches: the definition has code for api, its
 * launch rule evaluates for call (groups along x, y, z, threads per group), and the threads fit the device's
 * most_threads per group (0: no limit known); else TRR_ERR_UNSUPPORTED on ctx with the reason. */
trr_status trr_user_prepare(trr_context *ctx, const trr_user_op *u, const trr_call *call, trr_user_api api,
                            const char *backend, int most_threads, int64_t groups[3], int *out_threads);

#endif
