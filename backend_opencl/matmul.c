/* matmul: tile shape and dtypes are build options; layout and epilogue are arguments (kernels/opencl/matmul.cl).
 * The mma variant (kernels/opencl/matmul_mma.cl) takes the layout as build options too. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

#include "matmul_fold.h"
#include "matmul_scale.h"
#include "matmul_split.h"
#include "matmul_variant.h"

#define ARG(i, v) TRR_TRY(trr_cl_set_arg(ctx, k, (cl_uint)(i), sizeof(v), &(v)))

/* The arguments both matmul kernels share, in their order: the operands with offsets and leading strides, the
 * sizes, the epilogue and its slope, the batch strides. The kernel's own arguments follow from index 17. */
static trr_status matmul_args(trr_context *ctx, cl_kernel k, const trr_call *call) {
    cl_mem am = call->x.mem, bm = call->y.mem, cm = call->z.mem;
    cl_long ao = call->x.offset, bo = call->y.offset, co = call->z.offset;
    cl_int lda = (cl_int)call->x.stride0, ldb = (cl_int)call->y.stride0, ldc = (cl_int)call->z.stride0;
    cl_int M = (cl_int)call->rows, N = (cl_int)call->cols, K = (cl_int)call->k;
    cl_int epi = (cl_int)call->epilogue;
    cl_float alpha = call->alpha;
    cl_long abs = call->x.batch_stride, bbs = call->y.batch_stride, cbs = call->z.batch_stride;
    ARG(0, am);
    ARG(1, ao);
    ARG(2, lda);
    ARG(3, bm);
    ARG(4, bo);
    ARG(5, ldb);
    ARG(6, cm);
    ARG(7, co);
    ARG(8, ldc);
    ARG(9, M);
    ARG(10, N);
    ARG(11, K);
    ARG(12, epi);
    ARG(13, alpha);
    ARG(14, abs);
    ARG(15, bbs);
    ARG(16, cbs);
    return TRR_OK;
}

/* One work-group per output tile of the config, the batch as grid dimension 2: one launch for every matrix. */
static trr_status launch_tiles(trr_context *ctx, cl_kernel k, const trr_call *call) {
    const trr_config *cfg = &call->config;
    size_t npm = ((size_t)call->rows + (size_t)cfg->block_m - 1) / (size_t)cfg->block_m;
    size_t npn = ((size_t)call->cols + (size_t)cfg->block_n - 1) / (size_t)cfg->block_n;
    size_t local[3] = {(size_t)cfg->threads, 1, 1};
    size_t global[3] = {npm * npn * local[0], 1, (size_t)(call->batch > 1 ? call->batch : 1)};
    return trr_cl_launch(ctx, k, 3, global, local);
}

/* The tensor-core kernels' arguments (matmul_mma.cl, matmul_wgmma.cl: the shared ones, whether C's outputs move
 * in pairs, the input scale) and their launch. */
static trr_status run_tensor_core(trr_context *ctx, cl_kernel k, const trr_call *call) {
    TRR_TRY(matmul_args(ctx, k, call));
    /* outputs move in pairs: even row starts in every batch (buffers are aligned far beyond 8 bytes) */
    cl_int cpair = call->z.stride0 % 2 == 0 && call->z.offset % 2 == 0 && call->z.batch_stride % 2 == 0;
    ARG(17, cpair);
    cl_float scale = trr_matmul_input_scale(call);
    ARG(18, scale);
    return launch_tiles(ctx, k, call);
}

