/* The case list: one set of op calls (op, dtypes, shape, layout, epilogue) shared by conformance and
 * benchmarking, so a benchmark figure is always for a configuration the conformance suite has checked. */
#ifndef TRR_CASES_H
#define TRR_CASES_H

#include "trireme.h"

#include <stddef.h>
#include <stdint.h>

/* How the operands sit in their buffers. Every layout keeps guard bytes after each output view; the
 * non-packed ones also move every view to an odd element offset, which defeats aligned vector loads. */
typedef enum trr_case_layout {
    TRR_LAYOUT_PACKED = 0, /* offset 0, row stride = row length */
    TRR_LAYOUT_OFFSET,     /* packed rows, every view at a non-zero odd element offset */
    TRR_LAYOUT_STRIDED,    /* row (and plane) strides longer than the row, odd offsets */
    TRR_LAYOUT_COUNT
} trr_case_layout;

/* Special values in softmax inputs (docs/ops.md, "Special values"): -inf is a masked entry. */
typedef enum trr_case_special {
    TRR_SPECIAL_NONE = 0,      /* random values only */
    TRR_SPECIAL_MASK_PREFIX,   /* every row masked from its start, most of the row (row 0: all but the last) */
    TRR_SPECIAL_MASK_SUFFIX,   /* every row masked to its end, most of the row (row 0: all but the first) */
    TRR_SPECIAL_MASK_SCATTER,  /* about half the entries of every row masked at random */
    TRR_SPECIAL_ROW_ALL_MASKED,/* every other row (from row 0) masked everywhere: NaN there, the rest finite */
    TRR_SPECIAL_ONE_NAN,       /* one NaN in one row: that row NaN, the rest finite */
    /* softmax and row_sum: rows whose every term has one sign, so the roundings of a long sum do not cancel */
    TRR_SPECIAL_CONSTANT,      /* every entry 0.1f */
    TRR_SPECIAL_POSITIVE,      /* every entry the absolute value of its random draw */
    TRR_SPECIAL_COUNT,
    /* The row norms' patterns (cases_norm.c), outside softmax's range above: in x, every other row from row 0
     * is constant (each its own random value) or all zeros; the other rows stay random. */
    TRR_SPECIAL_CONST_ROWS = 16,
    TRR_SPECIAL_ZERO_ROWS,
    /* attention (cases_attention.c): q's values times 256, so scale·q·k reaches the hundreds and e^s overflows f32
     * unless the row's maximum is subtracted first */
    TRR_SPECIAL_LARGE_LOGITS = 32
} trr_case_special;

typedef struct trr_case {
    trr_op op;
    trr_dtype in_dtype;  /* every input; where mixed is set, every input but the second */
    trr_dtype out_dtype;
    int mixed;           /* the second input (matmul's B) is in2_dtype: an 8-bit float product of e5m2 and e4m3 */
    trr_dtype in2_dtype;
    /* copy/add/gelu: rows x cols (rows = 1 is a flat vector); rgb_to_grey: rows = H, cols = W; softmax,
     * row_sum: rows = M, cols = N; matmul: m, n, k. */
    int64_t rows, cols;
    int64_t m, n, k;
    trr_case_layout layout;
    int trans_a, trans_b; /* matmul: A stored as [K,M], B stored as [N,K] */
    trr_epilogue epilogue;
    float alpha;
    int quick;            /* member of the small subset used under sanitizers */
    int special;          /* softmax input pattern written over the random fill (trr_case_special) */
    /* matmul batch (docs/ops.md, "matmul"): 0 is a plain 2-D call; b >= 1 gives rank-3 operands [b, ...] (b = 1 is a
     * batch of one). A broadcast input is one matrix shared by every batch: a 2-D operand in the packed layout,
     * a rank-3 operand with batch stride 0 in the others. */
    int64_t batch;
    int bcast_a, bcast_b;
    /* the op's named parameters other than matmul's epilogue and alpha (above): passed to trr_op_run as they are,
     * and resolved into the reference's call (rms_norm's and layer_norm's eps, matmul's scale_a and scale_b);
     * count 0: defaults */
    trr_op_params params;
    /* attention (cases_attention.c): B, Hq, Hkv, Sq, Skv, D; whether the call writes lse; whether q, k, v and o are
     * stored as [B,S,H,D] (torch's layout) and passed as their permuted views. causal and scale are params. */
    struct {
        int64_t b, hq, hkv, sq, skv, d;
        int lse;
        int bshd;
    } attn;
} trr_case;

/* The whole list, built once and kept (thread-safe after the first call returns; call it once from one thread
 * before using it from several). quick_only selects the quick subset. The list is ordered by op. */
trr_status trr_cases_get(int quick_only, const trr_case **out_cases, int *out_count);

/* A short stable description, e.g. "matmul f16->f32 127x1000x17 tA strided gelu": the case's name in reports
 * and JSON. Writes at most cap bytes, always terminated. */
void trr_case_describe(const trr_case *c, char *out, size_t cap);
/* The row norms' cases (cases_norm.c), appended to the list by trr_cases_get's builder. Returns 0 when the
 * list is full. */
int trr_cases_add_norms(trr_case *items, int *count, int cap);
/* The same cases for one op of the row-norm shape rule (a user's row op among them); the eps cases only where the
 * op declares eps. */
int trr_cases_add_row_norm(trr_op op, trr_case *items, int *count, int cap);
/* attention's cases (cases_attention.c), appended likewise; their names ("attention f16 B2 H8/2 S127x1000 D64
 * causal lse bshd strided": Hq/Hkv heads, Sq x Skv); whether a case asks for causal (its params). */
int trr_cases_add_attention(trr_case *items, int *count, int cap);
void trr_case_describe_attention(const trr_case *c, char *out, size_t cap);
int trr_case_causal(const trr_case *c);
/* "", "mask-prefix", "mask-suffix", "mask-scatter", "row-masked", "one-nan", "constant", "positive",
 * "const-rows", "zero-rows", "large-logits" */
const char *trr_case_special_name(int special);
/* "packed", "offset", "strided" */
const char *trr_case_layout_name(trr_case_layout layout);

/* The dtype of the case's operand in slot (layout.h's x, y, z, u: TRR_SLOT_*). */
trr_dtype trr_case_dtype(const trr_case *c, int slot);
/* The case's dtypes as a report names them: "f16->f32", "f8e5m2xf8e4m3->bf16" (mixed inputs). */
void trr_case_dtypes_name(const trr_case *c, char *out, size_t cap);

/* The call's dimensions: rows, cols, k of the normalised call (matmul M, N, K; attention Sq, D, Skv; other ops
 * rows, cols, 1). */
void trr_case_dims(const trr_case *c, int64_t out_dims[3]);
/* The output's logical shape: rows x cols values (row_sum: rows x 1; a batched matmul: batch·M x N, batch after
 * batch; attention: o's B·Hq·Sq rows of D, lse apart). */
void trr_case_out_shape(const trr_case *c, int64_t *out_rows, int64_t *out_cols);
/* Matrices one call computes: the matmul batch (1 when not batched), attention's B·Hq; 1 for other ops. */
int64_t trr_case_batch(const trr_case *c);
/* Floating-point operations of one call (2·B·M·N·K for matmul; 4·B·Hq·Sq·Skv·D for attention, halved when
 * causal, the convention of docs/ops.md's benchmarks; one per output element otherwise): used to keep the
 * suite's cost in check and by benchmarks. */
double trr_case_flops(const trr_case *c);

#endif
