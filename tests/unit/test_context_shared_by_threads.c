/* One context shared by several threads (trireme.h, thread safety): each thread makes its own buffers, runs ops
 * on them and reads the results back, all at once on the one context; every result must be right and nothing
 * may crash, hang or leak (ASan build). */
#include "test_support.h"
#include "trireme.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 4, ROUNDS = 200, N = 1 << 12, M = 96, K = 32, NC = 80 };

typedef struct worker {
    trr_context *ctx;
    int id;
    char failure[512]; /* empty when every round checked out */
} worker;

#define FAIL(w, ...)                                                                                           \
    do {                                                                                                       \
        snprintf((w)->failure, sizeof (w)->failure, __VA_ARGS__);                                              \
        goto done;                                                                                             \
    } while (0)

#define CALL(w, expr)                                                                                          \
    do {                                                                                                       \
        trr_status st_ = (expr);                                                                               \
        if (st_ != TRR_OK) FAIL(w, "thread %d round %d: %s: %s", (w)->id, round, #expr, trr_status_name(st_));  \
    } while (0)

/* Per round: x, y of values exact in f32; z = x + y (bit-exact), a copy of z, a matmul of small integers (exact
 * in f32 on every backend; several blocks, so the CPU backend's pool runs it in parallel), buffers made and
 * destroyed each round, a synchronize now and then. Many small rounds: the more calls interleave, the surer a
 * missing lock shows (OpenCL's shared kernel arguments, the CPU pool's one loop at a time, Vulkan's queue). */
static void *work(void *arg) {
    worker *w = arg;
    trr_context *ctx = w->ctx;
    static _Thread_local float x[N], y[N], z[N], a[M * K], b[K * NC], c[M * NC];
    trr_buffer *bx = NULL, *by = NULL, *bz = NULL, *bc = NULL, *ba = NULL, *bb = NULL, *bm = NULL;
    int round = -1;
    CALL(w, trr_buffer_create(ctx, sizeof x, &bx));
    CALL(w, trr_buffer_create(ctx, sizeof y, &by));
    CALL(w, trr_buffer_create(ctx, sizeof a, &ba));
    CALL(w, trr_buffer_create(ctx, sizeof b, &bb));
    for (round = 0; round < ROUNDS; round++) {
        const int seed = w->id * 1000 + round;
        for (int i = 0; i < N; i++) {
            x[i] = (float)((i * 7 + seed) % 1024);
            y[i] = (float)((i * 13 + 3 * seed) % 512) * 0.5f;
        }
        for (int i = 0; i < M * K; i++) a[i] = (float)((i + seed) % 7 - 3);
        for (int i = 0; i < K * NC; i++) b[i] = (float)((2 * i + w->id) % 5 - 2);
        CALL(w, trr_buffer_create(ctx, sizeof z, &bz)); /* create and destroy race with the other threads' ops */
        CALL(w, trr_buffer_create(ctx, sizeof z, &bc));
        CALL(w, trr_buffer_create(ctx, sizeof c, &bm));
        CALL(w, trr_buffer_write(ctx, bx, 0, x, sizeof x));
        CALL(w, trr_buffer_write(ctx, by, 0, y, sizeof y));
        CALL(w, trr_buffer_write(ctx, ba, 0, a, sizeof a));
        CALL(w, trr_buffer_write(ctx, bb, 0, b, sizeof b));
        trr_tensor tx, ty, tz, tc, ta, tb, tm;
        CALL(w, trr_tensor_1d(bx, 0, TRR_F32, N, &tx));
        CALL(w, trr_tensor_1d(by, 0, TRR_F32, N, &ty));
        CALL(w, trr_tensor_1d(bz, 0, TRR_F32, N, &tz));
        CALL(w, trr_tensor_1d(bc, 0, TRR_F32, N, &tc));
        CALL(w, trr_tensor_2d(ba, 0, TRR_F32, M, K, 0, &ta));
        CALL(w, trr_tensor_2d(bb, 0, TRR_F32, K, NC, 0, &tb));
        CALL(w, trr_tensor_2d(bm, 0, TRR_F32, M, NC, 0, &tm));
        CALL(w, trr_add(ctx, &tx, &ty, &tz));
        CALL(w, trr_copy(ctx, &tz, &tc));
        CALL(w, trr_matmul(ctx, &ta, &tb, &tm, TRR_EPI_NONE, 0.0f, 0));
        if (round % 4 == w->id) CALL(w, trr_synchronize(ctx));
        memset(z, 0xff, sizeof z);
        memset(c, 0xff, sizeof c);
        CALL(w, trr_buffer_read(ctx, bc, 0, z, sizeof z));
        CALL(w, trr_buffer_read(ctx, bm, 0, c, sizeof c));
        for (int i = 0; i < N; i++)
            if (z[i] != x[i] + y[i])
                FAIL(w, "thread %d round %d: z[%d] = %g, expected %g", w->id, round, i, (double)z[i],
                     (double)(x[i] + y[i]));
        for (int r = 0; r < M; r++)
            for (int col = 0; col < NC; col++) {
                float want = 0.0f;
                for (int k = 0; k < K; k++) want += a[r * K + k] * b[k * NC + col];
                if (c[r * NC + col] != want)
                    FAIL(w, "thread %d round %d: C[%d,%d] = %g, expected %g", w->id, round, r, col,
                         (double)c[r * NC + col], (double)want);
            }
        trr_buffer_destroy(bz), bz = NULL;
        trr_buffer_destroy(bc), bc = NULL;
        trr_buffer_destroy(bm), bm = NULL;
    }
done:
    trr_buffer_destroy(bz);
    trr_buffer_destroy(bc);
    trr_buffer_destroy(bm);
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(ba);
    trr_buffer_destroy(bb);
    return NULL;
}

static void shared_by_threads(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker){.ctx = ctx, .id = i};
        cr_assert_eq(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++) cr_expect_str_empty(workers[i].failure, "%s: %s", spec, workers[i].failure);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK);
}

/* Config overrides (all-zero: the backend's choice), the last config and the native handles from another thread
 * meanwhile: they serialise with the ops, and the ops' results stay right. */
static void *override_and_query(void *arg) {
    trr_context *ctx = arg;
    for (int i = 0; i < 40; i++) {
        const trr_config cfg = {0};
        trr_config_override(ctx, TRR_OP_ADD, i % 3 ? &cfg : NULL);
        trr_config last;
        trr_config_last(ctx, &last);
        trr_native native;
        trr_context_native(ctx, &native);
    }
    return NULL;
}

static void shared_with_overrides(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    worker workers[2];
    pthread_t threads[3];
    for (int i = 0; i < 2; i++) {
        workers[i] = (worker){.ctx = ctx, .id = i};
        cr_assert_eq(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
    }
    cr_assert_eq(pthread_create(&threads[2], NULL, override_and_query, ctx), 0);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 2; i++) cr_expect_str_empty(workers[i].failure, "%s: %s", spec, workers[i].failure);
    cr_assert_eq(trr_context_destroy(ctx), TRR_OK);
}

Test(context_threads, cpu) { shared_by_threads("cpu"); }
Test(context_threads, opencl) { shared_by_threads("opencl:0"); }
Test(context_threads, vulkan) { shared_by_threads("vulkan:0"); }
Test(context_threads, cuda) { shared_by_threads("cuda:0"); }
Test(context_threads, cpu_with_overrides) { shared_with_overrides("cpu"); }
Test(context_threads, opencl_with_overrides) { shared_with_overrides("opencl:0"); }
Test(context_threads, vulkan_with_overrides) { shared_with_overrides("vulkan:0"); }
