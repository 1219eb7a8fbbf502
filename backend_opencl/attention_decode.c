/* attention's decode form on OpenCL (kernels/opencl/attention_decode.cl, which says how it works; the rules both
 * portable backends share are core/attention_decode.h): its heuristic, its limits and its launches, the chunks of
 * the keys merged by attention.c's combine launch. attention.c hands a call here where split_k >= 2 selects it. */
#include "attention_decode.h"

#include "opencl.h"

#include <stdio.h>

/* attention.cl's build options the merge compiles that program with: the per-head kernel's heuristic ones on a
 * CPU device (block_m 16, 64 work-items), so PoCL compiles that program once for both paths. */
#define COMBINE_OPTIONS "-cl-std=CL1.2 -DBMMAX=16 -DT=64 -DDMAX=256"

int trr_cl_attention_decode_choose(trr_context *ctx, trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    trr_config *c = &call->config;
    if (c->variant != TRR_VARIANT_AUTO && c->variant != TRR_VARIANT_SIMT) return 0;
    if (c->split_k == 1 || (!c->split_k && !(dev->info.is_gpu && trr_attention_decode_wanted(call)))) return 0;
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    if (!c->threads && dev->max_work_group < 128) c->threads = (int)dev->max_work_group;
    trr_attention_decode_fill(call, dev->info.compute_units, dev->local_memory, c);
    return 1;
}

trr_status trr_cl_attention_decode_check(trr_context *ctx, const trr_call *call) {
    const trr_cl_dev *dev = ctx->dev;
    char why[320];
    if (!trr_attention_decode_config_ok(call, dev->local_memory, dev->max_work_group, dev->loop_budget, why,
                                        sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: attention: %s", why);
    return TRR_OK;
}

#define ARG(i, x) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(x), &(x)))

/* The decode kernel's launch over (row blocks, kv heads, batch x chunks), writing o and lse (one chunk) or the
 * chunks' partial results to part and part_lse. */
static trr_status launch(trr_context *ctx, const trr_call *call, int64_t keys, int64_t nsplit, cl_mem part,
                         cl_mem part_lse) {
    const trr_attention_shape *a = &call->attn;
    const trr_config *cfg = &call->config;
    const int64_t slots = cfg->threads / (a->head_dim / 8);
    char options[192] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DT=%d -DBM=%d -DNK=%d", cfg->threads, cfg->block_m,
               (int)(cfg->block_n / slots));
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "attention_decode.cl", options, "attention_decode", &k));
    /* without lse the kernel is handed o's buffer for it, and never writes it */
    const cl_mem mems[7] = {call->x.mem, call->y.mem, call->u.mem, call->z.mem,
                            a->has_lse ? call->w.mem : call->z.mem, part, part_lse};
    for (int i = 0; i < 7; i++) ARG(i, mems[i]);
    TRR_TRY(trr_cl_set_arg(ctx, k, 7, (size_t)trr_attention_decode_local_bytes(cfg, a->head_dim), NULL));
    const trr_operand *views[5] = {&call->x, &call->y, &call->u, &call->z, &call->w};
    for (int i = 0; i < 5; i++) {
        const cl_long vw[4] = {views[i]->offset, views[i]->batch_stride, views[i]->stride1, views[i]->stride0};
        for (int j = 0; j < 4; j++) ARG(8 + 4 * i + j, vw[j]);
    }
    const cl_int ints[11] = {(cl_int)a->heads_q, (cl_int)(a->heads_q / a->heads_kv), (cl_int)a->seq_q,
                             (cl_int)a->seq_kv, (cl_int)a->head_dim, cfg->block_n, a->causal, a->has_lse,
                             (cl_int)nsplit, (cl_int)keys, nsplit > 1};
    for (int i = 0; i < 11; i++) ARG(28 + i, ints[i]);
    const cl_float qscale = (cl_float)((double)a->scale * 1.44269504088896340736);
    ARG(39, qscale);
    const cl_int dt = trr_cl_dtype_code(call->x.dtype);
    ARG(40, dt);
    const size_t global[3] = {(size_t)trr_attention_decode_row_blocks(call) * (size_t)cfg->threads,
                              (size_t)a->heads_kv, (size_t)a->batch * (size_t)nsplit};
    const size_t local[3] = {(size_t)cfg->threads, 1, 1};
    return trr_cl_launch(ctx, k, 3, global, local);
}

trr_status trr_cl_attention_decode_run(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    const trr_attention_shape *a = &call->attn;
    int64_t keys, nsplit;
    trr_attention_decode_chunks(call, dev->loop_budget, &keys, &nsplit);
    if (nsplit == 1) return launch(ctx, call, keys, 1, call->z.mem, call->z.mem); /* part: never written */
    const size_t rows = (size_t)(a->batch * a->heads_q * a->seq_q);
    cl_mem part, part_lse;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->partials, (size_t)nsplit * rows * (size_t)a->head_dim * 4,
                               "attention's chunks", &part));
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->partial_sums, (size_t)nsplit * rows * 4, "attention's chunk sums",
                               &part_lse));
    trr_status st = launch(ctx, call, keys, nsplit, part, part_lse);
    if (st == TRR_OK)
        st = trr_cl_attention_combine(ctx, call, COMBINE_OPTIONS, part, part_lse,
                                      a->has_lse ? call->w.mem : call->z.mem, (cl_int)nsplit);
    return st;
}
