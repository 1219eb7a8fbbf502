/*
 * A small persistent thread pool. Ops are synchronous, so the pool runs one parallel loop at a time: the
 * calling thread publishes the loop, wakes the workers, takes chunks itself, and waits until every chunk is
 * done. Chunks are handed out through an atomic counter so uneven work (edge blocks of a matmul, short rows)
 * balances itself. Threads start once per device handle; starting them per op would cost more than small ops.
 */
#define _POSIX_C_SOURCE 200809L

#include "cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct trr_cpu_pool {
    int workers; /* threads in all, the caller included */
    int started; /* helper threads actually running */
    pthread_t *threads;

    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new loop was published, or shutdown */
    pthread_cond_t done; /* the last helper left the loop */
    uint64_t generation; /* bumped for each loop, so a helper never runs one twice */
    int shutdown;
    int busy; /* helpers still inside the current loop */

    /* the current loop */
    trr_cpu_task_fn fn;
    void *arg;
    int64_t n, chunk, chunks;
    atomic_int_fast64_t next;
};

typedef struct pool_start {
    trr_cpu_pool *pool;
    int worker;
} pool_start;

static void run_chunks(trr_cpu_pool *pool, int worker) {
    for (;;) {
        int64_t c = atomic_fetch_add(&pool->next, 1);
        if (c >= pool->chunks) return;
        int64_t begin = c * pool->chunk;
        int64_t end = begin + pool->chunk < pool->n ? begin + pool->chunk : pool->n;
        pool->fn(pool->arg, begin, end, worker);
    }
}

static void *worker_main(void *p) {
    pool_start start = *(pool_start *)p;
    free(p);
    trr_cpu_pool *pool = start.pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->shutdown && pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->shutdown) break;
        seen = pool->generation;
        pthread_mutex_unlock(&pool->lock);
        run_chunks(pool, start.worker);
        pthread_mutex_lock(&pool->lock);
        if (--pool->busy == 0) pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

trr_cpu_pool *trr_cpu_pool_create(int threads) {
    if (threads < 1) threads = 1;
    trr_cpu_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->threads = calloc((size_t)threads, sizeof *pool->threads);
    if (!pool->threads) {
        free(pool);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->next, 0);
    /* Worker ids must be dense, so a helper that fails to start simply ends the list. */
    for (int i = 1; i < threads; i++) {
        pool_start *s = malloc(sizeof *s);
        if (!s) break;
        s->pool = pool;
        s->worker = i;
        if (pthread_create(&pool->threads[pool->started], NULL, worker_main, s) != 0) {
            free(s);
            break;
        }
        pool->started++;
    }
    pool->workers = pool->started + 1;
    return pool;
}

void trr_cpu_pool_destroy(trr_cpu_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    pool->shutdown = 1;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->started; i++) pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool);
}

int trr_cpu_pool_workers(const trr_cpu_pool *pool) {
    return pool ? pool->workers : 1;
}

void trr_cpu_parallel_for(trr_cpu_pool *pool, int64_t n, int64_t grain, trr_cpu_task_fn fn, void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!pool || pool->started == 0 || n <= grain) {
        fn(arg, 0, n, 0);
        return;
    }
    /* About four chunks per thread balances uneven chunks without paying the counter on tiny ones. */
    int64_t chunk = (n + (int64_t)pool->workers * 4 - 1) / ((int64_t)pool->workers * 4);
    if (chunk < grain) chunk = grain;
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->chunk = chunk;
    pool->chunks = (n + chunk - 1) / chunk;
    atomic_store(&pool->next, 0);
    pool->busy = pool->started;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_chunks(pool, 0);

    pthread_mutex_lock(&pool->lock);
    while (pool->busy > 0) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
