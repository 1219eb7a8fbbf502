/* The vendor ceiling for matmul. On a CPU device the system BLAS answers (blas.c). On CUDA it is cuBLAS, loaded at
 * run time (no toolkit headers at build time), called on the benchmark's own device buffers, on the CUDA backend's
 * stream, timed with the same device timer, repetition by repetition beside the case (run.c). The stream,
 * context and device addresses come through the public native-handle calls (trr_context_native,
 * trr_buffer_native), not the backend's internals.
 *
 * f16 and bf16: cublasGemmEx, f16 (bf16) in and out, f32 compute (what trireme's half matmuls compute); a batched
 * case (bmm_f16) calls cublasGemmStridedBatchedEx the same way, with each operand's batch stride (0 for a shared
 * one). f32: cublasSgemm with
 * CUBLAS_PEDANTIC_MATH, so no TF32 and no reduced-precision shortcut: docs/ops.md's "genuine f32" ceiling.
 * Row-major C = A·B is the column-major product C^T = B^T·A^T, so the operands are passed swapped. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
#include "bench.h"
#include "op_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TRR_BENCH_WITH_CUDA
#include "dynlib.h"
#endif

#ifdef TRR_BENCH_WITH_CUDA
/* One case's product, as trr_bench_vendor_call hands it to the timer. */
typedef struct gemm_job {
    struct trr_bench_vendor *v;
    const trr_case *c;
    uint64_t a, b, cc; /* CUdeviceptr */
} gemm_job;
#endif

struct trr_bench_vendor {
    char name[128];
    char reason[256];
    trr_bench_blas *blas; /* a CPU device: the system BLAS (blas.c) answers instead */
#ifdef TRR_BENCH_WITH_CUDA
    void *lib;
    void *handle;
    int (*Create)(void **);
    int (*Destroy)(void *);
    int (*SetStream)(void *, void *);
    int (*SetMathMode)(void *, int);
    int (*GetVersion)(void *, int *);
    int (*Sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                 const float *, float *, int);
    int (*GemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                  const void *, void *, int, int, int, int);
    int (*GemmStridedBatchedEx)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
                                const void *, int, int, long long, const void *, void *, int, int, long long, int,
                                int, int);
    gemm_job job; /* the case trr_bench_vendor_call prepared last */
#endif
};

const char *trr_bench_vendor_name(const trr_bench_vendor *v) { return v ? v->name : ""; }
const char *trr_bench_vendor_reason(const trr_bench_vendor *v) { return v ? v->reason : "no vendor library"; }

#ifndef TRR_BENCH_WITH_CUDA

void trr_bench_vendor_open(trr_context *ctx, trr_bench_vendor **out) {
    trr_device_info dev;
    *out = calloc(1, sizeof **out);
    if (!*out) return;
    if (((*out)->blas = trr_bench_blas_open(ctx, (*out)->name, sizeof (*out)->name))) return;
    if (trr_context_device(ctx, &dev) == TRR_OK && strcmp(dev.backend, "cuda") != 0)
        snprintf((*out)->reason, sizeof (*out)->reason, "no vendor matmul library for the %s backend", dev.backend);
    else
        snprintf((*out)->reason, sizeof (*out)->reason, "built without the CUDA backend (TRIREME_CUDA=OFF)");
}

void trr_bench_vendor_close(trr_bench_vendor *v) {
    if (v) trr_bench_blas_close(v->blas);
    free(v);
}

trr_status trr_bench_vendor_call(trr_bench_vendor *v, trr_context *ctx, const trr_bench_setup *s,
                                 trr_bench_timed *out, const char **out_what) {
    if (v && v->blas) return trr_bench_blas_call(v->blas, ctx, s, out, out_what);
    *out_what = trr_bench_vendor_reason(v);
    return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s", *out_what);
}

#else

enum {
    CUBLAS_OK = 0,
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16,
    CUDA_R_32F = 0,
    CUDA_R_16F = 2,
    CUDA_R_16BF = 14,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_GEMM_DEFAULT = -1
};

