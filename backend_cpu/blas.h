/*
 * The system BLAS as the CPU kernels call it: OpenBLAS's single-precision GEMM, row-major, run on the calling
 * thread. The backend's pool supplies the parallelism (one tile of the output per task), so OpenBLAS's own
 * threads stay off while any trireme call uses it: trr_cpu_blas_begin sets OpenBLAS to one thread through its API
 * (counting nested and concurrent users, so contexts in several threads agree) and the last trr_cpu_blas_end gives
 * back the count the process had, so an application's own OpenBLAS calls (NumPy's, say) keep their threads.
 */
#ifndef TRR_CPU_BLAS_H
#define TRR_CPU_BLAS_H

#include <stdint.h>

void trr_cpu_blas_begin(void);
void trr_cpu_blas_end(void);

/* c = a·b (beta = 0) or c += a·b (beta = 1), through sgemv when m or n is 1. a is m x k stored row-major with
 * leading dimension lda, or stored k x m when trans_a; b is k x n, or stored n x k when trans_b; c is m x n with
 * ldc. Each leading dimension is at least the stored row length, every dimension at least 1 and below 2^31 (what
 * validation guarantees). */
void trr_cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
