/*
 * stream_probe: two measurements the bench does not make, for the CUDA stream ops' tuning.
 *
 *   stream_probe latency DEVICE
 *       a 1-element f32 add: device-event time per call over 1000 calls; host time per call to enqueue 1000
 *       calls and to finish them (one synchronize); every call synchronized; a synchronize alone. Median of 7
 *       rounds, microseconds.
 *   stream_probe streams DEVICE
 *       the driver's launch of an empty kernel on the context's stream and on eight fresh ones: host time per
 *       cuLaunchKernel, and per launch + cuStreamSynchronize (does the host's launch cost vary by stream?).
 *   stream_probe sweep DEVICE OP ROWS COLS CFG...
 *       OP (add, gelu, silu, softmax, row_sum) on f32 ROWS x COLS (ROWS 1: a vector) with each CFG in turn
 *       ("default", or threads=T,block_n=B,variant=V with any of the fields), the L2 flushed before every
 *       repetition as the bench does; median GB/s (the bench's byte counts) of 30 repetitions.
 *   stream_probe flushes DEVICE OP ROWS COLS
 *       OP (softmax, row_sum; add, gelu over ROWS x COLS elements as one vector) with the backend's config after each of several ways of evicting its data before every repetition
 *       (the L2 flush): trr_buffer_fill of 256 MiB (the bench's), trr_buffer_copy from another 256 MiB buffer,
 *       the copy op over a 2-D view (a kernel's stores), the fill then a read of one f32 in every 64 KiB of the
 *       op's operands (their pages' translations fresh, their data not in L2), the fill then the op on 64 rows
 *       of other buffers (its code and constants fresh), a row_sum over 256 MiB (clean lines, no write-back
 *       owed), the same then the touch or the small op, and none; median microseconds and GB/s of 30
 *       repetitions each, the ways alternated over 3 rounds. Which backend pays how much for what the flush
 *       leaves behind.
 *
 * Built as build/bench/trr_stream_probe (bench/CMakeLists.txt).
 * On a cuda device, latency also times the driver alone: an empty kernel of the same five parameters launched
 * with cuLaunchKernel on the context's stream (each synchronized by cuStreamSynchronize, and by cuStreamQuery
 * spins), and the same launches captured into CUDA graphs of 1-250 nodes: capture, update of an instantiated
 * graph, launch (what backend_cuda/batch.c's path costs per kernel).
 */
#define _POSIX_C_SOURCE 200809L
#include "trireme.h"
#include "tuner.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + 1e-3 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        trr_status st_ = (call);                                                                               \
        if (st_ != TRR_OK) {                                                                                   \
            fprintf(stderr, "%s: %s\n", #call, trr_last_error(ctx));                                           \
            exit(1);                                                                                           \
        }                                                                                                      \
    } while (0)

/* The driver floor: cuLaunchKernel of an empty kernel on the context's own stream, 1000 calls; and the same
 * kernels through CUDA graphs. The driver's entry points, loaded by name (NULL where missing). */
typedef struct cu_driver {
    int (*module_load_data)(void **, const void *);
    int (*module_get_function)(void **, void *, const char *);
    int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
                  void **);
    int (*ctx_set_current)(void *);
    int (*sync)(void *);
    int (*query)(void *);
    int (*begin_capture)(void *, int);
    int (*end_capture)(void *, void **);
    int (*instantiate)(void **, void *, unsigned long long);
    int (*exec_update)(void *, void *, void *);
    int (*graph_launch)(void *, void *);
    int (*graph_destroy)(void *);
    int (*exec_destroy)(void *);
    int (*host_alloc)(void **, size_t, unsigned);
    int (*host_device_ptr)(unsigned long long *, void *, unsigned);
    int (*write_value32)(void *, unsigned long long, unsigned, unsigned);
    int (*host_free)(void *);
    int (*stream_create)(void **, unsigned);
    int (*stream_destroy)(void *);
} cu_driver;

static const char empty_ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n"
                                ".visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n, "
                                ".param .u32 v)\n{\nret;\n}\n";

/* One thread stores 1 to a flag in mapped host memory, after a system-scope fence: the host sees the kernel done. */
static const char flag_ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n"
                               ".visible .entry f(.param .u64 p)\n{\n.reg .u64 %rd<2>;\n.reg .u32 %r<3>;\n"
                               ".reg .pred %q;\nmov.u32 %r1, %tid.x;\nsetp.ne.u32 %q, %r1, 0;\n@%q ret;\n"
                               "ld.param.u64 %rd1, [p];\nmov.u32 %r2, 1;\nfence.sc.sys;\n"
                               "st.volatile.global.u32 [%rd1], %r2;\nret;\n}\n";