static trr_status run_mma(trr_context *ctx, const trr_call *call) {
    const trr_config *cfg = &call->config;
    const trr_cl_dev *dev = ctx->dev;
    int wm, wn;
    trr_cl_mma_warps(cfg, &wm, &wn);
    char options[320] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options,
               " -DBLOCK_M=%d -DBLOCK_N=%d -DBLOCK_K=%d -DGROUP_M=%d -DWARPS_M=%d -DWARPS_N=%d", cfg->block_m,
               cfg->block_n, cfg->block_k, cfg->group_m, wm, wn);
    /* Fragments pipelined across k steps from three stages on: with two, the tile refilled at a tile's first k
     * step would be waited for at its last, so two stages run slower pipelined than not (the tuning data).
     * 8-bit floats are widened on their way through registers: cp.async would copy their bytes as they are. */
    const int cp_async = dev->mma.cp_async && !trr_dtype_is_f8(call->x.dtype);
    int pipe = cp_async && cfg->stages >= 3;
    trr_cl_opt(options, sizeof options, " -DSTAGES=%d -DCP_ASYNC=%d -DMMA_PIPE=%d", cfg->stages, cp_async, pipe);
    trr_cl_opt(options, sizeof options, " -DTRANS_A=%d -DTRANS_B=%d -DADDR_MODE=%d -DX_DT=%d -DY_DT=%d -DZ_DT=%d",
               call->trans_a ? 1 : 0, call->trans_b ? 1 : 0, dev->mma.addr_mode, trr_cl_dtype_code(call->x.dtype),
               trr_cl_dtype_code(call->y.dtype), trr_cl_dtype_code(call->z.dtype));
    /* alignment picks the program: an aligned operand's main loop copies through cp.async alone (one 8-byte load
     * a chunk for 8-bit floats) */
    /* 16-byte rows: matmul_mma.cl copies every chunk of 8 halves with one cp.async */
    trr_cl_opt(options, sizeof options, " -DVEC_A=%d -DVEC_B=%d", trr_cl_rows_aligned(&call->x, 8, call->batch),
               trr_cl_rows_aligned(&call->y, 8, call->batch));
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "matmul_mma.cl", options, "matmul_mma", &k));
    return run_tensor_core(ctx, k, call);
}

/* A's and B's tensor maps for matmul_wgmma.cl's TMA loads into maps, where the CUDA driver encodes them for this
 * device and these operands; 0 otherwise (dev->tma.reason says why). */
static int encode_maps(trr_cl_dev *dev, const trr_call *call, uint64_t maps[2][16]) {
    const trr_config *cfg = &call->config;
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    return trr_cl_tma_encode(&dev->tma, dev->info.pci_bus_id, maps[0], call->rows, call->k, call->x.stride0,
                             call->x.batch_stride, batch, cfg->block_m) &&
           trr_cl_tma_encode(&dev->tma, dev->info.pci_bus_id, maps[1], call->cols, call->k, call->y.stride0,
                             call->y.batch_stride, batch, cfg->block_n);
}

/* tmap_fill: maps into the device's tensor-map buffer with A's and B's device addresses, ahead of the matmul in the
 * queue (which runs in order); *out is that buffer. */
static trr_status fill_maps(trr_context *ctx, cl_kernel f, const trr_call *call, uint64_t maps[2][16], cl_mem *out) {
    trr_cl_dev *dev = ctx->dev;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->tensor_maps, 2 * 16 * sizeof(uint64_t), "matmul's tensor maps", out));
    cl_ulong16 ta, tb;
    memcpy(&ta, maps[0], sizeof ta);
    memcpy(&tb, maps[1], sizeof tb);
    cl_mem mm = *out, am = call->x.mem, bm = call->y.mem;
    cl_long ao = call->x.offset, bo = call->y.offset;
    cl_kernel k = f;
    ARG(0, mm);
    ARG(1, ta);
    ARG(2, tb);
    ARG(3, am);
    ARG(4, ao);
    ARG(5, bm);
    ARG(6, bo);
    const size_t one = 1;
    return trr_cl_launch(ctx, f, 1, &one, &one);
}

static void wgmma_options(char *options, size_t cap, const trr_call *call, const trr_cl_dev *dev, int tma) {
    const trr_config *cfg = &call->config;
    snprintf(options, cap, "-cl-std=CL1.2 -DWG_COMMENTED=1 -DCP_ASYNC=1 -DTMA=%d", tma);
    trr_cl_opt(options, cap, " -DBLOCK_M=%d -DBLOCK_N=%d -DGROUP_M=%d -DSTAGES=%d -DADDR_MODE=%d", cfg->block_m,
               cfg->block_n, cfg->group_m, cfg->stages, dev->mma.addr_mode);
    trr_cl_opt(options, cap, " -DX_DT=%d -DY_DT=%d -DZ_DT=%d", trr_cl_dtype_code(call->x.dtype),
               trr_cl_dtype_code(call->y.dtype), trr_cl_dtype_code(call->z.dtype));
}

/* The TMA program's two kernels. A driver that does not build it (tensormap.replace needs PTX ISA 8.3) is left to
 * cp.async from then on, its build error the reason, and the context's last error is left as it was: 0 then. */
