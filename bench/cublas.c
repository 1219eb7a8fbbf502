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
 * 8-bit floats (matmul_fp8): cuBLASLt's cublasLtMatmul from libcublasLt, loaded the same way, with f32 compute, the
 * per-tensor scale pointers (1.0, on the device) and fast accumulation off (the default: partial sums promoted to
 * f32, as trireme's kernels do); FP8 takes the TN form only, which a row-major A and a B stored [N,K] are. The
 * heuristic's first algorithm for a 32 MiB workspace, chosen once per case before the timing.
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

/* cuBLASLt's opaque algorithm (cublasLtMatmulAlgo_t) and heuristic result (cublasLtMatmulHeuristicResult_t) */
typedef struct lt_algo {
    uint64_t data[8];
} lt_algo;
typedef struct lt_heuristic {
    lt_algo algo;
    size_t workspace_size;
    int state;
    float waves;
    int reserved[4];
} lt_heuristic;

/* One 8-bit float product through cuBLASLt: its descriptors, made once per case, and the algorithm chosen. */
typedef struct lt_job {
    struct trr_bench_vendor *v;
    void *desc, *la, *lb, *lc; /* cublasLtMatmulDesc_t, cublasLtMatrixLayout_t of A, B and C (= D) */
    lt_algo algo;
    size_t workspace_size;
    uint64_t a, b, cc;
} lt_job;
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
    /* cuBLASLt, for the 8-bit floats: NULL lt when libcublasLt did not load (lt_reason says why) */
    void *lt_lib, *lt;
    char lt_reason[256];
    int (*LtCreate)(void **);
    int (*LtDestroy)(void *);
    int (*LtMatmulDescCreate)(void **, int, int);
    int (*LtMatmulDescDestroy)(void *);
    int (*LtMatmulDescSetAttribute)(void *, int, const void *, size_t);
    int (*LtMatrixLayoutCreate)(void **, int, uint64_t, uint64_t, int64_t);
    int (*LtMatrixLayoutDestroy)(void *);
    int (*LtMatmulPreferenceCreate)(void **);
    int (*LtMatmulPreferenceDestroy)(void *);
    int (*LtMatmulPreferenceSetAttribute)(void *, int, const void *, size_t);
    int (*LtMatmulAlgoGetHeuristic)(void *, void *, void *, void *, void *, void *, void *, int, lt_heuristic *, int *);
    int (*LtMatmul)(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                    const void *, void *, void *, void *, const lt_algo *, void *, size_t, void *);
    trr_buffer *lt_workspace, *lt_scales; /* 32 MiB; two f32 1.0 (scale_a, scale_b) */
    lt_job lt_job;                        /* the 8-bit float case prepared last */
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
    CUDA_R_8F_E4M3 = 28,
    CUDA_R_8F_E5M2 = 29,
    /* cublasLtMatmulDescAttributes_t, cublasLtMatmulPreferenceAttributes_t */
    LT_DESC_TRANSA = 3,
    LT_DESC_TRANSB = 4,
    LT_DESC_A_SCALE_POINTER = 17,
    LT_DESC_B_SCALE_POINTER = 18,
    LT_PREF_MAX_WORKSPACE_BYTES = 1,
    LT_WORKSPACE_BYTES = 32 << 20
};

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

/* Where to look: the directories in TRIREME_CUBLAS_DIR (colon separated) first, then the loader's path; lt opens
 * libcublasLt instead. */