/* dlsym's object pointers into the function pointers, which ISO C has no cast for (POSIX guarantees the bits). */
static void load_driver(void *lib, cu_driver *cu) {
    const struct {
        const char *name;
        void *fn;
    } syms[] = {
        {"cuModuleLoadData", &cu->module_load_data},   {"cuModuleGetFunction", &cu->module_get_function},
        {"cuLaunchKernel", &cu->launch},               {"cuCtxSetCurrent", &cu->ctx_set_current},
        {"cuStreamSynchronize", &cu->sync},            {"cuStreamQuery", &cu->query},
        {"cuStreamBeginCapture_v2", &cu->begin_capture}, {"cuStreamEndCapture", &cu->end_capture},
        {"cuGraphInstantiateWithFlags", &cu->instantiate}, {"cuGraphExecUpdate_v2", &cu->exec_update},
        {"cuGraphLaunch", &cu->graph_launch},          {"cuGraphDestroy", &cu->graph_destroy},
        {"cuGraphExecDestroy", &cu->exec_destroy},
        {"cuMemHostAlloc", &cu->host_alloc},           {"cuMemHostGetDevicePointer_v2", &cu->host_device_ptr},
        {"cuStreamWriteValue32_v2", &cu->write_value32}, {"cuMemFreeHost", &cu->host_free},
        {"cuStreamCreate", &cu->stream_create},        {"cuStreamDestroy_v2", &cu->stream_destroy},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(lib, syms[i].name);
        memcpy(syms[i].fn, &p, sizeof p);
    }
}

enum { CALLS = 1000, ROUNDS = 7 };

/* Host time per call of `calls` launches of fn, each followed by a synchronize (or cuStreamQuery spins). */
static double launched_and_waited(const cu_driver *cu, void *fn, void *stream, void **args, int calls, int spin) {
    double t0 = now_us();
    for (int i = 0; i < calls; i++) {
        cu->launch(fn, 1, 1, 1, 64, 1, 1, 0, stream, args, NULL);
        if (!spin) cu->sync(stream);
        else
            while (cu->query(stream) == 600 /* CUDA_ERROR_NOT_READY */) {
            }
    }
    return (now_us() - t0) / calls;
}

/* The same for a graph's launches. */
static double graph_launched_and_waited(const cu_driver *cu, void *exec, void *stream, int launches, int spin) {
    double t0 = now_us();
    for (int i = 0; i < launches; i++) {
        cu->graph_launch(exec, stream);
        if (!spin) cu->sync(stream);
        else
            while (cu->query(stream) == 600) {
            }
    }
    return (now_us() - t0) / launches;
}

/* The launches captured into graphs of G nodes between synchronizations: the capture, the update of an
 * executable graph instantiated once (same topology), its launch; what a deferred-launch path pays. */
static void graph_probe(trr_context *ctx, const cu_driver *cu, void *fn, void *stream, void **args) {
    if (!cu->begin_capture || !cu->end_capture || !cu->instantiate || !cu->exec_update || !cu->graph_launch ||
        !cu->graph_destroy || !cu->exec_destroy || !cu->query) {
        printf("graph probe: driver entry points missing\n");
        return;
    }
    static const int sizes[] = {1, 2, 16, 64, 250};
    for (size_t gi = 0; gi < sizeof sizes / sizeof sizes[0]; gi++) {
        const int G = sizes[gi], NB = CALLS / G;
        void *exec = NULL;
        double cap[ROUNDS], tot[ROUNDS], gev[ROUNDS], gsync[ROUNDS], gpoll[ROUNDS];
        int err = 0;
        for (int r = 0; r < ROUNDS && !err; r++) {
            double cap_us = 0, t0 = now_us();
            for (int b = 0; b < NB && !err; b++) {
                void *g = NULL;
                double c0 = now_us();
                err |= cu->begin_capture(stream, 2 /* relaxed */);
                for (int i = 0; i < G; i++) err |= cu->launch(fn, 1, 1, 1, 64, 1, 1, 0, stream, args, NULL);
                err |= cu->end_capture(stream, &g);
                cap_us += now_us() - c0;
                unsigned char info[64] = {0};
                if (!exec) err |= cu->instantiate(&exec, g, 0);
                else err |= cu->exec_update(exec, g, info);
                err |= cu->graph_launch(exec, stream);
                cu->graph_destroy(g);
            }
            cu->sync(stream);
            tot[r] = (now_us() - t0) / (NB * G);
            cap[r] = cap_us / (NB * G);
            double ms = 0;
            CHECK(trr_timer_start(ctx));
            for (int b = 0; b < NB && !err; b++) err |= cu->graph_launch(exec, stream);
            CHECK(trr_timer_stop(ctx, &ms));
            gev[r] = ms * 1e3 / (NB * G);
            if (err) break;
            gsync[r] = graph_launched_and_waited(cu, exec, stream, 200, 0);
            gpoll[r] = graph_launched_and_waited(cu, exec, stream, 200, 1);
        }
        if (exec) cu->exec_destroy(exec);
        if (err) {
            printf("graph probe G=%d: a driver call failed\n", G);
            continue;
        }
        printf("graph of %3d empty kernels (us per kernel): capture %.2f | capture+update+launch+sync %.2f | "
               "launch alone event-timed %.2f | one graph launched and synced %.2f us (cuStreamQuery spin %.2f)\n",
               G, median(cap, ROUNDS), median(tot, ROUNDS), median(gev, ROUNDS), median(gsync, ROUNDS),
               median(gpoll, ROUNDS));
    }
}

static double spin_flag(volatile unsigned *flag) {
    double t0 = now_us();
    while (*flag == 0) {
        if (now_us() - t0 > 1e6) return -1; /* never written */
    }
    return 0;
}

