/*
 * matmul, C = act(A·B), cache-blocked in the vocabulary every backend uses.
 *
 * The output is cut into BLOCK_M x BLOCK_N blocks, visited in the grouped order of docs/ops.md (GROUP_M row-blocks
 * share B's columns while they are in cache) and handed to the pool one block per item. For each BLOCK_K
 * slice of the reduction a block packs its panel of A into MR-row strips and its panel of B into NR-column
 * strips: packing is where transposes, leading strides and f16 -> f32 widening are handled, once, so the
 * micro-kernel only ever sees contiguous f32 and zero padding at the edges. The micro-kernel keeps an MR x NR
 * tile of f32 accumulators in registers; the block's accumulators persist across K slices in a per-worker
 * f32 scratch, and the epilogue is applied to them before the single rounding store.
 *
 * A batch multiplies the work items: item = batch * (blocks per matrix) + block, so the pool spreads
 * batch x tiles over the cores in one parallel loop.
 *
 * Micro-kernels are plain C that GCC vectorises. Where the CPU has AVX2+FMA or AVX-512 a copy compiled for
 * that ISA (a function target attribute, chosen by a run-time CPU check) runs instead of the baseline one.
 * Accumulation is always true f32 (FMA only removes a rounding); f16 operands accumulate in f32 too.
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu.h"
#include "cpu_math.h"
#include "grouped.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MR 8
#define MAX_NR 32
#define BLOCK_LIMIT 4096 /* largest BLOCK_M / BLOCK_N / BLOCK_K accepted: keeps scratch bounded */
#define B_PANEL_LIMIT ((int64_t)8 << 20) /* floats (32 MiB) of B panel kept per worker, at most */

typedef void (*micro_kernel)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc);

/* c[MR x NR] (row stride ldc) += a-strip · b-strip over kc steps. a is [kc][MR], b is [kc][NR]. Each K slice
 * is summed from zero in registers and only then added to c: a two-level sum whose rounding error grows with
 * BLOCK_K + K / BLOCK_K rather than with K, which keeps long, cancelling dot products (1 x 1 x 4099) inside
 * the 1e-5 bound (docs/ops.md, Correctness bounds). */
#define TRR_MICRO_KERNEL(NAME, ATTR, MR, NR, MADD)                                                             \
    ATTR static void NAME(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,       \
                          int64_t ldc) {                                                                       \
        float acc[(MR) * (NR)];                                                                                \
        for (int i = 0; i < (MR); i++)                                                                         \
            _Pragma("GCC unroll 32") for (int j = 0; j < (NR); j++) acc[i * (NR) + j] = 0.0f;                    \
        for (int64_t k = 0; k < kc; k++) {                                                                     \
            const float *ak = a + k * (MR), *bk = b + k * (NR);                                                \
            _Pragma("GCC unroll 8") for (int i = 0; i < (MR); i++) {                                           \
                float ai = ak[i];                                                                              \
                _Pragma("GCC unroll 32") for (int j = 0; j < (NR); j++) acc[i * (NR) + j] =                    \
                    MADD(ai, bk[j], acc[i * (NR) + j]);                                                        \
            }                                                                                                  \
        }                                                                                                      \
        for (int i = 0; i < (MR); i++)                                                                         \
            _Pragma("GCC unroll 32") for (int j = 0; j < (NR); j++) c[i * ldc + j] += acc[i * (NR) + j];       \
    }

#define MADD_PLAIN(a, b, c) ((c) + (a) * (b))
#define MADD_FUSED(a, b, c) fmaf((a), (b), (c))

/* Baseline: 4 x 8 keeps eight SSE accumulators plus operands inside sixteen registers. */
TRR_MICRO_KERNEL(kernel_base_4x8, , 4, 8, MADD_PLAIN)

#if defined(__GNUC__) && defined(__x86_64__)
#define TRR_CPU_X86_KERNELS 1
/* AVX2: 6 x 16 is twelve ymm accumulators, two B vectors and a broadcast. */
TRR_MICRO_KERNEL(kernel_avx2_6x16, __attribute__((target("avx2,fma"))), 6, 16, MADD_FUSED)
/* AVX-512: 8 x 32 is sixteen zmm accumulators out of thirty-two registers. */
TRR_MICRO_KERNEL(kernel_avx512_8x32, __attribute__((target("avx512f,fma"))), 8, 32, MADD_FUSED)
#endif

typedef struct kernel_choice {
    micro_kernel fn;
    int mr, nr;
    const char *name;
} kernel_choice;

