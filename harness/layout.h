/* How a case's operands sit in device buffers, derived from the op table's operand rules: the one place the
 * conformance engine, the tuner, the benchmarks and `trireme run` get their tensors from. */
#ifndef TRR_LAYOUT_H
#define TRR_LAYOUT_H

#include "cases.h"
#include "trireme.h"

#include <stddef.h>
#include <stdint.h>

/* One operand as stored: planes x rows x cols elements (a transposed operand is stored with rows and cols
 * swapped), at offset elements from the buffer's start. */
typedef struct trr_stored_view {
    trr_dtype dtype;
    int64_t planes, rows, cols;
    int64_t plane_stride, row_stride, offset;
    int ndim;       /* rank of the tensor passed to the op: 1 (a vector, or a flat element-wise call), 2, 3 or 4 */
    int transposed; /* the op gets the transpose of the stored [rows, cols] view */
    /* attention: planes are batch x heads (plane p is head p % heads of batch p / heads, batches batch_stride
     * apart); 0 elsewhere. The view passed is [batch, heads, rows, cols] (ndim 4) or [batch, heads, rows]
     * (ndim 3, lse, whose cols is 1). */
    int64_t heads, batch_stride;
} trr_stored_view;

/* Operand slots of a case: x, y, z, u, w in the order of trr_call (op_table.h's TRR_SLOT_*). */
#define TRR_CASE_SLOTS 5

/* The operands of one case: x, y (absent for one-input ops), z, u (the third input: layer_norm's b; absent for
 * ops of fewer inputs), w (a second output: attention's lse, when the case asks for it) in the order of
 * trr_call. has[i] is 1 where the case has slot i. */
typedef struct trr_case_views {
    int n_inputs;
    trr_stored_view v[TRR_CASE_SLOTS];
    unsigned char has[TRR_CASE_SLOTS];
} trr_case_views;

/* The output's index in v[] (trr_call's z slot). The public operand order of trr_op_run is the inputs in order,
 * then the output: op_table.h's trr_slot_of_operand maps it onto these slots. */
#define TRR_OUT 2
/* The third input's index in v[] (trr_call's u slot). */
#define TRR_U 3
/* The second output's index in v[] (trr_call's w slot). */
#define TRR_W 4
/* 1 for the slots that are outputs (z, w). */
static inline int trr_case_slot_is_output(int slot) { return slot == TRR_OUT || slot == TRR_W; }

/* 1 where case c has operand slot `slot`: the op declares it and, for an optional one (attention's lse), the case
 * asks for it. */
int trr_case_has_slot(const trr_case *c, int slot);

/* Lays c's operands out as its layout says: packed at offset 0, or (offset, strided) at odd element offsets and
 * with padded rows and planes, so no view lands on a vector boundary. */
trr_status trr_case_views_make(const trr_case *c, trr_case_views *out);

/* TRR_OK when the operands of views fit the device's memory together (their element counts and bytes in 64
 * bits), else TRR_ERR_OVERFLOW or TRR_ERR_OUT_OF_MEMORY (recorded on ctx) naming the size: asked before
 * allocating, so a mistyped size is refused before it takes host memory (`trireme run`, the tuner). Views past
 * 2^31 elements are fine: the runtime runs such calls in parts. */
trr_status trr_case_views_check_size(trr_context *ctx, const trr_case_views *views);

/* Elements from the buffer's start to one past the view's last element. */
int64_t trr_stored_extent(const trr_stored_view *v);
/* The index of element (p, r, c) of the stored view, in elements from the buffer's start (p counts batch x
 * heads planes where the view has heads). */
int64_t trr_stored_index(const trr_stored_view *v, int64_t p, int64_t r, int64_t c);

/* The tensor the op is called with for a view stored in buf. */
trr_status trr_stored_tensor(const trr_stored_view *v, trr_buffer *buf, trr_tensor *out);

/* Runs c's op on tensors t (x, y, z, u as in trr_case_views; slots the op lacks ignored) through trr_op_run, in
 * the public operand order (inputs, then the output), with c's epilogue and the given TRR_MATMUL_* flags (matmul)
 * or c's named parameters (any other op). */
trr_status trr_case_call(trr_context *ctx, const trr_case *c, const trr_tensor t[TRR_CASE_SLOTS], unsigned flags);

/* The normalised call (backend.h) of c on tensors t, as trr_op_run builds it: validated over every slot the op
 * has, with c's parameters resolved into call->params (the reference reads eps there). The operands' mem fields
 * are NULL: trr_case_call_host points them at host copies. */
struct trr_call;
trr_status trr_case_call_build(trr_context *ctx, const trr_case *c, const trr_tensor t[TRR_CASE_SLOTS],
                               unsigned flags, struct trr_call *out_call, int *out_empty);
/* Points call's operands at host copies (hosts[i] for slot i; NULL where the op has no such slot). */
void trr_case_call_host(struct trr_call *call, void *const hosts[TRR_CASE_SLOTS]);

/* The normalised call (backend.h) of c's packed operands, without buffers (mem NULL): what a backend's
 * heuristic and the tuning space see for c. */
trr_status trr_case_packed_call(const trr_case *c, struct trr_call *out_call);

/* Bytes every operand of c moves once when packed (inputs read, output written): the streaming ops' traffic. */
double trr_case_bytes(const trr_case *c);
/* The part of trr_case_bytes that is the output's. */
double trr_case_output_bytes(const trr_case *c);

#endif