/* Where to look: the directories in TRIREME_CUBLAS_DIR (colon separated) first, then the loader's path. */
static void *open_cublas(char *found, size_t found_cap, char *reason, size_t reason_cap) {
    static const char *const sonames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    const char *dirs = getenv("TRIREME_CUBLAS_DIR");
    if (dirs && *dirs) {
        char *copy = strdup(dirs);
        for (char *save = NULL, *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
            for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
                char path[1024];
                snprintf(path, sizeof path, "%s/%s", d, sonames[i]);
                const char *one[] = {path, NULL};
                void *lib = trr_dynlib_open(one, reason, reason_cap);
                if (lib) {
                    snprintf(found, found_cap, "%s", path);
                    free(copy);
                    return lib;
                }
            }
        }
        free(copy);
    }
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        const char *one[] = {sonames[i], NULL};
        void *lib = trr_dynlib_open(one, reason, reason_cap);
        if (lib) {
            snprintf(found, found_cap, "%s", sonames[i]);
            return lib;
        }
    }
    snprintf(reason, reason_cap, "cuBLAS not found (tried libcublas.so.13, .so.12, .so%s%s)",
             dirs && *dirs ? " in TRIREME_CUBLAS_DIR and" : " in", " the loader's path");
    return NULL;
}

#define LOAD(field, sym)                                                                                       \
    do {                                                                                                       \
        void *sym_ = trr_dynlib_sym(v->lib, sym, v->reason, sizeof v->reason);                                 \
        if (!sym_) return;                                                                                     \
        memcpy(&v->field, &sym_, sizeof sym_);                                                                 \
    } while (0)