static kernel_choice pick_kernel(void) {
#ifdef TRR_CPU_X86_KERNELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        return (kernel_choice){kernel_avx512_8x32, 8, 32, "avx512 8x32"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return (kernel_choice){kernel_avx2_6x16, 6, 16, "avx2 6x16"};
#endif
    return (kernel_choice){kernel_base_4x8, 4, 8, "base 4x8"};
}

static int64_t round_up(int64_t v, int64_t m) {
    return (v + m - 1) / m * m;
}

/* One input element as f32 (exact for every input dtype; the 8-bit floats are packed into f32 blocks as well). */
static inline float load_elem(const void *mem, trr_dtype dtype, int64_t idx) {
    switch (dtype) {
    case TRR_F32: return ((const float *)mem)[idx];
    case TRR_BF16: return trr_cpu_bf2f(((const uint16_t *)mem)[idx]);
    case TRR_F8E4M3: return trr_f8e4m3_to_float(((const uint8_t *)mem)[idx]);
    case TRR_F8E5M2: return trr_cpu_h2f((uint16_t)(((const uint8_t *)mem)[idx] << 8)); /* the top byte of an f16 */
    default: return trr_cpu_h2f(((const uint16_t *)mem)[idx]);
    }
}

typedef struct mm_job {
    const trr_call *call;
    kernel_choice kern;
    int64_t bm, bn, bk, group_m, npm, npn;
    int64_t bmp, bnp;      /* block sizes rounded up to whole strips */
    int b_whole;            /* B's panel is packed for all of K once per column-block and reused */
    int64_t b_floats;       /* per worker: the packed B panel, all of K or one BLOCK_K slice */
    float *scratch;         /* per worker: packed A, accumulators, packed B */
    int64_t scratch_floats; /* per worker */
    int64_t *cached_pn;     /* per worker: the column-block whose B panel is packed, or -1 */
} mm_job;

/* A[i0 + r, k0 + k] for r < mb, k < kc into MR-row strips laid out [k][MR]; rows past mb are zero. */
static void pack_a(const trr_call *call, int mr, int64_t i0, int64_t mb, int64_t k0, int64_t kc, float *dst) {
    const trr_operand *A = &call->x;
    int64_t lda = A->stride0;
    for (int64_t s = 0; s < mb; s += mr) {
        float *strip = dst + s * kc;
        int64_t rows = mb - s < mr ? mb - s : mr;
        if (!call->trans_a) { /* row-major [M,K]: each row is contiguous along k */
            for (int64_t r = 0; r < rows; r++) {
                int64_t base = A->offset + (i0 + s + r) * lda + k0;
                for (int64_t k = 0; k < kc; k++) strip[k * mr + r] = load_elem(A->mem, A->dtype, base + k);
            }
        } else { /* stored [K,M]: each k is contiguous along the rows */
            for (int64_t k = 0; k < kc; k++) {
                int64_t base = A->offset + (k0 + k) * lda + i0 + s;
                for (int64_t r = 0; r < rows; r++) strip[k * mr + r] = load_elem(A->mem, A->dtype, base + r);
            }
        }
        if (rows < mr)
            for (int64_t k = 0; k < kc; k++)
                for (int64_t r = rows; r < mr; r++) strip[k * mr + r] = 0.0f;
    }
}

/* B[k0 + k, j0 + c] for k < kc, c < nb into NR-column strips laid out [k][NR]; columns past nb are zero. */
static void pack_b(const trr_call *call, int nr, int64_t j0, int64_t nb, int64_t k0, int64_t kc, float *dst) {
    const trr_operand *B = &call->y;
    int64_t ldb = B->stride0;
    for (int64_t t = 0; t < nb; t += nr) {
        float *strip = dst + t * kc;
        int64_t cols = nb - t < nr ? nb - t : nr;
        if (!call->trans_b) { /* row-major [K,N] */
            for (int64_t k = 0; k < kc; k++) {
                int64_t base = B->offset + (k0 + k) * ldb + j0 + t;
                for (int64_t c = 0; c < cols; c++) strip[k * nr + c] = load_elem(B->mem, B->dtype, base + c);
                for (int64_t c = cols; c < nr; c++) strip[k * nr + c] = 0.0f;
            }
        } else { /* stored [N,K]: each column is contiguous along k */
            for (int64_t c = 0; c < cols; c++) {
                int64_t base = B->offset + (j0 + t + c) * ldb + k0;
                for (int64_t k = 0; k < kc; k++) strip[k * nr + c] = load_elem(B->mem, B->dtype, base + k);
            }
            for (int64_t k = 0; k < kc; k++)
                for (int64_t c = cols; c < nr; c++) strip[k * nr + c] = 0.0f;
        }
    }
}

