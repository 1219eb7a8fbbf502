/*
 * matmul, C = act(A·B), on the system BLAS (blas.h: OpenBLAS's sgemm) in the tile vocabulary every backend uses.
 *
 * The output is cut into BLOCK_M x BLOCK_N tiles, visited in the grouped order of docs/ops.md, and a batch
 * multiplies them (item = batch entry * tiles + tile): the pool runs the items, each one a GEMM on one thread, while
 * OpenBLAS's own threads stay off (blas.h), so there are never more threads than cores. A tile is one sgemm per
 * BLOCK_K slice of the reduction, each slice added onto the last in f32: however the library sums inside one call,
 * the rounding error grows with BLOCK_K + K / BLOCK_K rather than with K, which keeps depths of 2^17 inside the
 * 1e-5 bound (docs/ops.md, "Every bound holds at every size"). The epilogue then runs over the tile while it is
 * still in cache, one vectorised pass (vmath.h), followed for half outputs by the single rounding store.
 *
 * f32 operands go to the BLAS where they are, with their transposition and leading dimension (validation
 * guarantees the unit inner stride and leading dimensions the BLAS takes). f16 and bf16 operands are widened,
 * exactly, into per-worker f32 copies of the tile's BLOCK_K slice of A and of B, which the BLAS then reads: Debian's
 * OpenBLAS is built without its bf16 GEMM and has no f16 one, and the widening is a small part of the work next to
 * the slice's BLOCK_M x BLOCK_N x BLOCK_K multiply-adds. A half output is accumulated in a per-worker f32 tile.
 * Accumulation is genuine f32 throughout (no TF32-like shortcut exists on a CPU).
 *
 * split_k (core/matmul_split.h) runs K's slices as a batch of the same product into f32 partials the device keeps,
 * then adds them in slice order, applying the epilogue and the output's rounding once, as the GPU backends do:
 * the heuristic splits where the output tiles alone would leave cores idle and K is deep enough.
 */
#define _POSIX_C_SOURCE 200809L

#include "blas.h"
#include "cpu.h"
#include "cpu_math.h"
#include "grouped.h"
#include "half.h"
#include "matmul_split.h"
#include "op_table.h"
#include "vmath.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_LIMIT 4096  /* largest BLOCK_M / BLOCK_N / BLOCK_K accepted: keeps the per-worker scratch bounded */
#define MIN_TILE 128      /* the heuristic splits a dimension only down to this: smaller tiles cost more in packing */
#define HALF_BLOCK_K 512  /* the heuristic's K slice for half inputs: two f32 slices of a large tile stay a few MiB */
#define POOL_FLOPS 4e6    /* below this a matmul runs as one tile on the calling thread: waking the pool costs more */
/* OpenBLAS keeps a table of buffers per calling thread sized for the threads it was built for (64 in Debian's
 * package); at most this many pool threads call it at once. */