static int tma_kernels(trr_context *ctx, const char *options, cl_kernel *k, cl_kernel *f) {
    trr_cl_dev *dev = ctx->dev;
    const trr_status before = ctx->last_status;
    const size_t len = strlen(ctx->last_error);
    char *saved = malloc(len + 1);
    if (saved) memcpy(saved, ctx->last_error, len + 1);
    trr_status st = trr_cl_get_kernel_sm90a(ctx, "matmul_wgmma.cl", options, "matmul_wgmma", k);
    if (st == TRR_OK) st = trr_cl_get_kernel_sm90a(ctx, "matmul_wgmma.cl", options, "tmap_fill", f);
    if (st != TRR_OK) {
        snprintf(dev->tma.reason, sizeof dev->tma.reason, "the TMA program does not build: %.150s", ctx->last_error);
        dev->tma.state = -1;
        ctx->last_status = before;
        if (saved) memcpy(ctx->last_error, saved, len + 1);
        else ctx->last_error[0] = '\0';
    }
    free(saved);
    return st == TRR_OK;
}

/* 8-bit floats on wgmma (kernels/opencl/matmul_wgmma.cl): built as sm_90a PTX from the driver's sm_90 PTX, its
 * slices loaded by TMA where the CUDA driver encodes the tensor maps, else by cp.async. call is K-major with
 * aligned rows (trr_cl_f8_view). */
static trr_status run_wgmma_k_major(trr_context *ctx, const trr_call *call) {
    trr_cl_dev *dev = ctx->dev;
    _Alignas(64) uint64_t maps[2][16];
    char options[320];
    cl_kernel k, f;
    int tma = encode_maps(dev, call, maps);
    if (tma) {
        wgmma_options(options, sizeof options, call, dev, 1);
        tma = tma_kernels(ctx, options, &k, &f);
    }
    cl_mem mm = NULL;
    if (tma) {
        TRR_TRY(fill_maps(ctx, f, call, maps, &mm));
    } else {
        wgmma_options(options, sizeof options, call, dev, 0);
        TRR_TRY(trr_cl_get_kernel_sm90a(ctx, "matmul_wgmma.cl", options, "matmul_wgmma", &k));
    }
    ARG(19, mm);
    return run_tensor_core(ctx, k, call);
}

/* Operands the wgmma kernel cannot read as stored run from K-major copies (matmul_pack.c). */
static trr_status run_wgmma(trr_context *ctx, const trr_call *call) {
    trr_call view;
    if (!trr_cl_f8_view(call, &view)) return run_wgmma_k_major(ctx, call);
    TRR_TRY(trr_cl_f8_pack(ctx, call, &view));
    return run_wgmma_k_major(ctx, &view);
}

/* K in slices of chunk (a multiple of block_k), one launch each: the device stops a work-item's loops short
 * of the whole of K (trr_cl_dev.loop_budget). The sums so far go through the device's f32 scratch of batch x M x N;
 * the last launch adds its own, applies the epilogue and writes C. Each slice starts A and B k0 elements on. */
static trr_status run_split_k(trr_context *ctx, cl_kernel k, const trr_call *call, int64_t chunk) {
    trr_cl_dev *dev = ctx->dev;
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    const size_t bytes = (size_t)batch * (size_t)call->rows * (size_t)call->cols * sizeof(float);
    cl_mem part;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->partials, bytes ? bytes : 4, "matmul's split-K sums", &part));
    trr_status st = trr_cl_set_arg(ctx, k, 22, sizeof part, &part);
    for (int64_t k0 = 0; st == TRR_OK && k0 < call->k; k0 += chunk) {
        const int64_t kc = call->k - k0 < chunk ? call->k - k0 : chunk;
        cl_long ao = call->x.offset + (call->trans_a ? k0 * call->x.stride0 : k0);
        cl_long bo = call->y.offset + (call->trans_b ? k0 : k0 * call->y.stride0);
        cl_int K = (cl_int)kc, mode = k0 == 0 ? 1 : k0 + kc < call->k ? 2 : 3;
        st = trr_cl_set_arg(ctx, k, 1, sizeof ao, &ao);
        if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 4, sizeof bo, &bo);
        if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 11, sizeof K, &K);
        if (st == TRR_OK) st = trr_cl_set_arg(ctx, k, 23, sizeof mode, &mode);
        if (st == TRR_OK) st = launch_tiles(ctx, k, call);
    }
    return st;
}

/* split_k >= 2 (core/matmul_split.h's driver): the K slices as a batch of the call's own kernel, their f32
 * products in the device's scratch, then matmul_split.cl adds them in order into C with the epilogue. */
static trr_status split_partials(trr_context *ctx, size_t bytes, void **out_mem) {
    trr_cl_dev *dev = ctx->dev;
    cl_mem scratch;
    TRR_TRY(trr_cl_scratch_get(ctx, &dev->matmul_partials, bytes, "matmul's K slices", &scratch));
    *out_mem = scratch;
    return TRR_OK;
}

