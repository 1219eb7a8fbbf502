/*
 * The row-norm shape rule: it threads over rows and calls, for each row, the C function a small table pairs with
 * the op's kernel stem and entry point (its definition's). The op reaches this file as data (its stem, its name),
 * so a new op of the rule needs a table entry and no dispatch code.
 *
 * Row norms make two sweeps over a row: the sums, then the output. Each sweep goes through an f32 tile of
 * TILE elements (f16 and bf16 widened there; f32 rows used in place), so a row of any length costs L1-sized
 * scratch, and the output is rounded once, on store. Sums are kept in LANES independent double lanes: the
 * loops vectorise, and rows of 2^20 elements keep f32-level accuracy.
 *
 * layer_norm sums x - x0 and (x - x0)^2, where x0 is the row's first element: a constant row gives exactly
 * zero for both, hence exactly b (docs/ops.md), and the shifted sums do not cancel when the mean is large
 * against the spread. The output is formed from the same shifted values: y = ((x - x0) - m1) * inv * w + b,
 * where m1 is the mean of x - x0.
 */
#include "cpu.h"
#include "cpu_math.h"
#include "op_table.h"
#include "vmath.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TILE 256
#define LANES 8
#define VEC 16 /* the fixed trip count GCC -O2 (very-cheap cost model) will vectorise */

/* What the row sweep needs of a call, resolved once. */
typedef struct norm_job {
    const trr_call *call;
    float eps;
} norm_job;

/* A row of the call, written through its output view. */
typedef void (*norm_row_fn)(const norm_job *job, int64_t r);

/* The f32 view of m elements of an operand starting at element c of the run at base index i0 with element
 * stride es: a pointer into the buffer for contiguous f32, else a widened copy in tile. */
static const float *f32_run(const trr_operand *V, int64_t i0, int64_t es, int64_t c, int64_t m, float *tile) {
    if (es == 1) {
        if (V->dtype == TRR_F32) return (const float *)V->mem + i0 + c;
        trr_cpu_widen_at(V->mem, V->dtype, i0 + c, tile, m);
        return tile;
    }
    for (int64_t i = 0; i < m; i++) trr_cpu_load_f32(V->mem, V->dtype, i0 + (c + i) * es, tile + i, 1);
    return tile;
}

static const float *x_run(const trr_call *call, int64_t r, int64_t c, int64_t m, float *tile) {
    return f32_run(&call->x, call->x.offset + r * call->x.stride0, 1, c, m, tile);
}

/* sum of x^2 over n values */
static double sum_sq(const float *x, int64_t n) {
    double acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += (double)x[i + j] * (double)x[i + j];
    double s = 0.0;
    for (; i < n; i++) s += (double)x[i] * (double)x[i];
    for (int j = 0; j < LANES; j++) s += acc[j];
    return s;
}

/* sums of d = x - x0 and d^2 over n values */
static void sum_shifted(const float *x, int64_t n, double x0, double *s1, double *s2) {
    double a1[LANES] = {0}, a2[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            double d = (double)x[i + j] - x0;
            a1[j] += d;
            a2[j] += d * d;
        }
    double t1 = 0.0, t2 = 0.0;
    for (; i < n; i++) {
        double d = (double)x[i] - x0;
        t1 += d;
        t2 += d * d;
    }
    for (int j = 0; j < LANES; j++) t1 += a1[j], t2 += a2[j];
    *s1 += t1;
    *s2 += t2;
}

/* o = x * inv * w; the output never overlaps an input (validation refuses it for these ops) */
static void rms_out(float *restrict o, const float *restrict x, const float *restrict w, float inv, int64_t m) {
    int64_t i = 0;
    for (; i + VEC <= m; i += VEC)
        for (int j = 0; j < VEC; j++) o[i + j] = x[i + j] * inv * w[i + j];
    for (; i < m; i++) o[i] = x[i] * inv * w[i];
}

/* o = ((x - x0) - m1) * inv * w + b */
static void layer_out(float *restrict o, const float *restrict x, const float *restrict w,
                      const float *restrict b, float x0, float m1, float inv, int64_t m) {
    int64_t i = 0;
    for (; i + VEC <= m; i += VEC)
        for (int j = 0; j < VEC; j++) o[i + j] = ((x[i + j] - x0) - m1) * inv * w[i + j] + b[i + j];
    for (; i < m; i++) o[i] = ((x[i] - x0) - m1) * inv * w[i] + b[i];
}

/* Where m outputs at column c of row r are formed: the buffer itself for f32 output, else tile, which out_flush
 * then rounds into the buffer. */
