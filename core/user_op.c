/* trr_op_define: registers a user's op, whose definition core/op_def.c checks and makes into its op-table row
 * (user_op.h), and what the backends' user paths read of it. */
#include "user_op.h"

#include "dynlib.h"
#include "tune.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, __VA_ARGS__)

static pthread_mutex_t define_lock = PTHREAD_MUTEX_INITIALIZER;

const trr_user_op *trr_user_op_get(trr_op op) {
    const trr_op_desc *d = trr_op_desc_get(op);
    return d ? d->user : NULL;
}

trr_status trr_op_count(int *out_count) {
    if (!out_count) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_count is NULL");
    *out_count = trr_op_desc_count();
    return TRR_OK;
}

/* A user op's one benchmark, in its first dtype, GB/s over every operand's bytes: one packed vector
 * (element-wise), or rows of N at M = TRR_BENCH_ROWS_M (a row op, at the row norms' sizes). A built-in's
 * benchmarks are declared beside its definition (core/op_table.c). */
static void add_bench(trr_user_op *u) {
    const trr_dtype dtype = u->def.dtypes[0];
    const char *dt = "?";
    size_t es = 4;
    trr_dtype_name(dtype, &dt);
    trr_dtype_size(dtype, &es);
    snprintf(u->bench_name, sizeof u->bench_name, "%s_%s", u->name, dt);
    if (u->row_op) {
        int mats = 0, vecs = 0;
        for (int i = 0; i < u->n_operands; i++) vecs += u->vector[i], mats += !u->vector[i];
        snprintf(u->bench_title, sizeof u->bench_title, "%s %s, M = %d (GB/s = (%dMN + %dN)/t)", u->name, dt,
                 TRR_BENCH_ROWS_M, (int)es * mats, (int)es * vecs);
        const trr_bench_sizes rows = {.list = {{1024}, {4096}, {8192}, {16384}}};
        u->bench = (trr_op_bench){u->bench_name, u->bench_title, dtype, dtype, TRR_EPI_NONE, TRR_SIZING_ROWS, 0, rows,
                                  rows};
    } else {
        snprintf(u->bench_title, sizeof u->bench_title, "%s %s (GB/s = %dn/t)", u->name, dt, (int)es * u->n_operands);
        u->bench = (trr_op_bench){u->bench_name, u->bench_title, dtype, dtype, TRR_EPI_NONE, TRR_SIZING_VECTOR, 0,
                                  {.list = {{(int64_t)1 << 24}}},
                                  {.from = (int64_t)1 << 12, .to = (int64_t)1 << 27, .factor = 2}};
    }
    u->desc.benches = &u->bench;
    u->desc.n_benches = 1;
    u->desc.bench_work = TRR_WORK_BYTES;
}

static trr_status define_op(const trr_op_def *def, trr_op_row_reference_fn row_reference, trr_op_cpu_row_fn row_cpu,
                           trr_op *out_op) {
    pthread_mutex_lock(&define_lock);
    trr_status st = TRR_OK;
    const int n = trr_op_desc_count() - TRR_OP_COUNT;
    trr_user_op *u = NULL;
    if (n == TRR_MAX_USER_OPS) st = BAD("trr_op_define: %d user ops are defined already", TRR_MAX_USER_OPS);
    else if (!(u = calloc(1, sizeof *u))) st = trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "trr_op_define: no host memory");
    if (st == TRR_OK) {
        u->op = (trr_op)(TRR_OP_COUNT + n);
        st = trr_op_def_convert(def, row_reference, row_cpu, NULL, u);
    }
    if (st == TRR_OK) {
        add_bench(u);
        trr_op_desc_add(&u->desc); /* room was checked above, under the lock */
        *out_op = u->op;
        trr_tune_reset(); /* the tuning database is read again: its entries of this op's name now match it */
    } else {
        trr_user_op_free(u);
    }
    pthread_mutex_unlock(&define_lock);
    return st;
}

trr_status trr_op_define(const trr_op_def *def, trr_op *out_op) {
    if (!def || !out_op) return BAD("trr_op_define: def or out_op is NULL");
    return define_op(def, NULL, NULL, out_op);
}