/* The synchronize replaced by the host spinning on a flag in mapped host memory that the device writes after the
 * kernel: a stream memory op captured after it into the graph, or the kernel itself. Host time per call. */
static void flag_probe(const cu_driver *cu, void *mod, void *fn, void *stream, void **args) {
    void *ffn = NULL, *fmod = NULL;
    unsigned *flag = NULL;
    unsigned long long dflag = 0;
    if (!cu->host_alloc || !cu->host_device_ptr || !cu->write_value32 || !cu->host_free || !cu->begin_capture ||
        !cu->end_capture || !cu->instantiate || cu->host_alloc((void **)&flag, 64, 2 /* DEVICEMAP */) ||
        cu->host_device_ptr(&dflag, flag, 0) || cu->module_load_data(&fmod, flag_ptx) ||
        cu->module_get_function(&ffn, fmod, "f")) {
        printf("flag probe: driver entry points or the flag kernel missing\n");
        return;
    }
    (void)mod;
    void *fargs[] = {&dflag};
    void *g = NULL, *g_memop = NULL, *g_kernel = NULL;
    int err = 0;
    err |= cu->begin_capture(stream, 2);
    err |= cu->launch(fn, 1, 1, 1, 64, 1, 1, 0, stream, args, NULL);
    err |= cu->end_capture(stream, &g);
    err |= cu->instantiate(&g_kernel, g, 0);
    err |= cu->begin_capture(stream, 2);
    err |= cu->launch(fn, 1, 1, 1, 64, 1, 1, 0, stream, args, NULL);
    err |= cu->write_value32(stream, dflag, 1, 0);
    err |= cu->end_capture(stream, &g);
    err |= cu->instantiate(&g_memop, g, 0);
    void *g_fk = NULL;
    err |= cu->begin_capture(stream, 2);
    err |= cu->launch(ffn, 1, 1, 1, 64, 1, 1, 0, stream, fargs, NULL);
    err |= cu->end_capture(stream, &g);
    err |= cu->instantiate(&g_fk, g, 0);
    if (err) {
        printf("flag probe: capture failed (%d)\n", err);
        return;
    }
    enum { N = 1000 };
    double v[7][ROUNDS];
    volatile unsigned *vf = flag;
    for (int r = 0; r < ROUNDS && !err; r++) {
        double t0 = now_us();
        for (int i = 0; i < N; i++) {
            cu->graph_launch(g_kernel, stream);
            cu->sync(stream);
        }
        v[0][r] = (now_us() - t0) / N;
        t0 = now_us();
        for (int i = 0; i < N; i++) {
            cu->graph_launch(g_memop, stream);
            cu->sync(stream);
        }
        v[1][r] = (now_us() - t0) / N;
        t0 = now_us();
        for (int i = 0; i < N && !err; i++) {
            *vf = 0;
            cu->graph_launch(g_memop, stream);
            if (spin_flag(vf) < 0) err = 2;
        }
        v[2][r] = (now_us() - t0) / N;
        t0 = now_us();
        for (int i = 0; i < N && !err; i++) {
            *vf = 0;
            cu->graph_launch(g_fk, stream);
            if (spin_flag(vf) < 0) err = 3;
        }
        v[3][r] = (now_us() - t0) / N;
        t0 = now_us();
        for (int i = 0; i < N && !err; i++) {
            *vf = 0;
            cu->launch(ffn, 1, 1, 1, 64, 1, 1, 0, stream, fargs, NULL);
            if (spin_flag(vf) < 0) err = 4;
        }
        v[4][r] = (now_us() - t0) / N;
        t0 = now_us();
        for (int i = 0; i < N && !err; i++) {
            *vf = 0;
            cu->graph_launch(g_kernel, stream);
            cu->write_value32(stream, dflag, 1, 0);
            if (spin_flag(vf) < 0) err = 5;
        }
        v[5][r] = (now_us() - t0) / N;
        t0 = now_us();
        for (int i = 0; i < N && !err; i++) {
            *vf = 0;
            cu->graph_launch(g_kernel, stream);
            int wr = cu->write_value32(stream, dflag, 1, 1 /* CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER */);
            if (wr) {
                printf("flag probe: cuStreamWriteValue32 without the barrier refused (CUresult %d)\n", wr);
                err = 6;
            } else if (spin_flag(vf) < 0) err = 6;
        }
        v[6][r] = (now_us() - t0) / N;
        cu->sync(stream);
    }
    if (err) {
        printf("flag probe: variant %d (counted from 0 as printed) never saw the flag within 1 s\n", err);
        return;
    }
    printf("flag probe (us per call, median of %d rounds of %d): graph(kernel)+sync %.2f | graph(kernel, "
           "writeValue)+sync %.2f | graph(kernel, writeValue)+spin %.2f | graph(flag kernel)+spin %.2f | "
           "cuLaunchKernel(flag kernel)+spin %.2f | graph(kernel) then cuStreamWriteValue32+spin %.2f (without its "
           "memory barrier %.2f)\n",
           ROUNDS, N, median(v[0], ROUNDS), median(v[1], ROUNDS), median(v[2], ROUNDS), median(v[3], ROUNDS),
           median(v[4], ROUNDS), median(v[5], ROUNDS), median(v[6], ROUNDS));
    cu->sync(stream);
    cu->host_free(flag);
}

