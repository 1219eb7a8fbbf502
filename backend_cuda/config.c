/* Tiling heuristics (choose_config) and the limits a config must respect on the device (check_config): the
 * dispatch by rule, and the memory-bound rules' own (softmax, the row norms and reductions, elementwise); matmul's
 * are in config_matmul.c. */
#include "trr_cuda.h"

#include "op_table.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows up to threads * items stay in registers; the smallest step that holds the row is taken. What counts is
 * how many rows an SM keeps in flight, so each step holds rows just longer than the one before with 12-24 items
 * a thread: the steps below were the best at the lengths they cover when every shape of capacity N to 1.5 N was
 * timed on NVIDIA H200 (the tuning data); coarser steps of 8 items a thread (two blocks, two rows, per SM) were
 * clearly slower. The first three steps serve the simt variant when asked for on
 * short rows (the heuristic gives rows up to 1024 to the subgroup kernel). */
static const trr_cuda_softmax_step ladder_f32[] = {
    {64, 4},    {128, 4},   {64, 16},   {96, 12},   {96, 16},   {128, 16},  {128, 20},  {256, 12},  {256, 16},
    {256, 20},  {384, 16},  {384, 20},  {512, 16},  {384, 24},  {512, 20},  {768, 16},  {768, 20},  {1024, 16}};
/* 2-byte elements (items a multiple of 8): the steps that ran fastest for f16 rows on NVIDIA H200 (the tuning
 * data). */
static const trr_cuda_softmax_step ladder_f16[] = {{64, 8},   {128, 8},  {96, 16},  {128, 16}, {96, 24},
                                                   {128, 24}, {256, 16}, {192, 24}, {384, 16}, {512, 16},
                                                   {384, 24}, {768, 16}, {1024, 16}};

const trr_cuda_softmax_step *trr_cuda_softmax_ladder(trr_dtype dtype, int *out_count) {
    if (dtype == TRR_F16 || dtype == TRR_BF16) { /* 2-byte elements: the same register budget */
        *out_count = (int)(sizeof ladder_f16 / sizeof ladder_f16[0]);
        return ladder_f16;
    }
    *out_count = (int)(sizeof ladder_f32 / sizeof ladder_f32[0]);
    return ladder_f32;
}

int trr_cuda_softmax_online_items(trr_dtype dtype) { return dtype == TRR_F16 || dtype == TRR_BF16 ? 16 : 8; }

int trr_cuda_softmax_warp_items(trr_dtype dtype, int64_t cols) {
    int items = 16 / trr_cuda_elem_size(dtype);
    while (items < 32 && 32 * (int64_t)items < cols) items *= 2;
    return items;
}

void trr_cuda_config_fill(trr_config *c, const trr_config *h) {
    if (!c->block_m) c->block_m = h->block_m;
    if (!c->block_n) c->block_n = h->block_n;
    if (!c->block_k) c->block_k = h->block_k;
    if (!c->group_m) c->group_m = h->group_m;
    if (!c->threads) c->threads = h->threads;
    if (!c->stages) c->stages = h->stages;
    if (!c->vector_width) c->vector_width = h->vector_width;
    if (!c->split_k) c->split_k = h->split_k;
}

/* The smallest multiple of 32 at or above v. */
static int64_t round32(int64_t v) { return (v + 31) / 32 * 32; }

/* Row norms (trr_cuda_norm_plan reads the fields), memory-bound like softmax, whose row kernels set the shape
 * (docs/performance.md): rows of up to 1024 columns a warp each, 256 threads a block; longer rows a block each,
 * held in registers as 4 vectors a thread up to 1024 vectors a row, else 8 (fewer registers per byte in flight,
 * two or more rows resident per SM), over the fewest threads, a multiple of 32, that cover it; past 512 threads
 * of 8 (16384 f32, 32768 f16) 512 threads loop over chunks of 4 vectors each and read x twice, the second time
 * mostly from L2. A given threads or block_n is kept and the other follows from it. */
void trr_cuda_choose_norm(trr_call *call) {
    trr_config *c = &call->config;
    const int vec = 16 / trr_cuda_elem_size(call->x.dtype);
    const int64_t n = call->cols, v = (n + vec - 1) / vec; /* vectors a row */
    if (!c->vector_width) c->vector_width = vec;
    if (!c->block_n) {
        int64_t bn;
        if (n <= TRR_CUDA_NORM_WARP_MAX_COLS) {
            bn = 32 * vec * ((v + 31) / 32);
        } else {
            int64_t t = c->threads, vpt;
            if (!t) {
                vpt = v <= 1024 ? 4 : 8;
                t = round32((v + vpt - 1) / vpt);
                if (t > 512) t = 512; /* past 16384 f32: the looping kernel */
            }
            vpt = (v + t - 1) / t;
            if (vpt > TRR_CUDA_NORM_MAX_VPT) vpt = TRR_CUDA_NORM_LOOP_VPT;
            else /* block_n past the warp kernel's, which tells the kernels apart */
                while (t * vpt * vec <= TRR_CUDA_NORM_WARP_MAX_COLS && vpt < TRR_CUDA_NORM_MAX_VPT) vpt++;
            if (!c->threads) c->threads = (int)t;
            bn = t * vpt * vec;
        }
        c->block_n = (int)bn;
    }
    if (!c->threads) {
        int t = 256;
        if (c->block_n > TRR_CUDA_NORM_WARP_MAX_COLS && c->block_n % vec == 0) {
            /* the vectors a thread holds: 4 first, as above, then the others that split block_n into threads */
            static const int order[] = {4, 8, 2, 6, 3, 5, 7, 1};
            const int nv = c->block_n / vec;
            for (int i = 0; i < 8; i++) {
                if (nv % order[i] == 0 && (nv / order[i]) % 32 == 0 && nv / order[i] <= 1024) {
                    t = nv / order[i];
                    break;
                }
            }
        }
        c->threads = t;
    }
}