#define BLAS_CALLERS 64

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static int64_t cdiv(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

static int64_t round_up(int64_t v, int64_t m) {
    return cdiv(v, m) * m;
}

typedef struct mm_job {
    const trr_call *call;
    int64_t bm, bn, bk, group_m, npm, npn, items;
    int half_in, half_out; /* not f32: widened into (narrowed from) f32 tiles; 8-bit float inputs too */
    float scale;           /* 8-bit float inputs: scale_a * scale_b (docs/ops.md, matmul); else 1 */
    float *scratch;         /* per lane: A's slice and B's slice (half inputs), the f32 tile (half output) */
    int64_t scratch_floats; /* per lane */
    atomic_int_fast64_t next; /* the next item to run */
} mm_job;

/* The address of element idx of an operand's buffer. */
static void *element(const trr_operand *o, int64_t idx) {
    return (unsigned char *)o->mem + (size_t)idx * trr_cpu_dtype_bytes(o->dtype);
}

/* A[i0 .. i0+mb, k0 .. k0+kc] of the batch entry at element base, as the BLAS reads it: in place for f32, else
 * widened into dst (stored as the operand is: mb rows of kc, or kc rows of mb when A is transposed). */
static const float *a_slice(const trr_call *call, int64_t base, int64_t i0, int64_t mb, int64_t k0, int64_t kc,
                            float *dst, int64_t *ld) {
    const trr_operand *A = &call->x;
    const int64_t lda = A->stride0;
    if (A->dtype == TRR_F32) {
        *ld = lda;
        return (const float *)A->mem + base + (call->trans_a ? k0 * lda + i0 : i0 * lda + k0);
    }
    if (call->trans_a) {
        for (int64_t k = 0; k < kc; k++)
            trr_cpu_widen(element(A, base + (k0 + k) * lda + i0), A->dtype, dst + k * mb, mb);
        *ld = mb;
    } else {
        for (int64_t r = 0; r < mb; r++)
            trr_cpu_widen(element(A, base + (i0 + r) * lda + k0), A->dtype, dst + r * kc, kc);
        *ld = kc;
    }
    return dst;
}

/* B[k0 .. k0+kc, j0 .. j0+nb] likewise (kc rows of nb, or nb rows of kc when B is stored [N,K]). */
static const float *b_slice(const trr_call *call, int64_t base, int64_t j0, int64_t nb, int64_t k0, int64_t kc,
                            float *dst, int64_t *ld) {
    const trr_operand *B = &call->y;
    const int64_t ldb = B->stride0;
    if (B->dtype == TRR_F32) {
        *ld = ldb;
        return (const float *)B->mem + base + (call->trans_b ? j0 * ldb + k0 : k0 * ldb + j0);
    }
    if (call->trans_b) {
        for (int64_t c = 0; c < nb; c++)
            trr_cpu_widen(element(B, base + (j0 + c) * ldb + k0), B->dtype, dst + c * kc, kc);
        *ld = kc;
    } else {
        for (int64_t k = 0; k < kc; k++)
            trr_cpu_widen(element(B, base + (k0 + k) * ldb + j0), B->dtype, dst + k * nb, nb);
        *ld = nb;
    }
    return dst;
}

/* One item: tile (pm, pn) of batch entry b. */
static void run_tile(const mm_job *job, int64_t b, int64_t pm, int64_t pn, float *scratch) {
    const trr_call *call = job->call;
    const trr_operand *C = &call->z;
    const int64_t i0 = pm * job->bm, j0 = pn * job->bn;
    const int64_t mb = min64(job->bm, call->rows - i0), nb = min64(job->bn, call->cols - j0);
    const int64_t abase = call->x.offset + b * call->x.batch_stride, bbase = call->y.offset + b * call->y.batch_stride;
    const int64_t cbase = C->offset + b * C->batch_stride + i0 * C->stride0 + j0;
    float *pa = scratch, *pb = scratch + (job->half_in ? job->bm * job->bk : 0);
    float *acc = pb + (job->half_in ? job->bk * job->bn : 0);
    float *dst = job->half_out ? acc : (float *)C->mem + cbase;
    const int64_t ldd = job->half_out ? nb : C->stride0;
    for (int64_t k0 = 0; k0 < call->k; k0 += job->bk) {
        const int64_t kc = min64(job->bk, call->k - k0);
        int64_t lda, ldb;
        const float *a = a_slice(call, abase, i0, mb, k0, kc, pa, &lda);
        const float *bb = b_slice(call, bbase, j0, nb, k0, kc, pb, &ldb);
        trr_cpu_sgemm(call->trans_a, call->trans_b, mb, nb, kc, a, lda, bb, ldb, k0 ? 1.0f : 0.0f, dst, ldd);
    }
    if (call->epilogue == TRR_EPI_NONE && !job->half_out && job->scale == 1.0f) return;
    for (int64_t r = 0; r < mb; r++) {
        float *row = dst + r * ldd;
        if (job->scale != 1.0f) /* the per-tensor scales act on the sum, before the epilogue */
            for (int64_t t = 0; t < nb; t++) row[t] *= job->scale;
        trr_cpu_epilogue_f32(row, nb, call->epilogue, call->alpha);
        if (job->half_out) trr_cpu_narrow(row, C->dtype, element(C, cbase + r * C->stride0), nb);
    }
}

/* A lane takes items from the shared counter until none is left; lanes < BLAS_CALLERS, each with its scratch. */
static void lane_task(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    mm_job *job = arg;
    const int64_t per_batch = job->npm * job->npn;
    for (int64_t lane = begin; lane < end; lane++) {
        float *scratch = job->scratch ? job->scratch + lane * job->scratch_floats : NULL;
        for (int64_t item; (item = atomic_fetch_add(&job->next, 1)) < job->items;) {
            int64_t pm, pn;
            trr_grouped_block(item % per_batch, job->npm, job->npn, job->group_m, &pm, &pn);
            run_tile(job, item / per_batch, pm, pn, scratch);
        }
    }
}

/* The product with split_k 1: every tile of every batch entry an item of the pool. */
static trr_status run_whole(trr_context *ctx, const trr_call *call) {
    mm_job job;
    memset(&job, 0, sizeof job);
    job.call = call;
    /* blocks larger than the problem are the problem */
    job.bm = min64(call->config.block_m, call->rows);
    job.bn = min64(call->config.block_n, call->cols);
    job.bk = min64(call->config.block_k, call->k);
    job.group_m = call->config.group_m;
    job.npm = cdiv(call->rows, job.bm);
    job.npn = cdiv(call->cols, job.bn);
    job.items = (call->batch > 1 ? call->batch : 1) * job.npm * job.npn;
    job.half_in = call->x.dtype != TRR_F32;
    job.half_out = call->z.dtype != TRR_F32;
    job.scale = trr_dtype_is_f8(call->x.dtype) ? (float)call->params[TRR_MATMUL_PARAM_SCALE_A] *
                                                     (float)call->params[TRR_MATMUL_PARAM_SCALE_B]
                                               : 1.0f;
    atomic_init(&job.next, 0);
    trr_cpu_pool *pool = trr_cpu_ctx_pool(ctx);
    const int64_t lanes = min64(min64(job.items, trr_cpu_pool_workers(pool)), BLAS_CALLERS);
    job.scratch_floats = (job.half_in ? job.bk * (job.bm + job.bn) : 0) + (job.half_out ? job.bm * job.bn : 0);
    void *scratch = NULL;
    if (job.scratch_floats) {
        job.scratch_floats = round_up(job.scratch_floats, 16); /* each lane's scratch on its own cache lines */
        const size_t bytes = (size_t)(job.scratch_floats * lanes) * sizeof(float);
        if (posix_memalign(&scratch, 64, bytes) != 0 || !scratch)
            return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu matmul: %zu bytes of f32 scratch", bytes);
        job.scratch = scratch;
    }
    trr_cpu_blas_begin();
    trr_cpu_parallel_for(pool, lanes, 1, lane_task, &job);
    trr_cpu_blas_end();
    free(scratch);
    return TRR_OK;
}

/* ---- split-K ---- */

/* The partials a forced split of a large product asks for can pass what the machine has; past a quarter of its
 * memory the call is refused rather than left to the kernel's out-of-memory killer. */
static trr_status split_partials(trr_context *ctx, size_t bytes, void **out_mem) {
    trr_cpu_device *dev = ctx->dev;
    const uint64_t memory = ctx->info.global_memory;
    if (memory > 0 && bytes > memory / 4)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cpu matmul: split-K's f32 slice products need %zu bytes, past a quarter of the %llu bytes of "
                         "memory; split fewer ways",
                         bytes, (unsigned long long)memory);
    if (dev->matmul_partials_bytes < bytes) {
        free(dev->matmul_partials);
        dev->matmul_partials = NULL;
        dev->matmul_partials_bytes = 0;
        void *p = NULL;
        if (posix_memalign(&p, 64, bytes) != 0 || !p)
            return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu matmul: %zu bytes for split-K's slice products", bytes);
        dev->matmul_partials = p;
        dev->matmul_partials_bytes = bytes;
    }
    *out_mem = dev->matmul_partials;
    return TRR_OK;
}