static void raw_driver(trr_context *ctx) {
    trr_native nat;
    if (trr_context_native(ctx, &nat) != TRR_OK || strcmp(nat.backend, "cuda") != 0) return;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return;
    cu_driver cu;
    load_driver(lib, &cu);
    void *mod = NULL, *fn = NULL;
    if (!cu.module_load_data || !cu.module_get_function || !cu.launch || !cu.ctx_set_current || !cu.sync ||
        !cu.query || cu.ctx_set_current(nat.context) || cu.module_load_data(&mod, empty_ptx) ||
        cu.module_get_function(&fn, mod, "k")) {
        printf("raw driver: could not load the empty kernel\n");
        return;
    }
    unsigned long long a = 0;
    long long n = 1;
    int v = 1;
    void *args[] = {&a, &a, &a, &n, &v};
    double ev[ROUNDS], enq[ROUNDS], synced[ROUNDS], polled[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double ms = 0;
        CHECK(trr_timer_start(ctx));
        for (int i = 0; i < CALLS; i++) cu.launch(fn, 1, 1, 1, 64, 1, 1, 0, nat.queue, args, NULL);
        CHECK(trr_timer_stop(ctx, &ms));
        ev[r] = ms * 1e3 / CALLS;
        double t0 = now_us();
        for (int i = 0; i < CALLS; i++) cu.launch(fn, 1, 1, 1, 64, 1, 1, 0, nat.queue, args, NULL);
        enq[r] = (now_us() - t0) / CALLS;
        cu.sync(nat.queue);
        synced[r] = launched_and_waited(&cu, fn, nat.queue, args, CALLS, 0);
        polled[r] = launched_and_waited(&cu, fn, nat.queue, args, CALLS, 1);
    }
    printf("raw cuLaunchKernel of an empty kernel (us per call): event-timed %.2f | host enqueue %.2f | each synced "
           "%.2f (cuStreamQuery spin %.2f)\n",
           median(ev, ROUNDS), median(enq, ROUNDS), median(synced, ROUNDS), median(polled, ROUNDS));
    graph_probe(ctx, &cu, fn, nat.queue, args);
    flag_probe(&cu, mod, fn, nat.queue, args);
}

/* The device's context, its native handles and the driver API with a module of ptx loaded, for the modes that
 * launch kernels of their own; 2 if the device is not CUDA or there is no driver, 1 if the module does not load. */
static int open_driver(const char *mode, const char *device, const char *ptx, trr_context **out_ctx,
                       trr_native *nat, cu_driver *cu, void **mod) {
    trr_context *ctx = NULL;
    CHECK(trr_context_create(device, &ctx));
    *out_ctx = ctx;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (trr_context_native(ctx, nat) != TRR_OK || strcmp(nat->backend, "cuda") != 0 || !lib) {
        fprintf(stderr, "%s: %s is not a CUDA device with a driver\n", mode, device);
        return 2;
    }
    load_driver(lib, cu);
    if (!cu->stream_create || cu->ctx_set_current(nat->context) || cu->module_load_data(mod, ptx)) {
        fprintf(stderr, "%s: could not load the kernels\n", mode);
        return 1;
    }
    return 0;
}

/* The CUDA side of trr_vk_dispatch_probe's states: kernels of one block of 64 threads that return at once (k),
 * read a parameter and return (kp), or read a word through a pointer parameter and return (kw; the word is 0),
 * timed between the backend's events after the bench's 256 MiB fill, which the host's launches queue behind. */
static const char dispatch_ptx[] =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry k(.param .u64 a, .param .u64 n)\n{\nret;\n}\n"
    ".visible .entry kp(.param .u64 a, .param .u64 n)\n{\n.reg .u64 %rd<3>;\n.reg .pred %q;\n"
    "ld.param.u64 %rd1, [n];\nsetp.eq.u64 %q, %rd1, 0;\n@%q ret;\nld.param.u64 %rd2, [a];\n"
    "st.global.u64 [%rd2], %rd1;\nret;\n}\n"
    ".visible .entry kw(.param .u64 a, .param .u64 n)\n{\n.reg .u64 %rd<2>;\n.reg .f32 %f<2>;\n.reg .pred %q;\n"
    "ld.param.u64 %rd1, [a];\nld.global.f32 %f1, [%rd1];\nsetp.eq.f32 %q, %f1, 0f00000000;\n@%q ret;\n"
    "st.global.f32 [%rd1], %f1;\nret;\n}\n";