static void load(trr_context *ctx, trr_bench_vendor *v) {
    trr_device_info dev;
    if (trr_context_device(ctx, &dev) != TRR_OK || strcmp(dev.backend, "cuda") != 0) {
        snprintf(v->reason, sizeof v->reason, "no vendor matmul library for the %s backend", dev.backend);
        return;
    }
    char path[1024] = "";
    v->lib = open_cublas(path, sizeof path, v->reason, sizeof v->reason);
    if (!v->lib) return;
    LOAD(Create, "cublasCreate_v2");
    LOAD(Destroy, "cublasDestroy_v2");
    LOAD(SetStream, "cublasSetStream_v2");
    LOAD(SetMathMode, "cublasSetMathMode");
    LOAD(GetVersion, "cublasGetVersion_v2");
    LOAD(Sgemm, "cublasSgemm_v2");
    LOAD(GemmEx, "cublasGemmEx");
    LOAD(GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    /* cuBLAS works in the thread's current CUDA context: trr_context_native makes the backend's current */
    trr_native native;
    if (trr_context_native(ctx, &native) != TRR_OK) {
        snprintf(v->reason, sizeof v->reason, "binding the CUDA context: %s", trr_last_error(ctx));
        return;
    }
    int r = v->Create(&v->handle);
    if (r != CUBLAS_OK) {
        v->handle = NULL;
        snprintf(v->reason, sizeof v->reason, "cublasCreate failed (status %d)", r);
        return;
    }
    int ver = 0;
    v->GetVersion(v->handle, &ver);
    snprintf(v->name, sizeof v->name, "cuBLAS %d.%d.%d (%s)", ver / 10000, ver / 100 % 100, ver % 100, path);
    v->reason[0] = '\0';
}

void trr_bench_vendor_open(trr_context *ctx, trr_bench_vendor **out) {
    *out = calloc(1, sizeof **out);
    if (!*out || ((*out)->blas = trr_bench_blas_open(ctx, (*out)->name, sizeof (*out)->name))) return;
    load(ctx, *out);
}

void trr_bench_vendor_close(trr_bench_vendor *v) {
    if (!v) return;
    trr_bench_blas_close(v->blas);
    if (v->handle) v->Destroy(v->handle);
    /* the library stays loaded: unloading cuBLAS while the driver still holds its modules is not safe */
    free(v);
}

static trr_status run_gemm(trr_context *ctx, void *user) {
    gemm_job *j = user;
    const trr_case *c = j->c;
    const int m = (int)c->m, n = (int)c->n, k = (int)c->k;
    /* column-major view of row-major storage: B^T is n x k with ld = n (or, stored [N,K], k and transposed) */
    const int opb = c->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, opa = c->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = c->trans_b ? k : n, lda = c->trans_a ? m : k;
    const float one = 1.0f, zero = 0.0f;
    int r;
    if (c->batch > 0) {
        /* packed batches (bench cases are packed): one whole matrix apart, or 0 for an input shared by the batch */
        const long long sa = c->bcast_a ? 0 : (long long)m * k, sb = c->bcast_b ? 0 : (long long)k * n;
        const long long sc = (long long)m * n;
        const int batch = (int)c->batch;
        const int ctype = c->out_dtype == TRR_F16 ? CUDA_R_16F : c->out_dtype == TRR_BF16 ? CUDA_R_16BF : CUDA_R_32F;
        const int itype = c->in_dtype == TRR_F16 ? CUDA_R_16F : c->in_dtype == TRR_BF16 ? CUDA_R_16BF : CUDA_R_32F;
        r = j->v->GemmStridedBatchedEx(j->v->handle, opb, opa, n, m, k, &one, (const void *)(uintptr_t)j->b, itype,
                                       ldb, sb, (const void *)(uintptr_t)j->a, itype, lda, sa, &zero,
                                       (void *)(uintptr_t)j->cc, ctype, n, sc, batch, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT);
        if (r != CUBLAS_OK)
            return trr_error(ctx, TRR_ERR_DEVICE, "cublasGemmStridedBatchedEx failed (status %d)", r);
        return TRR_OK;
    }
    if (c->in_dtype == TRR_F32)
        r = j->v->Sgemm(j->v->handle, opb, opa, n, m, k, &one, (const float *)(uintptr_t)j->b, ldb,
                        (const float *)(uintptr_t)j->a, lda, &zero, (float *)(uintptr_t)j->cc, n);
    else {
        const int in = c->in_dtype == TRR_BF16 ? CUDA_R_16BF : CUDA_R_16F;
        r = j->v->GemmEx(j->v->handle, opb, opa, n, m, k, &one, (const void *)(uintptr_t)j->b, in, ldb,
                         (const void *)(uintptr_t)j->a, in, lda, &zero, (void *)(uintptr_t)j->cc,
                         c->out_dtype == TRR_F32 ? CUDA_R_32F : in, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (r != CUBLAS_OK) return trr_error(ctx, TRR_ERR_DEVICE, "cuBLAS gemm failed (status %d)", r);
    return TRR_OK;
}

trr_status trr_bench_vendor_call(trr_bench_vendor *v, trr_context *ctx, const trr_bench_setup *s,
                                 trr_bench_timed *out, const char **out_what) {
    const trr_case *c = &s->tcase;
    *out_what = "";
    if (v && v->blas) return trr_bench_blas_call(v->blas, ctx, s, out, out_what);
    if (!v || !v->handle) {
        *out_what = trr_bench_vendor_reason(v);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s", *out_what);
    }
    if (trr_op_desc_get(c->op)->shape != TRR_SHAPE_MATMUL ||
        (c->in_dtype != TRR_F32 && c->in_dtype != TRR_F16 && c->in_dtype != TRR_BF16) ||
        (c->in_dtype == TRR_F32 && c->out_dtype != TRR_F32)) {
        *out_what = "no cuBLAS equivalent for this case";
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s", *out_what);
    }
    trr_native native;
    TRR_TRY(trr_context_native(ctx, &native));
    /* on the backend's stream, so the backend's timer events bracket exactly the cuBLAS kernels */
    int r = v->SetStream(v->handle, native.queue);
    /* f32: pedantic, so no TF32 (docs/ops.md's "no TF32" figure). f16: the default math, as PyTorch calls it, but
     * with every reduction in f32 as trireme's kernels do; against the pedantic mode it makes no difference that
     * shows through cuBLAS's spread between processes. */
    const int math = c->in_dtype == TRR_F32 ? CUBLAS_PEDANTIC_MATH
                                            : CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (r == CUBLAS_OK) r = v->SetMathMode(v->handle, math);
    if (r != CUBLAS_OK) return trr_error(ctx, TRR_ERR_DEVICE, "cublasSetStream/SetMathMode failed (status %d)", r);
    uint64_t a = 0, b = 0, cc = 0; /* CUdeviceptr */
    TRR_TRY(trr_buffer_native(s->op[0].buf, &a));
    TRR_TRY(trr_buffer_native(s->op[1].buf, &b));
    TRR_TRY(trr_buffer_native(s->op[TRR_OUT].buf, &cc));
    v->job = (gemm_job){.v = v, .c = c, .a = a, .b = b, .cc = cc};
    *out_what = c->batch > 0                ? "cublasGemmStridedBatchedEx (f16 in, f32 compute and reductions)"
                : c->in_dtype == TRR_F32    ? "cublasSgemm (pedantic f32, no TF32)"
                : c->in_dtype == TRR_BF16 ? "cublasGemmEx (bf16 in, f32 compute and reductions)"
                                          : "cublasGemmEx (f16 in, f32 compute and reductions)";
    *out = (trr_bench_timed){run_gemm, &v->job};
    return TRR_OK;
}

#endif