typedef struct split_add_job {
    const trr_call *call;
    float *partials; /* slices x M x N, the first slice's rows summed into in place */
    int64_t slices;
} split_add_job;

/* Rows [begin, end) of C: the slices' products added in slice order into the first slice's row, then the
 * epilogue, then one store (or rounding) into C. */
static void split_add_rows(void *arg, int64_t begin, int64_t end, int worker) {
    (void)worker;
    const split_add_job *job = arg;
    const trr_call *c = job->call;
    const trr_operand *C = &c->z;
    const int64_t n = c->cols, mn = c->rows * c->cols;
    for (int64_t r = begin; r < end; r++) {
        float *acc = job->partials + r * n;
        for (int64_t s = 1; s < job->slices; s++) {
            const float *p = job->partials + s * mn + r * n;
            for (int64_t t = 0; t < n; t++) acc[t] += p[t];
        }
        trr_cpu_epilogue_f32(acc, n, c->epilogue, c->alpha);
        void *dst = element(C, C->offset + r * C->stride0);
        if (C->dtype == TRR_F32) memcpy(dst, acc, (size_t)n * sizeof(float));
        else trr_cpu_narrow(acc, C->dtype, dst, n);
    }
}

static trr_status split_add(trr_context *ctx, const trr_call *c, void *partials, int64_t slices) {
    split_add_job job = {c, partials, slices};
    const int64_t grain = c->cols * slices >= 16384 ? 1 : cdiv(16384, c->cols * slices);
    trr_cpu_parallel_for(trr_cpu_ctx_pool(ctx), c->rows, grain, split_add_rows, &job);
    return TRR_OK;
}