static int dispatch(const char *device) {
    enum { REPS = 30 };
    trr_context *ctx = NULL;
    trr_native nat;
    cu_driver cu;
    void *mod = NULL, *fn[3];
    int err = open_driver("dispatch", device, dispatch_ptx, &ctx, &nat, &cu, &mod);
    if (err) return err;
    const char *names[3] = {"k", "kp", "kw"}, *what[3] = {"returns at once", "reads a parameter", "reads a word"};
    for (int i = 0; i < 3; i++)
        if (cu.module_get_function(&fn[i], mod, names[i])) return 1;
    trr_buffer *flush, *word;
    CHECK(trr_buffer_create(ctx, (size_t)256 << 20, &flush));
    CHECK(trr_buffer_create(ctx, 4096, &word));
    CHECK(trr_buffer_fill(ctx, word, 0, 4096, 0));
    uint64_t a = 0;
    CHECK(trr_buffer_native(word, &a));
    unsigned long long n = 0;
    void *args[] = {&a, &n};
    printf("%s, medians of %d (us) after the fill, one block of 64 threads:\n", device, REPS);
    for (int f = 0; f < 3; f++) {
        double med[2][3];
        for (int fill = 0; fill < 2; fill++)
            for (int ki = 0; ki < 3; ki++) {
                const int k = ki == 0 ? 0 : ki == 1 ? 1 : 4;
                double t[REPS];
                for (int r = 0; r < REPS; r++) {
                    double ms = 0;
                    CHECK(trr_buffer_fill(ctx, flush, 0, fill ? (size_t)256 << 20 : 4096, (uint8_t)r));
                    CHECK(trr_timer_start(ctx));
                    for (int i = 0; i < k; i++)
                        if (cu.launch(fn[f], 1, 1, 1, 64, 1, 1, 0, nat.queue, args, NULL)) return 1;
                    CHECK(trr_timer_stop(ctx, &ms));
                    t[r] = ms * 1e3;
                }
                med[fill][ki] = median(t, REPS);
            }
        printf("  kernel that %-16s k = 0 / 1 / 4 after the fill %.2f / %.2f / %.2f (%.2f a kernel after the first); "
               "after 4 KiB %.2f / %.2f / %.2f\n",
               what[f], med[1][0], med[1][1], med[1][2], (med[1][2] - med[1][1]) / 3, med[0][0], med[0][1], med[0][2]);
    }
    trr_buffer_destroy(word);
    trr_buffer_destroy(flush);
    trr_context_destroy(ctx);
    return 0;
}

/* Each of STREAMS fresh streams (and the context's own, first): host time per cuLaunchKernel of the empty kernel
 * (the launch alone, the stream drained outside the timing) and per launch + cuStreamSynchronize; median of 7
 * rounds of 300. Whether the host's launch cost, which moves by 1 us between processes, also moves between the
 * streams of one process. */
static int streams(const char *device) {
    enum { STREAMS = 8, N = 300 };
    trr_context *ctx = NULL;
    trr_native nat;
    cu_driver cu;
    void *mod = NULL, *fn = NULL;
    int err = open_driver("streams", device, empty_ptx, &ctx, &nat, &cu, &mod);
    if (err) return err;
    void *st[STREAMS + 1] = {nat.queue};
    if (cu.module_get_function(&fn, mod, "k")) {
        fprintf(stderr, "streams: could not load the empty kernel\n");
        return 1;
    }
    for (int i = 1; i <= STREAMS; i++)
        if (cu.stream_create(&st[i], 1 /* CU_STREAM_NON_BLOCKING */)) return 1;
    unsigned long long a = 0;
    long long n = 1;
    int v = 1;
    void *args[] = {&a, &a, &a, &n, &v};
    printf("%s streams (us per call, median of %d rounds of %d; stream 0 is the context's): ", device, ROUNDS, N);
    for (int i = 0; i <= STREAMS; i++) {
        double launch[ROUNDS], synced[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            double total = 0;
            for (int k = 0; k < N; k++) {
                double t0 = now_us();
                cu.launch(fn, 1, 1, 1, 64, 1, 1, 0, st[i], args, NULL);
                total += now_us() - t0;
                cu.sync(st[i]);
            }
            launch[r] = total / N;
            synced[r] = launched_and_waited(&cu, fn, st[i], args, N, 0);
        }
        printf("%s%d: launch %.2f, +sync %.2f", i ? " | " : "", i, median(launch, ROUNDS), median(synced, ROUNDS));
    }
    printf("\n");
    for (int i = 1; i <= STREAMS; i++) cu.stream_destroy(st[i]);
    trr_context_destroy(ctx);
    return 0;
}