static void store_block(const trr_call *call, int64_t i0, int64_t mb, int64_t j0, int64_t nb, const float *acc,
                        int64_t ldacc) {
    const trr_operand *C = &call->z;
    float row[MAX_NR * 8];
    /* 8-bit float inputs: the per-tensor scales multiply the f32 sum before the epilogue (docs/ops.md, matmul) */
    const float scale = trr_dtype_is_f8(call->x.dtype) ? (float)call->params[TRR_MATMUL_PARAM_SCALE_A] *
                                                             (float)call->params[TRR_MATMUL_PARAM_SCALE_B]
                                                       : 1.0f;
    for (int64_t i = 0; i < mb; i++) {
        const float *src = acc + i * ldacc;
        int64_t ci = C->offset + (i0 + i) * C->stride0 + j0;
        for (int64_t j = 0; j < nb; j += (int64_t)(sizeof row / sizeof row[0])) {
            int64_t n = nb - j < (int64_t)(sizeof row / sizeof row[0]) ? nb - j : (int64_t)(sizeof row / sizeof row[0]);
            for (int64_t t = 0; t < n; t++) row[t] = trr_cpu_epilogue(src[j + t] * scale, call->epilogue, call->alpha);
            trr_cpu_store_f32(C->mem, C->dtype, ci + j, row, n);
        }
    }
}

/*
 * Consecutive block ids of one group share their column-block (docs/ops.md's grouped order walks down GROUP_M
 * row-blocks before moving right), and the pool hands a worker runs of consecutive ids, so a worker packs B's
 * panel once per column-block and reuses it for the next row-blocks: packing costs a few cycles an element,
 * which repeated for every 64-row block would take as long as the arithmetic.
 */
static void block_task(void *arg, int64_t begin, int64_t end, int worker) {
    const mm_job *job = arg;
    int mr = job->kern.mr, nr = job->kern.nr;
    float *pa = job->scratch + (int64_t)worker * job->scratch_floats;
    float *acc = pa + job->bmp * job->bk;
    float *pb = acc + job->bmp * job->bnp;
    const int64_t per_batch = job->npm * job->npn;
    for (int64_t item = begin; item < end; item++) {
        /* items run batch-major: each batch is one grid of blocks, its operands found through the batch strides */
        const int64_t b = item / per_batch, pid = item % per_batch;
        trr_call bcall = *job->call;
        bcall.x.offset += b * bcall.x.batch_stride;
        bcall.y.offset += b * bcall.y.batch_stride;
        bcall.z.offset += b * bcall.z.batch_stride;
        const trr_call *call = &bcall;
        /* a packed B panel stays valid across batches only when B is shared by them */
        const int64_t panel = bcall.y.batch_stride ? b * job->npn : 0;
        int64_t pm, pn;
        trr_grouped_block(pid, job->npm, job->npn, job->group_m, &pm, &pn);
        int64_t i0 = pm * job->bm, j0 = pn * job->bn;
        int64_t mb = call->rows - i0 < job->bm ? call->rows - i0 : job->bm;
        int64_t nb = call->cols - j0 < job->bn ? call->cols - j0 : job->bn;
        int64_t mbp = round_up(mb, mr), nbp = round_up(nb, nr);
        if (job->b_whole && job->cached_pn[worker] != panel + pn) {
            for (int64_t k0 = 0; k0 < call->k; k0 += job->bk) {
                int64_t kc = call->k - k0 < job->bk ? call->k - k0 : job->bk;
                pack_b(call, nr, j0, nb, k0, kc, pb + k0 * job->bnp);
            }
            job->cached_pn[worker] = panel + pn;
        }
        memset(acc, 0, (size_t)(mbp * nbp) * sizeof(float));
        for (int64_t k0 = 0; k0 < call->k; k0 += job->bk) {
            int64_t kc = call->k - k0 < job->bk ? call->k - k0 : job->bk;
            const float *pbk = pb + k0 * job->bnp;
            if (!job->b_whole) {
                pack_b(call, nr, j0, nb, k0, kc, pb);
                pbk = pb;
            }
            pack_a(call, mr, i0, mb, k0, kc, pa);
            /* One B strip (kc x NR) stays in L1 while every A strip of the block, held in L2, passes it. */
            for (int64_t t = 0; t < nbp; t += nr)
                for (int64_t s = 0; s < mbp; s += mr) job->kern.fn(kc, pa + s * kc, pbk + t * kc, acc + s * nbp + t, nbp);
        }
        store_block(call, i0, mb, j0, nb, acc, nbp);
    }
}

