/*
 * Internals of the CPU backend: the device handle, the thread pool and one entry point per op family.
 *
 * The CPU backend is the portable baseline every other backend is compared with, and the device the test
 * suite runs on where no GPU exists, so it favours plainly correct code that GCC auto-vectorises at -O2 over
 * hand-written SIMD, and leaves the arithmetic that libraries do better to them: matmul to the system BLAS
 * (blas.h), the exponentials to SLEEF (vmath.h). Buffers are host memory, so an operand's mem field is its host
 * base pointer.
 */
#ifndef TRR_CPU_H
#define TRR_CPU_H

#include "backend.h"
#include "op_table.h"

#include <stdint.h>

/* ---- thread pool (threadpool.c) ---- */

typedef struct trr_cpu_pool trr_cpu_pool;

/* Runs items [begin, end) of a parallel loop. worker is in [0, trr_cpu_pool_workers()) and is stable for the
 * duration of one call, so a task may index per-worker scratch with it. */
typedef void (*trr_cpu_task_fn)(void *arg, int64_t begin, int64_t end, int worker);

/* A pool running on `threads` cores in all (the calling thread is one of them). Returns NULL only when
 * memory runs out; a pool whose threads could not all be started runs with fewer. */
trr_cpu_pool *trr_cpu_pool_create(int threads);
void trr_cpu_pool_destroy(trr_cpu_pool *pool);
int trr_cpu_pool_workers(const trr_cpu_pool *pool);
/* Splits [0, n) into chunks of at least grain items and runs fn on them across the pool; returns when all are
 * done. Runs inline on the calling thread when n <= grain. Not reentrant: one loop at a time per pool. */
void trr_cpu_parallel_for(trr_cpu_pool *pool, int64_t n, int64_t grain, trr_cpu_task_fn fn, void *arg);

/* ---- the device handle stored in ctx->dev (device.c) ---- */

typedef struct trr_cpu_device {
    trr_cpu_pool *pool;
    float *matmul_partials;       /* split-K's f32 slice products (matmul.c), kept between calls as on a GPU */
    size_t matmul_partials_bytes;
    double timer_start_ms; /* CLOCK_MONOTONIC at trr_timer_start */
    int timer_running;     /* a start not yet stopped */
} trr_cpu_device;

static inline trr_cpu_pool *trr_cpu_ctx_pool(trr_context *ctx) {
    return ((trr_cpu_device *)ctx->dev)->pool;
}

int trr_cpu_core_count(void);
double trr_cpu_now_ms(void);

/* ---- buffers (buffers.c) ---- */

trr_status trr_cpu_alloc(trr_context *ctx, size_t bytes, void **out_mem);
void trr_cpu_free(void *dev, void *mem);
trr_status trr_cpu_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem);
trr_status trr_cpu_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes);
trr_status trr_cpu_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes);
trr_status trr_cpu_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset,
                        size_t bytes);
trr_status trr_cpu_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value);

/* ---- ops (kernels.c): the backend's slots for a call, by the op's shape rule and kernel ---- */

trr_status trr_cpu_supports(trr_context *ctx, const trr_call *call);
void trr_cpu_choose_config(trr_context *ctx, trr_call *call);
trr_status trr_cpu_check_config(trr_context *ctx, const trr_call *call);
unsigned trr_cpu_config_fields_used(trr_op op);
trr_status trr_cpu_run(trr_context *ctx, const trr_call *call);
/* 1 when d names the kernel stem/entry (its kernel stem and its name). */
int trr_cpu_kernel_named(const trr_op_desc *d, const char *stem, const char *entry);

/* ---- each rule's code: each assumes a validated, non-empty call that its rule's lookup accepted ---- */

/* the element-wise shape rule (elementwise.c) */
trr_status trr_cpu_elementwise(trr_context *ctx, const trr_call *call);
/* a user op's C function (user.c) */
trr_status trr_cpu_user(trr_context *ctx, const trr_call *call);
/* The element-wise kernels: ops that move bytes (trr_op_desc.bytewise), and the C loops of elementwise.c named by
 * stem "elementwise" and the op's name. */
int trr_cpu_elementwise_provides(const trr_op_desc *d, char *why, size_t cap);
trr_status trr_cpu_rgb_to_grey(trr_context *ctx, const trr_call *call); /* rgb.c */
trr_status trr_cpu_softmax(trr_context *ctx, const trr_call *call);     /* softmax.c */
trr_status trr_cpu_row_sum(trr_context *ctx, const trr_call *call);     /* rowsum.c */
trr_status trr_cpu_matmul(trr_context *ctx, const trr_call *call);      /* matmul.c */
/* The row-norm shape rule (norm.c): each row through the C function its table pairs with the op's stem and
 * entry. */
int trr_cpu_norm_provides(const trr_op_desc *d, char *why, size_t cap);
trr_status trr_cpu_row_norm(trr_context *ctx, const trr_call *call);

/* attention (attention.c), its config heuristic and limits */
trr_status trr_cpu_attention(trr_context *ctx, const trr_call *call);
void trr_cpu_attention_choose_config(trr_call *call);
trr_status trr_cpu_attention_check_config(trr_context *ctx, const trr_call *call);

/* matmul's config heuristic and its limits (matmul.c) */
void trr_cpu_matmul_choose_config(trr_call *call);
trr_status trr_cpu_matmul_check_config(trr_context *ctx, const trr_call *call);

#endif