static int latency(const char *device) {
    trr_context *ctx = NULL;
    CHECK(trr_context_create(device, &ctx));
    trr_buffer *b[3];
    trr_tensor t[3];
    float one = 1.0f;
    for (int i = 0; i < 3; i++) {
        CHECK(trr_buffer_create(ctx, 4, &b[i]));
        CHECK(trr_buffer_write(ctx, b[i], 0, &one, 4));
        CHECK(trr_tensor_1d(b[i], 0, TRR_F32, 1, &t[i]));
    }
    double ev[ROUNDS], enq[ROUNDS], batch[ROUNDS], synced[ROUNDS], sync_only[ROUNDS];
    for (int i = 0; i < 200; i++) CHECK(trr_add(ctx, &t[0], &t[1], &t[2]));
    CHECK(trr_synchronize(ctx));
    for (int r = 0; r < ROUNDS; r++) {
        double ms = 0;
        CHECK(trr_timer_start(ctx));
        for (int i = 0; i < CALLS; i++) CHECK(trr_add(ctx, &t[0], &t[1], &t[2]));
        CHECK(trr_timer_stop(ctx, &ms));
        ev[r] = ms * 1e3 / CALLS;

        double t0 = now_us();
        for (int i = 0; i < CALLS; i++) CHECK(trr_add(ctx, &t[0], &t[1], &t[2]));
        double t1 = now_us();
        CHECK(trr_synchronize(ctx));
        double t2 = now_us();
        enq[r] = (t1 - t0) / CALLS;
        batch[r] = (t2 - t0) / CALLS;

        t0 = now_us();
        for (int i = 0; i < CALLS; i++) {
            CHECK(trr_add(ctx, &t[0], &t[1], &t[2]));
            CHECK(trr_synchronize(ctx));
        }
        synced[r] = (now_us() - t0) / CALLS;

        t0 = now_us();
        for (int i = 0; i < CALLS; i++) CHECK(trr_synchronize(ctx));
        sync_only[r] = (now_us() - t0) / CALLS;
    }
    raw_driver(ctx);
    float z = 0;
    CHECK(trr_buffer_read(ctx, b[2], 0, &z, 4));
    printf("tiny add on %s (us per call, median of %d rounds of %d calls): event-timed %.2f | host enqueue %.2f | "
           "1000 then one sync %.2f | each synced %.2f | sync alone %.2f | z = %g\n",
           device, ROUNDS, CALLS, median(ev, ROUNDS), median(enq, ROUNDS), median(batch, ROUNDS),
           median(synced, ROUNDS), median(sync_only, ROUNDS), (double)z);
    for (int i = 0; i < 3; i++) trr_buffer_destroy(b[i]);
    trr_context_destroy(ctx);
    return z == 2.0f ? 0 : 1;
}

/* "default" (the backend's choice) or the named form the CLI's --config takes (harness/tuner.h) */
static int parse_cfg(const char *s, trr_config *c) {
    memset(c, 0, sizeof *c);
    return strcmp(s, "default") == 0 || trr_config_parse(s, c) == TRR_OK;
}

static int sweep(const char *device, const char *opname, long long rows, long long cols, int ncfg, char **cfgs) {
    trr_context *ctx = NULL;
    CHECK(trr_context_create(device, &ctx));
    trr_op op;
    if (trr_op_from_name(opname, &op) != TRR_OK) {
        fprintf(stderr, "unknown op %s\n", opname);
        return 2;
    }
    size_t n = (size_t)(rows * cols);
    size_t out_n = op == TRR_OP_ROW_SUM ? (size_t)rows : n;
    float *h = malloc(n * sizeof *h);
    unsigned s = 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (float)((s >> 8) * (2.0 / 16777216.0) - 1.0);
        if (h[i] == 0.0f) h[i] = 0.5f;
    }
    trr_buffer *bx, *by, *bz, *flush;
    CHECK(trr_buffer_create(ctx, n * 4, &bx));
    CHECK(trr_buffer_create(ctx, n * 4, &by));
    CHECK(trr_buffer_create(ctx, out_n * 4, &bz));
    CHECK(trr_buffer_create(ctx, (size_t)256 << 20, &flush));
    CHECK(trr_buffer_write(ctx, bx, 0, h, n * 4));
    CHECK(trr_buffer_write(ctx, by, 0, h, n * 4));
    free(h);
    trr_tensor x, y, z;
    if (rows == 1) {
        CHECK(trr_tensor_1d(bx, 0, TRR_F32, (int64_t)n, &x));
        CHECK(trr_tensor_1d(by, 0, TRR_F32, (int64_t)n, &y));
        CHECK(trr_tensor_1d(bz, 0, TRR_F32, (int64_t)out_n, &z));
    } else {
        CHECK(trr_tensor_2d(bx, 0, TRR_F32, rows, cols, 0, &x));
        CHECK(trr_tensor_2d(by, 0, TRR_F32, rows, cols, 0, &y));
        if (op == TRR_OP_ROW_SUM) CHECK(trr_tensor_1d(bz, 0, TRR_F32, rows, &z));
        else CHECK(trr_tensor_2d(bz, 0, TRR_F32, rows, cols, 0, &z));
    }
    double bytes = op == TRR_OP_ADD ? 12.0 * (double)n : op == TRR_OP_ROW_SUM ? 4.0 * (double)n : 8.0 * (double)n;
    for (int c = 0; c < ncfg; c++) {
        trr_config cfg;
        if (!parse_cfg(cfgs[c], &cfg)) {
            fprintf(stderr, "bad config %s\n", cfgs[c]);
            return 2;
        }
        CHECK(trr_config_override(ctx, op, &cfg));
        const trr_tensor *ops3[3] = {&x, &y, &z}, *ops2[2] = {&x, &z};
        const trr_tensor *const *operands = op == TRR_OP_ADD ? ops3 : ops2;
        trr_status st = trr_op_run(ctx, op, operands, NULL);
        if (st == TRR_OK) st = trr_synchronize(ctx);
        if (st != TRR_OK) {
            printf("%s %lldx%lld %-40s FAILED: %s\n", opname, rows, cols, cfgs[c], trr_last_error(ctx));
            continue;
        }
        trr_config used;
        trr_config_last(ctx, &used);
        enum { REPS = 30 };
        double ms[REPS];
        for (int r = 0; r < REPS; r++) {
            CHECK(trr_buffer_fill(ctx, flush, 0, (size_t)256 << 20, (uint8_t)r));
            CHECK(trr_timer_start(ctx));
            CHECK(trr_op_run(ctx, op, operands, NULL));
            CHECK(trr_timer_stop(ctx, &ms[r]));
        }
        double med = median(ms, REPS);
        const char *vn = "?";
        trr_variant_name((trr_variant)used.variant, &vn);
        printf("%s %lldx%lld %-40s threads %4d block_n %6d %-8s %8.4f ms %7.0f GB/s\n", opname, rows, cols, cfgs[c],
               used.threads, used.block_n, vn, med, bytes / (med * 1e-3) * 1e-9);
        fflush(stdout);
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(bz);
    trr_buffer_destroy(flush);
    trr_context_destroy(ctx);
    return 0;
}