/* The memory-bound rules' common part: 16-byte vectors, then h where the config left a field at zero. */
static void fill_stream(trr_call *call, trr_config *h) {
    h->vector_width = 16 / trr_cuda_elem_size(call->x.dtype);
    trr_cuda_config_fill(&call->config, h);
}

void trr_cuda_choose_row_norm(const trr_cuda_dev *dev, trr_call *call) {
    (void)dev;
    trr_cuda_choose_norm(call);
}

void trr_cuda_choose_rows(const trr_cuda_dev *dev, trr_call *call) {
    (void)dev;
    trr_config h;
    memset(&h, 0, sizeof h);
    if (!call->config.variant)
        call->config.variant = call->cols <= TRR_CUDA_SOFTMAX_WARP_MAX_COLS ? TRR_VARIANT_SUBGROUP : TRR_VARIANT_SIMT;
    if (call->config.variant == TRR_VARIANT_SUBGROUP) {
        h.threads = TRR_CUDA_SOFTMAX_WARP_THREADS;
        h.block_n = 32 * trr_cuda_softmax_warp_items(call->x.dtype, call->cols);
        fill_stream(call, &h);
        return;
    }
    int count = 0;
    const trr_cuda_softmax_step *ladder = trr_cuda_softmax_ladder(call->x.dtype, &count);
    h.threads = TRR_CUDA_SOFTMAX_ONLINE_THREADS;
    h.block_n = TRR_CUDA_SOFTMAX_ONLINE_THREADS * trr_cuda_softmax_online_items(call->x.dtype);
    for (int i = 0; i < count; i++) {
        if (call->cols <= (int64_t)ladder[i].threads * ladder[i].items) {
            h.threads = ladder[i].threads;
            h.block_n = ladder[i].threads * ladder[i].items;
            break;
        }
    }
    fill_stream(call, &h);
}

void trr_cuda_choose_row_reduce(const trr_cuda_dev *dev, trr_call *call) {
    trr_config h;
    memset(&h, 0, sizeof h);
    const int es = trr_cuda_elem_size(call->x.dtype);
    /* block_n = threads x elements per vector x the vectors a thread loads before adding (LOADS, then 4, then
     * 1 while the row lasts); block_k how rows are read (1 ld.global.cs, 4 bulk copies: row_sum.cu).
     * Short rows waste most of a wide block; 256 threads cover rows up to a few thousand in one sweep, 512
     * with 8 loads beyond. Rows of 32 to 64 KiB: one block of 1024 threads, each loading 2 vectors, reads a
     * row in one go, and fewer, larger blocks leave less of the time to the write-back of dirty L2 lines that
     * precedes them (the bench's cache flush). Rows of 128 KiB and more on sm_90: bulk copies, faster there
     * and slower on shorter rows (the tuning data). */
    const int64_t row_bytes = call->cols * es;
    h.block_k = 1;
    if (row_bytes >= 131072 && dev && dev->cc_major >= 9) {
        h.threads = 256;
        h.block_k = 4;
        h.block_n = h.threads * (16 / es) * 8;
    } else if (row_bytes >= 32768 && row_bytes < 65536) {
        h.threads = 1024;
        h.block_n = h.threads * (16 / es) * 2;
    } else {
        h.threads = call->cols <= 1024 ? 128 : call->cols < 8192 ? 256 : 512;
        h.block_n = h.threads * (16 / es) * 8;
    }
    fill_stream(call, &h);
}