static const trr_matmul_split_ops split_ops = {run_whole, split_partials, split_add};

trr_status trr_cpu_matmul(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cpu_matmul_check_config(ctx, call));
    if (call->config.split_k > 1) return trr_matmul_run_split(ctx, call, &split_ops);
    return run_whole(ctx, call);
}

/*
 * Tiles as large as the work allows: a GEMM call packs its panels of A and B, and the larger the tile the less
 * that costs per multiply-add. The heuristic starts from one tile per matrix and halves the longer side (down to
 * MIN_TILE, in multiples of 16 columns, a cache line of f32) until the batch has two items per core to balance;
 * a matmul under POOL_FLOPS stays one item. K slices are the whole K (up to BLOCK_LIMIT) for f32 operands, and
 * HALF_BLOCK_K for half ones, whose slices are copied. Where the tiles still leave cores idle (fewer tiles of all
 * the batch's matrices than cores: a few rows and columns over a long K), each matrix is split along K into as
 * many slices as make the items the pool wants, within what K allows (trr_matmul_split_within_k), block_k one
 * slice's depth.
 */
void trr_cpu_matmul_choose_config(trr_call *call) {
    trr_config *c = &call->config;
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    const int64_t cores = trr_cpu_core_count();
    int64_t bm = c->block_m ? c->block_m : min64(call->rows > 0 ? call->rows : 1, BLOCK_LIMIT);
    int64_t bn = c->block_n ? c->block_n : min64(call->cols > 0 ? call->cols : 1, BLOCK_LIMIT);
    const double flops = 2.0 * (double)call->rows * (double)call->cols * (double)call->k * (double)batch;
    const int64_t want = flops < POOL_FLOPS ? 1 : 2 * cores;
    while (batch * cdiv(call->rows, bm) * cdiv(call->cols, bn) < want) {
        const int can_m = !c->block_m && bm >= 2 * MIN_TILE, can_n = !c->block_n && bn >= 2 * MIN_TILE;
        if (can_m && (!can_n || bm >= bn)) bm = round_up(cdiv(bm, 2), 16);
        else if (can_n) bn = round_up(cdiv(bn, 2), 16);
        else break;
    }
    c->block_m = (int)bm;
    c->block_n = (int)bn;
    /* a split batch runs matrix by matrix (trr_matmul_run_split), so each matrix's slices fill the pool alone */
    const int64_t tiles = cdiv(call->rows, bm) * cdiv(call->cols, bn);
    if (!c->split_k && batch * tiles < cores && want > 1) {
        c->split_k = trr_matmul_split_within_k(cdiv(want, tiles), call->k);
    }
    const int64_t block_k = call->x.dtype == TRR_F32 ? BLOCK_LIMIT : HALF_BLOCK_K;
    if (!c->block_k && call->k > 0)
        c->block_k = (int)min64(c->split_k > 1 ? round_up(cdiv(call->k, c->split_k), 16) : call->k, block_k);
    if (!c->group_m) c->group_m = 8;
    if (!c->threads) c->threads = 1; /* one core per tile */
    if (!c->stages) c->stages = 1;
    if (!c->vector_width) c->vector_width = 1;
    if (!c->split_k) c->split_k = 1;
}

trr_status trr_cpu_matmul_check_config(trr_context *ctx, const trr_call *call) {
    const trr_config *c = &call->config;
    if (c->block_m < 1 || c->block_n < 1 || c->block_k < 1 || c->block_m > BLOCK_LIMIT ||
        c->block_n > BLOCK_LIMIT || c->block_k > BLOCK_LIMIT)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cpu matmul: BLOCK_M/N/K must be in 1..%d, got %d/%d/%d", BLOCK_LIMIT, c->block_m,
                         c->block_n, c->block_k);
    if (c->group_m < 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu matmul: GROUP_M must be positive, got %d", c->group_m);
    if (c->split_k < 1 || c->split_k > TRR_MATMUL_MAX_SPLIT)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu matmul: split_k must be 1 to %d (slices of K), got %d",
                         TRR_MATMUL_MAX_SPLIT, c->split_k);
    return TRR_OK;
}