static float *out_run(const trr_call *call, int64_t r, int64_t c, float *tile) {
    if (call->z.dtype == TRR_F32) return (float *)call->z.mem + call->z.offset + r * call->z.stride0 + c;
    return tile;
}

static void out_flush(const trr_call *call, int64_t r, int64_t c, int64_t m, const float *o) {
    if (call->z.dtype != TRR_F32)
        trr_cpu_narrow_at(o, call->z.dtype, call->z.mem, call->z.offset + r * call->z.stride0 + c, m);
}

static void rms_norm_row(const norm_job *job, int64_t r) {
    const trr_call *call = job->call;
    const int64_t n = call->cols;
    float xt[TILE], wt[TILE], ot[TILE];
    double ss = 0.0;
    for (int64_t c = 0; c < n; c += TILE) {
        const int64_t m = n - c < TILE ? n - c : TILE;
        ss += sum_sq(x_run(call, r, c, m, xt), m);
    }
    const float inv = (float)(1.0 / sqrt(ss / (double)n + (double)job->eps));
    for (int64_t c = 0; c < n; c += TILE) {
        const int64_t m = n - c < TILE ? n - c : TILE;
        const float *x = x_run(call, r, c, m, xt);
        const float *w = f32_run(&call->y, call->y.offset, call->y.stride0, c, m, wt);
        float *o = out_run(call, r, c, ot);
        rms_out(o, x, w, inv, m);
        out_flush(call, r, c, m, o);
    }
}

static void layer_norm_row(const norm_job *job, int64_t r) {
    const trr_call *call = job->call;
    const int64_t n = call->cols;
    float xt[TILE], wt[TILE], bt[TILE], ot[TILE];
    float x0;
    trr_cpu_load_f32(call->x.mem, call->x.dtype, call->x.offset + r * call->x.stride0, &x0, 1);
    double s1 = 0.0, s2 = 0.0;
    for (int64_t c = 0; c < n; c += TILE) {
        const int64_t m = n - c < TILE ? n - c : TILE;
        sum_shifted(x_run(call, r, c, m, xt), m, (double)x0, &s1, &s2);
    }
    const double m1 = s1 / (double)n;
    double var = s2 / (double)n - m1 * m1;
    if (var < 0.0) var = 0.0;
    const float inv = (float)(1.0 / sqrt(var + (double)job->eps));
    const float mf = (float)m1;
    for (int64_t c = 0; c < n; c += TILE) {
        const int64_t m = n - c < TILE ? n - c : TILE;
        const float *x = x_run(call, r, c, m, xt);
        const float *w = f32_run(&call->y, call->y.offset, call->y.stride0, c, m, wt);
        const float *b = f32_run(&call->u, call->u.offset, call->u.stride0, c, m, bt);
        float *o = out_run(call, r, c, ot);
        layer_out(o, x, w, b, x0, mf, inv, m);
        out_flush(call, r, c, m, o);
    }
}

/* The C "kernels": a stem and an entry point, as the op table names them, and the function that is that entry
 * point's body for one row. */
static const struct {
    const char *stem, *entry;
    norm_row_fn row;
} row_kernels[] = {
    {"norm", "rms_norm", rms_norm_row},
    {"norm", "layer_norm", layer_norm_row},
};

static norm_row_fn find_row_kernel(const trr_op_desc *d) {
    for (size_t i = 0; i < sizeof row_kernels / sizeof row_kernels[0]; i++)
        if (trr_cpu_kernel_named(d, row_kernels[i].stem, row_kernels[i].entry)) return row_kernels[i].row;
    return NULL;
}

typedef struct row_task {
    const norm_job *job;
    norm_row_fn row;
} row_task;

static void rows_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const row_task *t = arg;
    for (int64_t r = begin; r < end; r++) t->row(t->job, r);
}

/* The row-norm rule: every row on its own, rows spread over the pool. */
static trr_status run_row_norm(trr_context *ctx, const trr_call *call, norm_row_fn row) {
    norm_job job = {call, (float)call->params[TRR_NORM_PARAM_EPS]};
    row_task t = {&job, row};
    int64_t grain = 65536 / call->cols; /* two sweeps of a few operations per element: memory bound */
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows, grain < 1 ? 1 : grain, rows_task, &t);
    return TRR_OK;
}

int trr_cpu_norm_provides(const trr_op_desc *d, char *why, size_t cap) {
    if (find_row_kernel(d)) return 1;
    snprintf(why, cap, "no row function %s/%s among the CPU's row norms", d->kernel ? d->kernel : "-", d->name);
    return 0;
}

trr_status trr_cpu_row_norm(trr_context *ctx, const trr_call *call) {
    return run_row_norm(ctx, call, find_row_kernel(trr_op_desc_get(call->op)));
}