static void *open_cublas(int lt, char *found, size_t found_cap, char *reason, size_t reason_cap) {
    static const char *const blas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    static const char *const blas_lt[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
    const char *const *sonames = lt ? blas_lt : blas;
    const char *dirs = getenv("TRIREME_CUBLAS_DIR");
    if (dirs && *dirs) {
        char *copy = strdup(dirs);
        for (char *save = NULL, *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
            for (size_t i = 0; i < 3; i++) {
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
    for (size_t i = 0; i < 3; i++) {
        const char *one[] = {sonames[i], NULL};
        void *lib = trr_dynlib_open(one, reason, reason_cap);
        if (lib) {
            snprintf(found, found_cap, "%s", sonames[i]);
            return lib;
        }
    }
    snprintf(reason, reason_cap, "%s not found (tried %s.so.13, .so.12, .so%s%s)", lt ? "cuBLASLt" : "cuBLAS",
             lt ? "libcublasLt" : "libcublas", dirs && *dirs ? " in TRIREME_CUBLAS_DIR and" : " in",
             " the loader's path");
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
    v->lib = open_cublas(0, path, sizeof path, v->reason, sizeof v->reason);
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

#define LOAD_LT(field, sym)                                                                                    \
    do {                                                                                                       \
        void *sym_ = trr_dynlib_sym(v->lt_lib, sym, v->lt_reason, sizeof v->lt_reason);                        \
        if (!sym_) return;                                                                                     \
        memcpy(&v->field, &sym_, sizeof sym_);                                                                 \
    } while (0)

/* cuBLASLt and its device memory (a workspace, the two scales), on the first 8-bit float case. */
static void load_lt(trr_context *ctx, trr_bench_vendor *v) {
    char path[1024] = "";
    v->lt_lib = open_cublas(1, path, sizeof path, v->lt_reason, sizeof v->lt_reason);
    if (!v->lt_lib) return;
    LOAD_LT(LtCreate, "cublasLtCreate");
    LOAD_LT(LtDestroy, "cublasLtDestroy");
    LOAD_LT(LtMatmulDescCreate, "cublasLtMatmulDescCreate");
    LOAD_LT(LtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
    LOAD_LT(LtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
    LOAD_LT(LtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
    LOAD_LT(LtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
    LOAD_LT(LtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
    LOAD_LT(LtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
    LOAD_LT(LtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
    LOAD_LT(LtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
    LOAD_LT(LtMatmul, "cublasLtMatmul");
    const float ones[2] = {1.0f, 1.0f};
    if (trr_buffer_create(ctx, LT_WORKSPACE_BYTES, &v->lt_workspace) != TRR_OK ||
        trr_buffer_create(ctx, sizeof ones, &v->lt_scales) != TRR_OK ||
        trr_buffer_write(ctx, v->lt_scales, 0, ones, sizeof ones) != TRR_OK) {
        snprintf(v->lt_reason, sizeof v->lt_reason, "cuBLASLt's workspace: %s", trr_last_error(ctx));
        return;
    }
    int r = v->LtCreate(&v->lt);
    if (r != CUBLAS_OK) {
        v->lt = NULL;
        snprintf(v->lt_reason, sizeof v->lt_reason, "cublasLtCreate failed (status %d)", r);
        return;
    }
    v->lt_reason[0] = '\0';
}

static void lt_job_free(trr_bench_vendor *v) {
    lt_job *j = &v->lt_job;
    if (j->desc) v->LtMatmulDescDestroy(j->desc);
    if (j->la) v->LtMatrixLayoutDestroy(j->la);
    if (j->lb) v->LtMatrixLayoutDestroy(j->lb);
    if (j->lc) v->LtMatrixLayoutDestroy(j->lc);
    memset(j, 0, sizeof *j);
}

static int cuda_type(trr_dtype d) {
    switch (d) {
    case TRR_F16: return CUDA_R_16F;
    case TRR_BF16: return CUDA_R_16BF;
    case TRR_F8E4M3: return CUDA_R_8F_E4M3;
    case TRR_F8E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
    }
}

/* The descriptors of c's product and the heuristic's algorithm. Column-major, C^T [N,M] = B' . A^T: cuBLASLt's
 * "A" is B stored [N,K] (column-major K x N, ld K, transposed) and its "B" is our row-major A (K x M, ld K). */
static trr_status lt_prepare(trr_context *ctx, trr_bench_vendor *v, const trr_case *c) {
    lt_job_free(v);
    lt_job *j = &v->lt_job;
    j->v = v;
    const int m = (int)c->m, n = (int)c->n, k = (int)c->k;
    const int opt = CUBLAS_OP_T, opn = CUBLAS_OP_N;
    uint64_t scales = 0;
    TRR_TRY(trr_buffer_native(v->lt_scales, &scales));
    const uint64_t scale_a = scales, scale_b = scales + sizeof(float);
    void *pref = NULL;
    lt_heuristic h;
    int found = 0;
    const uint64_t ws = LT_WORKSPACE_BYTES;
    int r = v->LtMatmulDescCreate(&j->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (r == CUBLAS_OK) r = v->LtMatmulDescSetAttribute(j->desc, LT_DESC_TRANSA, &opt, sizeof opt);
    if (r == CUBLAS_OK) r = v->LtMatmulDescSetAttribute(j->desc, LT_DESC_TRANSB, &opn, sizeof opn);
    /* its "A" is our B, its "B" our A: the scales follow the operands */
    if (r == CUBLAS_OK) r = v->LtMatmulDescSetAttribute(j->desc, LT_DESC_A_SCALE_POINTER, &scale_b, sizeof scale_b);
    if (r == CUBLAS_OK) r = v->LtMatmulDescSetAttribute(j->desc, LT_DESC_B_SCALE_POINTER, &scale_a, sizeof scale_a);
    if (r == CUBLAS_OK) r = v->LtMatrixLayoutCreate(&j->la, cuda_type(trr_case_dtype(c, TRR_SLOT_Y)), (uint64_t)k, (uint64_t)n, k);
    if (r == CUBLAS_OK) r = v->LtMatrixLayoutCreate(&j->lb, cuda_type(c->in_dtype), (uint64_t)k, (uint64_t)m, k);
    if (r == CUBLAS_OK) r = v->LtMatrixLayoutCreate(&j->lc, cuda_type(c->out_dtype), (uint64_t)n, (uint64_t)m, n);
    if (r == CUBLAS_OK) r = v->LtMatmulPreferenceCreate(&pref);
    if (r == CUBLAS_OK) r = v->LtMatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (r == CUBLAS_OK)
        r = v->LtMatmulAlgoGetHeuristic(v->lt, j->desc, j->la, j->lb, j->lc, j->lc, pref, 1, &h, &found);
    if (pref) v->LtMatmulPreferenceDestroy(pref);
    if (r != CUBLAS_OK || found < 1) {
        lt_job_free(v);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for this 8-bit float product (status %d, "
                         "%d found)", r, found);
    }
    j->algo = h.algo;
    j->workspace_size = h.workspace_size;
    return TRR_OK;
}

static trr_status run_lt(trr_context *ctx, void *user) {
    lt_job *j = user;
    trr_bench_vendor *v = j->v;
    trr_native native;
    TRR_TRY(trr_context_native(ctx, &native));
    uint64_t workspace = 0;
    TRR_TRY(trr_buffer_native(v->lt_workspace, &workspace));
    const float one = 1.0f, zero = 0.0f;
    const int r = v->LtMatmul(v->lt, j->desc, &one, (const void *)(uintptr_t)j->b, j->la, (const void *)(uintptr_t)j->a,
                              j->lb, &zero, (void *)(uintptr_t)j->cc, j->lc, (void *)(uintptr_t)j->cc, j->lc, &j->algo,
                              (void *)(uintptr_t)workspace, j->workspace_size, native.queue);
    if (r != CUBLAS_OK) return trr_error(ctx, TRR_ERR_DEVICE, "cublasLtMatmul failed (status %d)", r);
    return TRR_OK;
}

void trr_bench_vendor_open(trr_context *ctx, trr_bench_vendor **out) {
    *out = calloc(1, sizeof **out);
    if (!*out || ((*out)->blas = trr_bench_blas_open(ctx, (*out)->name, sizeof (*out)->name))) return;
    load(ctx, *out);
}

void trr_bench_vendor_close(trr_bench_vendor *v) {
    if (!v) return;
    if (v->lt) {
        lt_job_free(v);
        v->LtDestroy(v->lt);
    }
    trr_buffer_destroy(v->lt_workspace);
    trr_buffer_destroy(v->lt_scales);
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
    if (trr_op_desc_get(c->op)->shape == TRR_SHAPE_MATMUL &&
        (c->in_dtype == TRR_F8E4M3 || c->in_dtype == TRR_F8E5M2)) {
        /* cuBLASLt: a single product, A row-major and B stored [N,K] (FP8's TN form) */
        if (c->batch > 0 || c->trans_a || !c->trans_b) {
            *out_what = "cuBLASLt takes 8-bit floats in the TN form only (A row-major, B stored [N,K])";
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s", *out_what);
        }
        if (!v->lt_lib && !v->lt_reason[0]) load_lt(ctx, v);
        if (!v->lt) {
            *out_what = v->lt_reason;
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s", *out_what);
        }
        TRR_TRY(lt_prepare(ctx, v, c));
        TRR_TRY(trr_buffer_native(s->op[0].buf, &v->lt_job.a));
        TRR_TRY(trr_buffer_native(s->op[1].buf, &v->lt_job.b));
        TRR_TRY(trr_buffer_native(s->op[TRR_OUT].buf, &v->lt_job.cc));
        *out_what = "cublasLtMatmul (8-bit floats, f32 compute, scale pointers 1.0, fast accumulation off)";
        *out = (trr_bench_timed){run_lt, &v->lt_job};
        return TRR_OK;
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
