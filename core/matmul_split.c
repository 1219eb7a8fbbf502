/* Split-K's driver, the same on every backend that runs the slices as a batch (core/matmul_split.h). */
#include "matmul_split.h"

trr_status trr_matmul_run_split(trr_context *ctx, const trr_call *c, const trr_matmul_split_ops *ops) {
    const trr_matmul_k_split ks = trr_matmul_call_slices(c);
    const int64_t slices = trr_matmul_k_slice_count(ks);
    if (slices < 2) {
        trr_call whole = *c;
        whole.config.split_k = 1;
        return ops->run(ctx, &whole);
    }
    if (c->batch > 1) {
        for (int64_t b = 0; b < c->batch; b++) {
            const trr_call one = trr_matmul_batch_entry(c, b);
            TRR_TRY(trr_matmul_run_split(ctx, &one, ops));
        }
        return TRR_OK;
    }
    void *partials = NULL;
    TRR_TRY(ops->partials(ctx, (size_t)(slices * c->rows * c->cols) * sizeof(float), &partials));
    trr_call full, rest;
    trr_matmul_slice_calls(c, ks, partials, &full, &rest);
    TRR_TRY(ops->run(ctx, &full));
    if (ks.rest) TRR_TRY(ops->run(ctx, &rest));
    return ops->add(ctx, c, partials, slices);
}