static trr_status split_add(trr_context *ctx, const trr_call *call, void *partials, int64_t slices) {
    const int64_t mn = call->rows * call->cols;
    cl_mem scratch = partials;
    char options[64] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DZ_DT=%d", trr_cl_dtype_code(call->z.dtype));
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "matmul_split.cl", options, "matmul_split", &k));
    cl_long po = 0, pbs = mn, co = call->z.offset;
    cl_int ldp = (cl_int)call->cols, n_slices = (cl_int)slices, ldc = (cl_int)call->z.stride0, M = (cl_int)call->rows,
           N = (cl_int)call->cols, epi = (cl_int)call->epilogue;
    cl_float alpha = call->alpha;
    cl_mem cm = call->z.mem;
    ARG(0, scratch);
    ARG(1, po);
    ARG(2, ldp);
    ARG(3, pbs);
    ARG(4, n_slices);
    ARG(5, cm);
    ARG(6, co);
    ARG(7, ldc);
    ARG(8, M);
    ARG(9, N);
    ARG(10, epi);
    ARG(11, alpha);
    const size_t most = ((const trr_cl_dev *)ctx->dev)->max_work_group;
    const size_t local = most && most < 64 ? most : 64, global = ((size_t)mn + local - 1) / local * local;
    return trr_cl_launch(ctx, k, 1, &global, &local);
}

static const trr_matmul_split_ops split_ops = {trr_cl_run_matmul, split_partials, split_add};

trr_status trr_cl_run_matmul(trr_context *ctx, const trr_call *call) {
    const trr_config *cfg = &call->config;
    if (cfg->split_k > 1) return trr_matmul_run_split(ctx, call, &split_ops);
    if (cfg->variant == TRR_VARIANT_MMA) return run_mma(ctx, call);
    if (cfg->variant == TRR_VARIANT_WGMMA) return run_wgmma(ctx, call);
    int rt, ct, tm, tn;
    trr_cl_matmul_grid(cfg, &rt, &ct, &tm, &tn);
    cl_int ta = call->trans_a ? 1 : 0, tb = call->trans_b ? 1 : 0;
    /* matmul.cl reads whole 4-element vectors of rows that start on them */
    cl_int va = trr_cl_rows_aligned(&call->x, 4, call->batch), vb = trr_cl_rows_aligned(&call->y, 4, call->batch);
    cl_int vc = call->z.dtype == TRR_F32 && trr_cl_rows_aligned(&call->z, 4, call->batch);
    char options[256] = "-cl-std=CL1.2";
    trr_cl_opt(options, sizeof options, " -DBLOCK_M=%d -DBLOCK_N=%d -DBLOCK_K=%d -DGROUP_M=%d -DRT=%d -DCT=%d",
               cfg->block_m, cfg->block_n, cfg->block_k, cfg->group_m, rt, ct);
    trr_cl_opt(options, sizeof options, " -DX_DT=%d -DY_DT=%d -DZ_DT=%d", trr_cl_dtype_code(call->x.dtype),
               trr_cl_dtype_code(call->y.dtype), trr_cl_dtype_code(call->z.dtype));
    /* A GPU compiles each layout and alignment to its own straight-line program; PoCL, at about a second per
     * compile, takes them as arguments (matmul.cl). */
    if (((const trr_cl_dev *)ctx->dev)->info.is_gpu)
        trr_cl_opt(options, sizeof options, " -DTRANS_A=%d -DTRANS_B=%d -DVEC_A=%d -DVEC_B=%d -DVEC_C=%d", ta, tb, va,
                   vb, vc);
    uint32_t fold = trr_matmul_fold_tiles(call, TRR_MATMUL_SIMT_FOLD_FROM_K);
    if (fold) trr_cl_opt(options, sizeof options, " -DFOLD=%u", fold);
    cl_kernel k;
    TRR_TRY(trr_cl_get_kernel(ctx, "matmul.cl", options, "matmul", &k));
    TRR_TRY(matmul_args(ctx, k, call));
    ARG(17, ta);
    ARG(18, tb);
    ARG(19, va);
    ARG(20, vb);
    ARG(21, vc);
    cl_float scale = trr_matmul_input_scale(call);
    ARG(24, scale);
    const int64_t chunk = trr_cl_matmul_chunk_k(ctx->dev, cfg);
    if (call->k <= chunk) {
        cl_mem unused = call->z.mem; /* part is not read without a split */
        cl_int none = 0;
        ARG(22, unused);
        ARG(23, none);
        return launch_tiles(ctx, k, call);
    }
    return run_split_k(ctx, k, call, chunk);
}