/* fill + touch and read + touch read one f32 in every 64 KiB of the op's input and output after the flush: the
 * pages' translations are fresh, their data is not in L2. fill + warm and read + warm run the op on WARM_ROWS
 * rows of other buffers after the flush: its code and constants are fresh, its data is not in L2. read is a
 * row_sum over the 256 MiB, which leaves the L2 full of clean lines. */
enum {
    FLUSH_FILL,
    FLUSH_BUFFER_COPY,
    FLUSH_KERNEL,
    FLUSH_FILL_TOUCH,
    FLUSH_FILL_WARM,
    FLUSH_READ,
    FLUSH_READ_TOUCH,
    FLUSH_READ_WARM,
    FLUSH_NONE,
    FLUSH_WAYS
};
static const char *const flush_names[FLUSH_WAYS] = {"fill",        "buffer copy", "copy kernel",
                                                    "fill + touch", "fill + warm", "read",
                                                    "read + touch", "read + warm", "none"};
#define WARM_ROWS 64

#define TOUCH_STRIDE 16384 /* f32, 64 KiB */



/* The op's input and output views: rows x cols f32 (row_sum's output one per row), or for a vector op all
 * rows * cols elements as one vector. */
static trr_status op_views(trr_op op, int vector, trr_buffer *bx, trr_buffer *bz, long long rows, long long cols,
                           trr_tensor *x, trr_tensor *z) {
    trr_status s;
    if (vector) {
        s = trr_tensor_1d(bx, 0, TRR_F32, rows * cols, x);
        return s != TRR_OK ? s : trr_tensor_1d(bz, 0, TRR_F32, rows * cols, z);
    }
    s = trr_tensor_2d(bx, 0, TRR_F32, rows, cols, 0, x);
    if (s != TRR_OK) return s;
    return op == TRR_OP_ROW_SUM ? trr_tensor_1d(bz, 0, TRR_F32, rows, z) : trr_tensor_2d(bz, 0, TRR_F32, rows, cols, 0, z);
}