trr_status trr_op_define_row_op(const trr_op_def *def, trr_op_row_reference_fn row_reference, trr_op_cpu_row_fn cpu,
                                trr_op *out_op) {
    if (!def || !row_reference || !out_op) return BAD("trr_op_define_row_op: def, row_reference or out_op is NULL");
    return define_op(def, row_reference, cpu, out_op);
}

/* ---- what the backends' user paths read ---- */

void trr_user_defines(const trr_user_op *u, const trr_call *call, int threads, char *out, size_t cap) {
    int tiles[TRR_MAX_TILE_PARAMS];
    trr_user_tiles(u, &call->config, tiles);
    size_t at = (size_t)snprintf(out, cap, "-DTRR_DTYPE=%d -DTRR_THREADS=%d", (int)call->z.dtype, threads);
    for (int t = 0; t < u->def.n_tiles && at < cap; t++)
        at += (size_t)snprintf(out + at, cap - at, " -D%s=%d", u->tile_names[t], tiles[t]);
}

int trr_user_operands(const trr_user_op *u, const trr_call *call, const trr_operand *out[TRR_MAX_ROW_OPERANDS]) {
    const trr_operand *slots[TRR_SLOTS] = {&call->x, &call->y, &call->z, &call->u, &call->w};
    for (int i = 0; i < u->n_operands; i++) out[i] = slots[trr_slot_of_operand(u->n_inputs, i)];
    return u->n_operands;
}

trr_status trr_user_need_code(trr_context *ctx, const trr_user_op *u, trr_user_api api, const char *backend) {
    const int has = api == TRR_USER_VULKAN ? u->spirv != NULL : u->source[api] != NULL;
    if (has) return TRR_OK;
    return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s: %s has no kernel here: its definition gives no %s code",
                     backend, u->name, api == TRR_USER_CUDA ? "CUDA" : api == TRR_USER_OPENCL ? "OpenCL" : "Vulkan");
}

trr_status trr_user_prepare(trr_context *ctx, const trr_user_op *u, const trr_call *call, trr_user_api api,
                            const char *backend, int most_threads, int64_t groups[3], int *out_threads) {
    TRR_TRY(trr_user_need_code(ctx, u, api, backend));
    TRR_TRY(trr_user_launch(ctx, u, call, groups, out_threads));
    if (most_threads > 0 && *out_threads > most_threads)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s: %s: %d threads per group, the device takes up to %d", backend,
                         u->name, *out_threads, most_threads);
    return TRR_OK;
}

trr_status trr_ops_library_load(const char *path, int *out_defined) {
    if (!path) return BAD("trr_ops_library_load: path is NULL");
    const char *names[] = {path, NULL};
    char reason[1024];
    void *lib = trr_dynlib_open(names, reason, sizeof reason);
    if (!lib) return trr_error(NULL, TRR_ERR_IO, "ops library %s: %s", path, reason);
    trr_ops_register_fn reg = NULL;
    void *sym = trr_dynlib_sym(lib, TRR_OPS_REGISTER_SYMBOL, reason, sizeof reason);
    memcpy(&reg, &sym, sizeof reg); /* a data pointer to a function pointer, as dlsym's users must */
    if (!reg) return trr_error(NULL, TRR_ERR_IO, "ops library %s: %s", path, reason);
    const int before = trr_op_desc_count();
    const trr_status st = reg(); /* a failed trr_op_define in it has left its reason */
    if (out_defined) *out_defined = trr_op_desc_count() - before;
    return st;
}

trr_status trr_user_run_rows(trr_context *ctx, const trr_call *call) {
    if (call->rows <= 1) return ctx->backend->run(ctx, call);
    for (int64_t r = 0; r < call->rows; r++) {
        trr_call row = *call;
        row.rows = 1;
        row.x.offset += r * call->x.stride0;
        if (row.y.mem) row.y.offset += r * call->y.stride0;
        row.z.offset += r * call->z.stride0;
        TRR_TRY(ctx->backend->run(ctx, &row));
    }
    return TRR_OK;
}
