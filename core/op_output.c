/* trr_op_output_shape: an op's output from its inputs' shapes and dtypes, by its definition's operand rules, so
 * callers that allocate outputs (Python, the CLI) hold no shape rules of their own. */
#include "backend.h"
#include "op_table.h"

#include <string.h>

/* The problem dimensions (op_table.h's trr_dim) an input's shape fixes, by its operand rule: a vector names one,
 * a matrix its rows and cols (the last two dimensions), after its planes where it has them; a batch dimension
 * may lead (matmul). */
static trr_status read_dims(const trr_op_desc *d, int slot, const trr_tensor *t, int64_t dims[4], int *batch_dim,
                            int64_t *batch) {
    const trr_operand_rule *r = &d->operand[slot];
    if (r->vector) {
        if (t->ndim != 1)
            return trr_error(NULL, TRR_ERR_SHAPE, "%s: %s must be 1-D, got rank %d", d->name, r->name, t->ndim);
        dims[r->cols] = t->shape[0];
        return TRR_OK;
    }
    const int core = 2 + (r->planes > 1);
    const int batched = d->shape == TRR_SHAPE_MATMUL && t->ndim == core + 1;
    if (t->ndim != core && !batched)
        return trr_error(NULL, TRR_ERR_SHAPE, "%s: %s must be %d-D%s, got rank %d", d->name, r->name, core,
                         d->shape == TRR_SHAPE_MATMUL ? " (or 3-D, a batch)" : "", t->ndim);
    if (batched) {
        *batch_dim = 1;
        if (t->shape[0] > *batch) *batch = t->shape[0];
    }
    if (r->planes > 1 && t->shape[t->ndim - 3] != r->planes)
        return trr_error(NULL, TRR_ERR_SHAPE, "%s: %s must hold %d planes, got %lld", d->name, r->name, r->planes,
                         (long long)t->shape[t->ndim - 3]);
    dims[r->rows] = t->shape[t->ndim - 2];
    dims[r->cols] = t->shape[t->ndim - 1];
    return TRR_OK;
}

trr_status trr_op_output_shape(trr_op op, const trr_tensor *const *inputs, int out_dtype, int *out_ndim,
                               int64_t out_shape[TRR_MAX_DIMS], trr_dtype *out_out_dtype) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (!inputs || !out_ndim || !out_shape || !out_out_dtype)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: a NULL argument", d->name);
    for (int i = 0; i < d->n_inputs; i++) {
        const trr_tensor *t = inputs[i];
        if (!t) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", d->name, i);
        if (t->ndim < 1 || t->ndim > TRR_MAX_DIMS)
            return trr_error(NULL, TRR_ERR_SHAPE, "%s: input %d has rank %d, outside [1, %d]", d->name, i, t->ndim,
                             TRR_MAX_DIMS);
        if ((unsigned)t->dtype >= TRR_DTYPE_COUNT)
            return trr_error(NULL, TRR_ERR_DTYPE, "%s: input %d has an unknown dtype %d", d->name, i, (int)t->dtype);
    }
    /* the dtype: the one asked for, else the inputs' where the op keeps it, else the first its signatures give */
    const trr_dtype in = inputs[0]->dtype;
    int dt = out_dtype;
    if (dt < 0) {
        dt = trr_op_allows(op, in, in) ? (int)in : -1;
        for (int s = 0; dt < 0 && s < d->n_signatures; s++)
            if (d->signatures[s].in == in) dt = (int)d->signatures[s].out;
    }
    if (dt < 0 || dt >= TRR_DTYPE_COUNT || !trr_op_allows(op, in, (trr_dtype)dt)) {
        const char *iname = "?", *oname = "?";
        trr_dtype_name(in, &iname);
        if (dt >= 0) trr_dtype_name((trr_dtype)dt, &oname);
        return trr_error(NULL, TRR_ERR_DTYPE, "%s does not take %s%s%s", d->name, iname, dt >= 0 ? " -> " : "",
                         dt >= 0 ? oname : " inputs");
    }
    int64_t shape[TRR_MAX_DIMS] = {0};
    int ndim = 0;
    if (d->shape == TRR_SHAPE_ELEMENTWISE || d->shape == TRR_SHAPE_ATTENTION) {
        /* any rank: the inputs' shape; attention's o: q's [B,Hq,Sq,D] (its lse, [B,Hq,Sq] f32, is the caller's) */
        ndim = inputs[0]->ndim;
        memcpy(shape, inputs[0]->shape, sizeof shape);
    } else {
        int64_t dims[4] = {1, 0, 0, 0}, batch = 0; /* by trr_dim: one, rows, cols, k */
        int batched = 0;
        for (int i = 0; i < d->n_inputs; i++)
            TRR_TRY(read_dims(d, trr_slot_of_operand(d->n_inputs, i), inputs[i], dims, &batched, &batch));
        const trr_operand_rule *z = &d->operand[TRR_SLOT_Z];
        if (batched) shape[ndim++] = batch;
        if (z->vector) {
            shape[ndim++] = dims[z->cols];
        } else {
            for (int p = 1; p < z->planes; p++) shape[ndim++] = z->planes;
            shape[ndim++] = dims[z->rows];
            shape[ndim++] = dims[z->cols];
        }
    }
    *out_ndim = ndim;
    memcpy(out_shape, shape, sizeof shape);
    *out_out_dtype = (trr_dtype)dt;
    return TRR_OK;
}