static int flushes(const char *device, const char *opname, long long rows, long long cols) {
    trr_context *ctx = NULL;
    CHECK(trr_context_create(device, &ctx));
    trr_op op;
    if (trr_op_from_name(opname, &op) != TRR_OK ||
        (op != TRR_OP_SOFTMAX && op != TRR_OP_ROW_SUM && op != TRR_OP_ADD && op != TRR_OP_GELU)) {
        fprintf(stderr, "flushes: OP is softmax, row_sum, add or gelu\n");
        return 2;
    }
    const int vector = op == TRR_OP_ADD || op == TRR_OP_GELU; /* rows x cols elements as one vector */
    const size_t n = (size_t)(rows * cols), fb = (size_t)256 << 20;
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000u) * 1e-3f - 0.5f;
    trr_buffer *bx, *by, *bz, *f0, *f1, *bt, *brs;
    const size_t zn = op == TRR_OP_ROW_SUM ? (size_t)rows : n;
    CHECK(trr_buffer_create(ctx, n * 4, &bx));
    CHECK(trr_buffer_create(ctx, n * 4, &by));
    CHECK(trr_buffer_create(ctx, zn * 4, &bz));
    CHECK(trr_buffer_create(ctx, (n / TOUCH_STRIDE + 1) * 4, &bt));
    CHECK(trr_buffer_create(ctx, 8192 * 4, &brs));
    trr_buffer *bwx, *bwz;
    const size_t wn = vector ? (n < 65536 ? n : 65536) : (size_t)(WARM_ROWS * cols);
    CHECK(trr_buffer_create(ctx, wn * 4, &bwx));
    CHECK(trr_buffer_create(ctx, wn * 4, &bwz));
    CHECK(trr_buffer_fill(ctx, bwx, 0, wn * 4, 0));
    CHECK(trr_buffer_create(ctx, fb, &f0));
    CHECK(trr_buffer_create(ctx, fb, &f1));
    CHECK(trr_buffer_write(ctx, bx, 0, h, n * 4));
    CHECK(trr_buffer_write(ctx, by, 0, h, n * 4));
    CHECK(trr_buffer_fill(ctx, f1, 0, fb, 7));
    free(h);
    trr_tensor x, y, z, fsrc, fdst;
    CHECK(trr_tensor_1d(by, 0, TRR_F32, (int64_t)n, &y));
    CHECK(op_views(op, vector, bx, bz, rows, cols, &x, &z));
    /* 256 MiB as 8192 rows of 8192 f32: the copy op over 2-D views runs a kernel (a packed 1-D copy would be the
     * driver's buffer copy) */
    CHECK(trr_tensor_2d(f1, 0, TRR_F32, 8192, 8192, 0, &fsrc));
    CHECK(trr_tensor_2d(f0, 0, TRR_F32, 8192, 8192, 0, &fdst));
    /* one f32 of every 64 KiB of x and of z, copied to bt */
    trr_tensor tx, tzv, tdst_x, tdst_z, rs;
    const int64_t px = (int64_t)((n + TOUCH_STRIDE - 1) / TOUCH_STRIDE), pz = (int64_t)((zn + TOUCH_STRIDE - 1) / TOUCH_STRIDE);
    CHECK(trr_tensor_2d(bx, 0, TRR_F32, px, 1, TOUCH_STRIDE, &tx));
    CHECK(trr_tensor_2d(bz, 0, TRR_F32, pz, 1, TOUCH_STRIDE, &tzv));
    CHECK(trr_tensor_2d(bt, 0, TRR_F32, px, 1, 0, &tdst_x));
    CHECK(trr_tensor_2d(bt, 0, TRR_F32, pz, 1, 0, &tdst_z));
    CHECK(trr_tensor_1d(brs, 0, TRR_F32, 8192, &rs));
    const trr_tensor *read_ops[2] = {&fsrc, &rs};
    trr_tensor wx, wz;
    CHECK(op_views(op, vector, bwx, bwz, vector ? 1 : WARM_ROWS, vector ? (long long)wn : cols, &wx, &wz));
    /* one-input ops take (x, z), add (x, y, z) */
    const trr_tensor *warm_ops[3] = {&wx, op == TRR_OP_ADD ? &wx : &wz, &wz};
    const trr_tensor *operands[3] = {&x, op == TRR_OP_ADD ? &y : &z, &z};
    const double bytes = op == TRR_OP_ROW_SUM ? 4.0 * (double)n : op == TRR_OP_ADD ? 12.0 * (double)n : 8.0 * (double)n;
    enum { REPS = 30, ROUNDS3 = 3 };
    CHECK(trr_op_run(ctx, op, operands, NULL));
    CHECK(trr_copy(ctx, &fsrc, &fdst));
    CHECK(trr_synchronize(ctx));
    for (int round = 0; round < ROUNDS3; round++) {
        for (int w = 0; w < FLUSH_WAYS; w++) {
            double ms[REPS];
            for (int r = 0; r < REPS; r++) {
                if (w == FLUSH_FILL) CHECK(trr_buffer_fill(ctx, f0, 0, fb, (uint8_t)r));
                else if (w == FLUSH_BUFFER_COPY) CHECK(trr_buffer_copy(ctx, f0, 0, f1, 0, fb));
                else if (w == FLUSH_KERNEL) CHECK(trr_copy(ctx, &fsrc, &fdst));
                else if (w == FLUSH_FILL_TOUCH || w == FLUSH_FILL_WARM) CHECK(trr_buffer_fill(ctx, f0, 0, fb, (uint8_t)r));
                else if (w == FLUSH_READ || w == FLUSH_READ_TOUCH || w == FLUSH_READ_WARM)
                    CHECK(trr_op_run(ctx, TRR_OP_ROW_SUM, read_ops, NULL));
                if (w == FLUSH_FILL_WARM || w == FLUSH_READ_WARM) CHECK(trr_op_run(ctx, op, warm_ops, NULL));
                if (w == FLUSH_FILL_TOUCH || w == FLUSH_READ_TOUCH) {
                    CHECK(trr_copy(ctx, &tx, &tdst_x));
                    CHECK(trr_copy(ctx, &tzv, &tdst_z));
                }
                CHECK(trr_timer_start(ctx));
                CHECK(trr_op_run(ctx, op, operands, NULL));
                CHECK(trr_timer_stop(ctx, &ms[r]));
            }
            double med = median(ms, REPS);
            printf("%s %s %lldx%lld round %d, after %-12s %8.2f us %7.0f GB/s\n", device, opname, rows, cols, round + 1,
                   flush_names[w], med * 1e3, bytes / (med * 1e-3) * 1e-9);
            fflush(stdout);
        }
    }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(bz);
    trr_buffer_destroy(bt);
    trr_buffer_destroy(brs);
    trr_buffer_destroy(bwx);
    trr_buffer_destroy(bwz);
    trr_buffer_destroy(f0);
    trr_buffer_destroy(f1);
    trr_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "latency") == 0) return latency(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "streams") == 0) return streams(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "dispatch") == 0) return dispatch(argv[2]);
    if (argc >= 7 && strcmp(argv[1], "sweep") == 0)
        return sweep(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]), argc - 6, argv + 6);
    if (argc >= 6 && strcmp(argv[1], "flushes") == 0) return flushes(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]));
    fprintf(stderr, "usage: stream_probe latency DEVICE | streams DEVICE | dispatch DEVICE | sweep DEVICE OP ROWS COLS CFG... | flushes DEVICE "
                    "OP ROWS COLS\n");
    return 2;
}
