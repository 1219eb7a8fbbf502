/* The system BLAS (blas.h): OpenBLAS through its CBLAS interface, with its thread count set through its own API. */
#define _POSIX_C_SOURCE 200809L

#include "blas.h"

#include <cblas.h>
#include <pthread.h>

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static int users;     /* trireme calls between begin and end, in every thread */
static int saved = 1; /* the process's OpenBLAS thread count before the first of them */

void trr_cpu_blas_begin(void) {
    pthread_mutex_lock(&threads_lock);
    if (users++ == 0) {
        saved = openblas_get_num_threads();
        if (saved != 1) openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&threads_lock);
}

void trr_cpu_blas_end(void) {
    pthread_mutex_lock(&threads_lock);
    if (--users == 0 && saved != 1) openblas_set_num_threads(saved);
    pthread_mutex_unlock(&threads_lock);
}

/* One row or one column of C is a matrix-vector product, which sgemv computes at the speed memory gives without
 * the copy of B (or A) into panels that sgemm makes first. */
void trr_cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    if (m == 1) { /* c[j] = sum over k of a[k] b[k, j]: B (or B stored [N,K]) times the row of A */
        const blasint inc_a = trans_a ? (blasint)lda : 1;
        if (trans_b)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)n, (blasint)k, 1.0f, b, (blasint)ldb, a, inc_a, beta, c,
                        1);
        else
            cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)k, (blasint)n, 1.0f, b, (blasint)ldb, a, inc_a, beta, c, 1);
        return;
    }
    if (n == 1) { /* c[i] = sum over k of a[i, k] b[k]: A (or A stored [K,M]) times the column of B */
        const blasint inc_b = trans_b ? 1 : (blasint)ldb;
        if (trans_a)
            cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)k, (blasint)m, 1.0f, a, (blasint)lda, b, inc_b, beta, c,
                        (blasint)ldc);
        else
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)m, (blasint)k, 1.0f, a, (blasint)lda, b, inc_b, beta, c,
                        (blasint)ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (blasint)m,
                (blasint)n, (blasint)k, 1.0f, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}
