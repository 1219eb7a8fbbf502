/* The vendor ceiling for matmul on the CPU backend: the system BLAS's sgemm (OpenBLAS), called directly on the
 * benchmark's own buffers (a CPU buffer's native handle is its host address) with OpenBLAS's own kernel selection
 * and its own threads, as the process has them set: what NumPy's `a @ b` runs, and what cuBLAS is to the CUDA
 * backend. Timed by the same wall clock, repetition by repetition beside the case (run.c). Debian's OpenBLAS has
 * no half-precision GEMM, so f16 and bf16 cases have no vendor figure here. */
#include "bench.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trr_bench_blas {
    const trr_case *c;
    const float *a, *b;
    float *cc;
};

trr_bench_blas *trr_bench_blas_open(trr_context *ctx, char *name, size_t name_cap) {
    trr_device_info dev;
    if (trr_context_device(ctx, &dev) != TRR_OK || strcmp(dev.backend, "cpu") != 0) return NULL;
    trr_bench_blas *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    /* the configuration string starts with the version; the core name is the kernel chosen for this CPU */
    char version[32] = "";
    const char *config = openblas_get_config();
    if (!config || sscanf(config, "OpenBLAS %31s", version) != 1) snprintf(version, sizeof version, "?");
    snprintf(name, name_cap, "OpenBLAS %s (%s kernels, %d threads)", version, openblas_get_corename(),
             openblas_get_num_threads());
    return b;
}

void trr_bench_blas_close(trr_bench_blas *b) {
    free(b);
}

static trr_status run_sgemm(trr_context *ctx, void *user) {
    (void)ctx;
    const trr_bench_blas *b = user;
    const trr_case *c = b->c;
    const blasint m = (blasint)c->m, n = (blasint)c->n, k = (blasint)c->k;
    /* bench cases are packed: each operand's leading dimension is its stored row */
    cblas_sgemm(CblasRowMajor, c->trans_a ? CblasTrans : CblasNoTrans, c->trans_b ? CblasTrans : CblasNoTrans, m, n,
                k, 1.0f, b->a, c->trans_a ? m : k, b->b, c->trans_b ? k : n, 0.0f, b->cc, n);
    return TRR_OK;
}

trr_status trr_bench_blas_call(trr_bench_blas *b, trr_context *ctx, const trr_bench_setup *s, trr_bench_timed *out,
                               const char **out_what) {
    const trr_case *c = &s->tcase;
    if (trr_op_desc_get(c->op)->shape != TRR_SHAPE_MATMUL || c->in_dtype != TRR_F32 || c->out_dtype != TRR_F32 || c->batch > 0) {
        *out_what = "no sgemm equivalent for this case (the system BLAS has no half-precision GEMM)";
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s", *out_what);
    }
    uint64_t a = 0, bb = 0, cc = 0;
    TRR_TRY(trr_buffer_native(s->op[0].buf, &a));
    TRR_TRY(trr_buffer_native(s->op[1].buf, &bb));
    TRR_TRY(trr_buffer_native(s->op[TRR_OUT].buf, &cc));
    b->c = c;
    b->a = (const float *)(uintptr_t)a;
    b->b = (const float *)(uintptr_t)bb;
    b->cc = (float *)(uintptr_t)cc;
    *out_what = "cblas_sgemm (f32, the library's own threads)";
    *out = (trr_bench_timed){run_sgemm, b};
    return TRR_OK;
}