void trr_cuda_choose_elementwise(const trr_cuda_dev *dev, trr_call *call) {
    (void)dev;
    const trr_op_desc *d = trr_op_desc_get(call->op);
    trr_config h;
    memset(&h, 0, sizeof h);
    const int es = trr_cuda_elem_size(call->x.dtype);
    if (d->bytewise) {
        /* a packed byte move is the driver's copy; strided rows take 256 threads */
        h.threads = 256;
        h.block_n = 256 * (16 / es);
        fill_stream(call, &h);
        return;
    }
    /* The flat kernel (packed operands, rows == 1): 128 threads of one 16-byte vector each, measured fastest
     * on NVIDIA H200 against 64 and 256-1024 threads and 2 or 4 vectors a thread (docs/performance.md).
     * Ops of no transcendental work (add) below 2^25 elements take two vectors a thread (Triton's shape),
     * where gelu loses with two. Strided rows keep 256 threads. */
    h.threads = call->rows == 1 ? 128 : 256;
    h.block_n = h.threads * (16 / es);
    if (call->rows == 1 && !d->transcendental && call->cols < ((int64_t)1 << 25)) h.block_n *= 2;
    fill_stream(call, &h);
}

void trr_cuda_choose_planes(const trr_cuda_dev *dev, trr_call *call) {
    (void)dev;
    trr_config h;
    memset(&h, 0, sizeof h);
    h.threads = 256;
    h.block_n = 256 * (16 / trr_cuda_elem_size(call->x.dtype));
    fill_stream(call, &h);
}

void trr_cuda_choose_config(trr_context *ctx, trr_call *call) {
    const trr_cuda_rule *r = trr_cuda_rule_for(trr_op_desc_get(call->op));
    if (r) r->choose(ctx ? ctx->dev : NULL, call); /* else trr_cuda_supports says why */
}

/* Every memory-bound rule: whole warps, and one kernel family where the rule has no other here. */
static trr_status check_threads(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    const int max_threads = dev ? dev->max_threads : 1024, t = call->config.threads;
    if (t % 32 || t < 32 || t > max_threads)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda: threads %d must be a multiple of 32 in [32, %d]", t,
                         max_threads);
    return TRR_OK;
}

trr_status trr_cuda_check_stream(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    TRR_TRY(check_threads(ctx, dev, call));
    const int v = call->config.variant;
    if (v != TRR_VARIANT_AUTO && v != TRR_VARIANT_SIMT) {
        const char *vname = "?";
        trr_variant_name((trr_variant)v, &vname);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda: variant %s; this op has one kernel family here (simt)", vname);
    }
    return TRR_OK;
}

trr_status trr_cuda_check_row_norm(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    TRR_TRY(trr_cuda_check_stream(ctx, dev, call));
    int kind, vpt;
    char why[200];
    if (!trr_cuda_norm_plan(call, &kind, &vpt, why, sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda %s: %s", trr_op_desc_get(call->op)->name, why);
    return TRR_OK;
}

trr_status trr_cuda_check_row_reduce(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    TRR_TRY(trr_cuda_check_stream(ctx, dev, call));
    const trr_config *c = &call->config;
    const int bulk_ok = !dev || dev->cc_major >= 9; /* cp.async.bulk */
    if (c->block_m > 1 || c->block_k < 1 || c->block_k > (bulk_ok ? 4 : 3))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda %s: one row a block (block_m 1, got %d) and block_k, how rows are read: 1 "
                         "ld.global.cs, 2 .nc + L2 evict-first, 3 .nc%s (got %d)",
                         trr_op_desc_get(call->op)->name, c->block_m,
                         bulk_ok ? ", 4 bulk copies through shared memory" : " (4, bulk copies: sm_90 and later)",
                         c->block_k);
    return TRR_OK;
}

trr_status trr_cuda_check_rows(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call) {
    TRR_TRY(check_threads(ctx, dev, call));
    const trr_config *c = &call->config;
    const char *name = trr_op_desc_get(call->op)->name;
    int vec = 16 / trr_cuda_elem_size(call->x.dtype);
    if (c->variant == TRR_VARIANT_SUBGROUP) {
        int items = c->block_n / 32;
        if (c->block_n % 32 || items % vec || items < vec || items > 32)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda %s (subgroup): block_n / 32 (elements per lane) must be a multiple of %d up to 32 "
                             "(block_n %d)",
                             name, vec, c->block_n);
        if (call->cols > (int64_t)c->block_n)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "cuda %s (subgroup): a warp holds rows of up to block_n = %d columns, the rows have %lld",
                             name, c->block_n, (long long)call->cols);
        return TRR_OK;
    }
    if (c->variant != TRR_VARIANT_SIMT) {
        const char *vname = "?";
        trr_variant_name((trr_variant)c->variant, &vname);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuda %s: variant %s; its kernels are simt and subgroup", name,
                         vname);
    }
    int items = c->block_n / c->threads;
    if (c->block_n % c->threads || items % vec || items < vec || items > 32)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "cuda %s: block_n / threads (elements per thread) must be a multiple of %d up to 32 "
                         "(block_n %d, threads %d)",
                         name, vec, c->block_n, c->threads);
    return TRR_OK;
}

trr_status trr_cuda_check_config(trr_context *ctx, const trr_call *call) {
    const trr_cuda_rule *r = trr_cuda_rule_for(trr_op_desc_get(call->op));
    if (!r) return trr_cuda_supports(ctx, call);
    return r->check(ctx, ctx ? ctx->dev : NULL, call);
}