trr_status trr_cpu_matmul(trr_context *ctx, const trr_call *call) {
    mm_job job;
    memset(&job, 0, sizeof job);
    job.call = call;
    job.kern = pick_kernel();
    job.bm = call->config.block_m;
    job.bn = call->config.block_n;
    job.bk = call->config.block_k;
    job.group_m = call->config.group_m > 0 ? call->config.group_m : 1;
    if (job.bm < 1 || job.bn < 1 || job.bk < 1 || job.bm > BLOCK_LIMIT || job.bn > BLOCK_LIMIT ||
        job.bk > BLOCK_LIMIT)
        return trr_cpu_matmul_check_config(ctx, call);
    /* Blocks larger than the problem only add padding. */
    if (job.bm > call->rows) job.bm = call->rows;
    if (job.bn > call->cols) job.bn = call->cols;
    if (job.bk > call->k) job.bk = call->k;
    job.npm = (call->rows + job.bm - 1) / job.bm;
    job.npn = (call->cols + job.bn - 1) / job.bn;
    job.bmp = round_up(job.bm, job.kern.mr);
    job.bnp = round_up(job.bn, job.kern.nr);
    /* Keeping B's panel for all of K is worth it only when a column-block has more than one row-block, and
     * only while the panel stays a modest size (it streams from L3 one BLOCK_K slice at a time). */
    int64_t whole = round_up(call->k, job.bk) * job.bnp;
    job.b_whole = job.npm > 1 && whole <= B_PANEL_LIMIT;
    job.b_floats = job.b_whole ? whole : job.bk * job.bnp;
    /* Rounded to 16 floats so each worker's scratch starts on its own cache line. */
    job.scratch_floats = round_up(job.bmp * job.bk + job.bmp * job.bnp + job.b_floats, 16);
    trr_cpu_pool *pool = trr_cpu_ctx_pool(ctx);
    int workers = trr_cpu_pool_workers(pool);
    size_t bytes = (size_t)job.scratch_floats * (size_t)workers * sizeof(float);
    void *scratch = NULL;
    job.cached_pn = malloc((size_t)workers * sizeof *job.cached_pn);
    if (!job.cached_pn || posix_memalign(&scratch, 64, bytes) != 0 || !scratch) {
        free(job.cached_pn);
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "cpu matmul: %zu bytes of packing scratch", bytes);
    }
    for (int w = 0; w < workers; w++) job.cached_pn[w] = -1;
    job.scratch = scratch;
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    trr_cpu_parallel_for(pool, batch * job.npm * job.npn, 1, block_task, &job);
    free(scratch);
    free(job.cached_pn);
    return TRR_OK;
}

/* Defaults sized for one core's caches: a 256 x 256 f32 panel of B (256 KiB) and a 64 x 256 panel of A
 * (64 KiB) fit a 512 KiB-1 MiB L2 together. Small problems get smaller blocks so both cores get work. */
void trr_cpu_matmul_choose_config(trr_call *call) {
    trr_config *c = &call->config;
    kernel_choice kern = pick_kernel();
    if (!c->block_m) {
        int64_t bm = 64;
        if (call->rows < bm) bm = round_up(call->rows, kern.mr);
        c->block_m = (int)bm;
    }
    if (!c->block_n) {
        int64_t bn = 256;
        /* With one row-block, split the columns so every core has a block to run. */
        int64_t cores = trr_cpu_core_count();
        if (call->rows <= c->block_m && call->cols < bn * cores)
            bn = round_up((call->cols + cores - 1) / cores, kern.nr);
        if (bn < kern.nr) bn = kern.nr;
        c->block_n = (int)bn;
    }
    if (!c->block_k) c->block_k = 256;
    if (!c->group_m) c->group_m = 8;
    if (!c->threads) c->threads = 1;      /* one core per block */
    if (!c->stages) c->stages = 1;        /* no software pipeline: the hardware prefetcher does that */
    if (!c->vector_width) c->vector_width = kern.nr;
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
    if (c->split_k > 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu matmul: split_k %d is not implemented (only 1)",
                         c->split_k);
    return TRR_OK;
}
