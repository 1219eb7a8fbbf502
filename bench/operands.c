/* One benchmark case laid out on the device: packed operands at offset 0 (the layout a caller who wants speed
 * uses), random inputs kept on the host for the check. */
#include "bench.h"

#include "half.h"
#include "layout.h"
#include "random.h"

#include <stdlib.h>
#include <string.h>

static trr_status operand_make(trr_context *ctx, trr_bench_operand *o, trr_dtype dt, int64_t count, int input) {
    size_t es = 1;
    TRR_TRY(trr_dtype_size(dt, &es));
    o->dtype = dt;
    o->count = count;
    o->bytes = (size_t)count * es;
    if (input) {
        o->host = malloc(o->bytes ? o->bytes : 1);
        if (!o->host) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "bench: %zu bytes of host memory", o->bytes);
    }
    return trr_buffer_create(ctx, o->bytes ? o->bytes : 1, &o->buf);
}

trr_status trr_bench_setup_create(trr_context *ctx, const trr_case *c, uint64_t seed, trr_bench_setup *out) {
    if (!ctx || !c || !out) return TRR_ERR_INVALID_ARGUMENT;
    trr_bench_setup s = {.tcase = *c};
    s.tcase.layout = TRR_LAYOUT_PACKED;
    trr_case_views views;
    trr_status st = trr_case_views_make(&s.tcase, &views);
    if (st != TRR_OK) return st;
    s.n_inputs = views.n_inputs;
    uint64_t rng = seed ^ 0x5EED5EED12345678ull;
    for (int i = 0; i < TRR_CASE_SLOTS && st == TRR_OK; i++) {
        s.has[i] = views.has[i];
        if (!s.has[i]) continue;
        const int input = !trr_case_slot_is_output(i);
        st = operand_make(ctx, &s.op[i], views.v[i].dtype, trr_stored_extent(&views.v[i]), input);
        if (st == TRR_OK && input) {
            trr_rng_fill(&rng, c->op, s.op[i].dtype, s.op[i].host, s.op[i].count);
            st = trr_buffer_write(ctx, s.op[i].buf, 0, s.op[i].host, s.op[i].bytes);
        }
        if (st == TRR_OK) st = trr_stored_tensor(&views.v[i], s.op[i].buf, &s.t[i]);
    }
    if (st == TRR_OK) st = trr_synchronize(ctx);
    if (st != TRR_OK) {
        trr_bench_setup_destroy(&s);
        return st;
    }
    *out = s;
    return TRR_OK;
}

static void operand_free(trr_bench_operand *o) {
    if (o->buf) trr_buffer_destroy(o->buf);
    free(o->host);
    memset(o, 0, sizeof *o);
}

void trr_bench_setup_destroy(trr_bench_setup *s) {
    if (!s) return;
    for (int i = 0; i < TRR_CASE_SLOTS; i++) operand_free(&s->op[i]);
}

trr_status trr_bench_setup_call(trr_context *ctx, const trr_bench_setup *s) {
    return trr_case_call(ctx, &s->tcase, s->t, 0);
}
