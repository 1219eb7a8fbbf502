/*
 * The element-wise shape rule (copy, add, gelu, silu) over the normalised rows x cols form: ops that move bytes
 * (trr_op_desc.bytewise) as a byte move, the others through the f32 loop `kernels` below pairs with the op's
 * stem and name. The work is cut into segments
 * of at most block_n elements of one row, so one long vector (rows == 1, the packed case) and many short rows
 * both spread over the pool. f32 operands are used in place; other dtypes go through a small f32 tile so each
 * element is rounded exactly once, on store.
 */
#include "cpu.h"
#include "cpu_math.h"
#include "vmath.h"

#include <stdio.h>
#include <string.h>

#define TILE 256 /* f32 staging tile for f16 operands: 1 KiB, stays in L1 */
#define VEC 16   /* the fixed trip count GCC -O2 (very-cheap cost model) will vectorise */

/* z = f(x) or f(x, y) on n f32 elements (y is NULL for one-input ops). z may alias x or y exactly: each block
 * reads its inputs before it writes. */
typedef void (*ew_f32_fn)(const float *x, const float *y, float *z, int64_t n);

typedef struct ew_job {
    const trr_call *call;
    ew_f32_fn fn;    /* NULL for a byte move */
    int binary;      /* reads y */
    int64_t seg;     /* elements per segment */
    int64_t per_row; /* segments per row */
} ew_job;

/* z = x + y on f32. Each block reads its inputs before it writes, so z may alias x or y exactly. */
static void add_f32(const float *x, const float *y, float *z, int64_t n) {
    int64_t i = 0;
    for (; i + VEC <= n; i += VEC) {
        float t[VEC];
        for (int j = 0; j < VEC; j++) t[j] = x[i + j] + y[i + j];
        for (int j = 0; j < VEC; j++) z[i + j] = t[j];
    }
    for (; i < n; i++) z[i] = x[i] + y[i];
}

/* z = f(x) on f32 for the unary ops, vectorised (vmath.h); z may alias x exactly. */
static void gelu_f32(const float *x, const float *y, float *z, int64_t n) {
    (void)y;
    trr_cpu_gelu_f32(x, z, n);
}

static void silu_f32(const float *x, const float *y, float *z, int64_t n) {
    (void)y;
    trr_cpu_silu_f32(x, z, n);
}

/* cast (docs/ops.md, cast): the value itself; the segment's load widens x exactly and its store rounds once into
 * z's dtype (cpu_math.h: the 8-bit floats saturate). z never aliases x here (different dtypes do not overlap). */
static void cast_f32(const float *x, const float *y, float *z, int64_t n) {
    (void)y;
    if (z != x) memcpy(z, x, (size_t)n * sizeof *z);
}

/* The f32 loops by stem and entry (the op's definition): stem "elementwise" for add, gelu and silu, and cast's
 * own stem, whose input and output dtypes differ (the segments below convert whatever the dtypes). */
static const struct {
    const char *stem, *entry;
    ew_f32_fn fn;
} kernels[] = {
    {"elementwise", "add", add_f32},
    {"elementwise", "gelu", gelu_f32},
    {"elementwise", "silu", silu_f32},
    {"cast", "cast", cast_f32},
};

static ew_f32_fn find_kernel(const trr_op_desc *d) {
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (trr_cpu_kernel_named(d, kernels[i].stem, kernels[i].entry)) return kernels[i].fn;
    return NULL;
}

int trr_cpu_elementwise_provides(const trr_op_desc *d, char *why, size_t cap) {
    if (d->bytewise || find_kernel(d)) return 1;
    snprintf(why, cap, "no f32 loop %s/%s among the CPU's element-wise kernels", d->kernel ? d->kernel : "-",
             d->name);
    return 0;
}

/* One segment: n elements starting at column c of row r. */
static void segment(const ew_job *job, int64_t r, int64_t c, int64_t n) {
    const trr_call *call = job->call;
    const trr_operand *X = &call->x, *Y = &call->y, *Z = &call->z;
    int64_t xi = X->offset + r * X->stride0 + c;
    int64_t zi = Z->offset + r * Z->stride0 + c;
    if (!job->fn) {
        size_t es = trr_cpu_dtype_bytes(Z->dtype);
        unsigned char *d = (unsigned char *)Z->mem + (size_t)zi * es;
        const unsigned char *s = (const unsigned char *)X->mem + (size_t)xi * es;
        if (d != s) memmove(d, s, (size_t)n * es); /* memmove: exact aliasing is allowed */
        return;
    }
    int64_t yi = job->binary ? Y->offset + r * Y->stride0 + c : 0;
    int all_f32 = X->dtype == TRR_F32 && Z->dtype == TRR_F32 && (!job->binary || Y->dtype == TRR_F32);
    if (all_f32) {
        const float *x = (const float *)X->mem + xi;
        float *z = (float *)Z->mem + zi;
        job->fn(x, job->binary ? (const float *)Y->mem + yi : NULL, z, n);
        return;
    }
    float a[TILE], b[TILE];
    for (int64_t done = 0; done < n; done += TILE) {
        int64_t m = n - done < TILE ? n - done : TILE;
        trr_cpu_widen_at(X->mem, X->dtype, xi + done, a, m);
        if (job->binary) trr_cpu_widen_at(Y->mem, Y->dtype, yi + done, b, m);
        job->fn(a, job->binary ? b : NULL, a, m);
        trr_cpu_narrow_at(a, Z->dtype, Z->mem, zi + done, m);
    }
}

static void ew_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const ew_job *job = arg;
    const trr_call *call = job->call;
    for (int64_t u = begin; u < end; u++) {
        int64_t r = u / job->per_row;
        int64_t c = (u % job->per_row) * job->seg;
        int64_t n = call->cols - c < job->seg ? call->cols - c : job->seg;
        segment(job, r, c, n);
    }
}

trr_status trr_cpu_elementwise(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    ew_job job;
    job.call = call;
    job.fn = d->bytewise ? NULL : find_kernel(d);
    if (!d->bytewise && !job.fn) /* trr_cpu_supports refuses it first */
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu: no element-wise kernel %s", d->name);
    job.binary = d->n_inputs == 2;
    job.seg = call->config.block_n > 0 ? call->config.block_n : 16384;
    if (job.seg > call->cols) job.seg = call->cols;
    job.per_row = (call->cols + job.seg - 1) / job.seg;
    /* gelu and silu each take an exp and a divide an element, so it pays to split such ops finer than a pure
     * memory op. */
    int64_t want = d->transcendental ? 4096 : 65536; /* elements worth waking a thread for */
    int64_t grain = want / job.seg;
    if (grain < 1) grain = 1;
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), call->rows * job.per_row, grain, ew_task, &job);
    return TRR_OK;
}
