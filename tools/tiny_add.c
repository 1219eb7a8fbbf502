/* trr_tiny_add: the launch cost of one op, as docs/ops.md's tiny_add states it (an add of 1 element, µs per
 * call): every call synchronized, and a run of calls then one synchronize. Host wall-clock time per call, and
 * for the run the device timer's figure too (trr_timer_start/stop around it). Public API only, so it measures
 * any device: `trr_tiny_add --device vulkan:0 --calls 1000 --reps 5` (`--matmul N` adds the same loops for an f16
 * N^3 matmul; `--gap-us G` sleeps G us between the synchronized calls, outside their timing). Prints the median
 * of the repetitions, then
 * the distribution of the synchronized calls' wall times over all repetitions (min / p10 / median / p90 / max),
 * split into the op (recording) and trr_synchronize (submission and wait), and each repetition's median (a
 * synchronized figure can differ between processes, with the CPU the waiting thread runs on). */
#define _GNU_SOURCE /* sched_getcpu */
#define TOOL_NAME "trr_tiny_add"
#include "tool_util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU time of the process's other threads (the driver's), by thread: is one of them busy while this one
 * waits? A thread's CPU clock is ((~tid) << 3) | 6 on Linux (what pthread_getcpuclockid returns). */
#define MAX_THREADS 64
typedef struct threads_cpu {
    int n;
    int tid[MAX_THREADS];
    char name[MAX_THREADS][20];
    double us[MAX_THREADS];
} threads_cpu;

static void other_threads(threads_cpu *t) {
    t->n = 0;
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return;
    int self = (int)syscall(SYS_gettid);
    struct dirent *e;
    while ((e = readdir(dir)) && t->n < MAX_THREADS) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == self) continue;
        struct timespec ts;
        if (clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6), &ts)) continue;
        t->tid[t->n] = tid;
        t->us[t->n] = (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
        t->name[t->n][0] = 0;
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(t->name[t->n], sizeof t->name[t->n], f)) t->name[t->n][strcspn(t->name[t->n], "\n")] = 0;
            fclose(f);
        }
        t->n++;
    }
    closedir(dir);
}

/* Adds to acc each thread's CPU time between a and b (threads in both). */
static void add_threads(threads_cpu *acc, const threads_cpu *a, const threads_cpu *b) {
    for (int j = 0; j < b->n; j++)
        for (int i = 0; i < a->n; i++) {
            if (a->tid[i] != b->tid[j]) continue;
            int k = 0;
            while (k < acc->n && acc->tid[k] != b->tid[j]) k++;
            if (k == acc->n) {
                if (acc->n == MAX_THREADS) break;
                acc->n++;
                acc->tid[k] = b->tid[j];
                memcpy(acc->name[k], b->name[j], sizeof acc->name[k]);
                acc->us[k] = 0;
            }
            acc->us[k] += b->us[j] - a->us[i];
        }
}

/* The q-quantile of v, which is sorted. */
static double quantile(const double *v, int n, double q) {
    return v[(int)(q * (n - 1) + 0.5)];
}

/* --matmul N: the same two loops for an f16 N x N x N matmul (the launch cost of a kernel that is not small):
 * host time per call, 1000 then one synchronize and each synchronized, median of the repetitions. */
static int matmul_part(trr_context *ctx, int size, int calls, int reps) {
    const size_t bytes = (size_t)size * (size_t)size * 2;
    trr_buffer *b[3] = {NULL, NULL, NULL};
    trr_tensor t[3];
    int bad = 0;
    for (int i = 0; !bad && i < 3; i++)
        bad = tool_check(ctx, trr_buffer_create(ctx, bytes, &b[i]), "buffer") ||
              tool_check(ctx, trr_buffer_fill(ctx, b[i], 0, bytes, 0x3c), "fill") || /* f16 0x3c3c: 1.06 */
              tool_check(ctx, trr_tensor_2d(b[i], 0, TRR_F16, size, size, 0, &t[i]), "tensor");
    for (int i = 0; !bad && i < 20; i++)
        bad = tool_check(ctx, trr_matmul(ctx, &t[0], &t[1], &t[2], TRR_EPI_NONE, 0.0f, 0), "matmul");
    if (!bad) bad = tool_check(ctx, trr_synchronize(ctx), "synchronize");
    double batched[100], synced[100];
    for (int r = 0; !bad && r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; !bad && i < calls; i++)
            bad = tool_check(ctx, trr_matmul(ctx, &t[0], &t[1], &t[2], TRR_EPI_NONE, 0.0f, 0), "matmul");
        if (!bad) bad = tool_check(ctx, trr_synchronize(ctx), "synchronize");
        batched[r] = (now_s() - t0) / calls * 1e6;
        t0 = now_s();
        for (int i = 0; !bad && i < calls; i++)
            bad = tool_check(ctx, trr_matmul(ctx, &t[0], &t[1], &t[2], TRR_EPI_NONE, 0.0f, 0), "matmul") ||
                  tool_check(ctx, trr_synchronize(ctx), "synchronize");
        synced[r] = (now_s() - t0) / calls * 1e6;
    }
    if (!bad)
        printf("matmul f16 %d^3, %d calls, median of %d: batched %.2f us/call (wall); synced %.2f us/call (wall)\n",
               size, calls, reps, tool_median(batched, reps), tool_median(synced, reps));
    for (int i = 0; i < 3; i++)
        if (b[i]) trr_buffer_destroy(b[i]);
    return bad;
}

int main(int argc, char **argv) {
    const char *device = "vulkan:0";
    int calls = 1000, reps = 5, pin = -1, mm = 0, gap_us = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--calls")) calls = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--pin")) pin = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--matmul")) mm = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gap-us")) gap_us = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: trr_tiny_add [--device D] [--calls N] [--reps R] [--pin CPU] [--matmul N] [--gap-us G]\n");
            return 2;
        }
    }
    if (calls < 1 || reps < 1 || reps > 100) {
        fprintf(stderr, "trr_tiny_add: --calls wants at least 1, --reps 1..100\n");
        return 2;
    }
    trr_context *ctx = NULL;
    if (tool_check(NULL, trr_context_create(device, &ctx), "opening the device")) return 1;
    /* --pin: this thread only, after the context exists, so threads the driver started keep their placement */
    if (pin >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(pin, &set);
        if (sched_setaffinity(0, sizeof set, &set)) {
            fprintf(stderr, "trr_tiny_add: cannot pin to CPU %d\n", pin);
            trr_context_destroy(ctx);
            return 1;
        }
    }
    trr_buffer *b = NULL;
    trr_tensor x, y, z;
    const float in[3] = {1.5f, 2.25f, -7.0f};
    int bad = tool_check(ctx, trr_buffer_create(ctx, sizeof in, &b), "buffer") ||
              tool_check(ctx, trr_buffer_write(ctx, b, 0, in, sizeof in), "write") ||
              tool_check(ctx, trr_tensor_1d(b, 0, TRR_F32, 1, &x), "tensor") ||
              tool_check(ctx, trr_tensor_1d(b, 4, TRR_F32, 1, &y), "tensor") ||
              tool_check(ctx, trr_tensor_1d(b, 8, TRR_F32, 1, &z), "tensor");
    /* warm-up: pipeline creation and first submissions stay out of the figures */
    for (int i = 0; !bad && i < 100; i++) bad = tool_check(ctx, trr_add(ctx, &x, &y, &z), "add");
    if (!bad) bad = tool_check(ctx, trr_synchronize(ctx), "synchronize");
    double batched[100], device_t[100], synced[100], rep_med[100];
    long csw_vol[100] = {0}, csw_invol[100] = {0};
    double user_us[100] = {0}, sys_us[100] = {0};
    static threads_cpu th0, th1, th_acc;
    /* per synchronized call: the op's and the synchronize's wall time */
    double *t_op = calloc((size_t)calls * (size_t)reps, sizeof(double));
    double *t_sync = calloc((size_t)calls * (size_t)reps, sizeof(double));
    double *t_all = calloc((size_t)calls * (size_t)reps, sizeof(double));
    if (!t_op || !t_sync || !t_all) {
        fprintf(stderr, "trr_tiny_add: out of memory\n");
        bad = 1;
    }
    for (int r = 0; !bad && r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; !bad && i < calls; i++) bad = tool_check(ctx, trr_add(ctx, &x, &y, &z), "add");
        if (!bad) bad = tool_check(ctx, trr_synchronize(ctx), "synchronize");
        batched[r] = (now_s() - t0) / calls * 1e6;
        double ms = 0;
        if (!bad) bad = tool_check(ctx, trr_timer_start(ctx), "timer_start");
        for (int i = 0; !bad && i < calls; i++) bad = tool_check(ctx, trr_add(ctx, &x, &y, &z), "add");
        if (!bad) bad = tool_check(ctx, trr_timer_stop(ctx, &ms), "timer_stop");
        device_t[r] = ms / calls * 1e3;
        struct rusage u0, u1;
        other_threads(&th0);
        getrusage(RUSAGE_THREAD, &u0);
        t0 = now_s();
        for (int i = 0; !bad && i < calls; i++) {
            double a = now_s();
            bad = tool_check(ctx, trr_add(ctx, &x, &y, &z), "add");
            double b2 = now_s();
            bad = bad || tool_check(ctx, trr_synchronize(ctx), "synchronize");
            double c = now_s();
            size_t k = (size_t)r * (size_t)calls + (size_t)i;
            t_op[k] = (b2 - a) * 1e6;
            t_sync[k] = (c - b2) * 1e6;
            t_all[k] = (c - a) * 1e6;
            if (gap_us > 0) { /* the thread sleeps between synchronized calls (untimed), as a program that
                               * synchronizes now and then does */
                struct timespec gap = {.tv_sec = gap_us / 1000000, .tv_nsec = (long)(gap_us % 1000000) * 1000};
                nanosleep(&gap, NULL);
            }
        }
        synced[r] = (now_s() - t0) / calls * 1e6;
        getrusage(RUSAGE_THREAD, &u1);
        other_threads(&th1);
        add_threads(&th_acc, &th0, &th1);
        /* context switches of this thread in the synchronized loop: a wait that sleeps shows as voluntary ones */
        csw_vol[r] = u1.ru_nvcsw - u0.ru_nvcsw;
        csw_invol[r] = u1.ru_nivcsw - u0.ru_nivcsw;
        /* CPU time a call, user and system: a submission or wait through the kernel shows as system time */
        user_us[r] = ((double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec) * 1e6 +
                      (double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec)) / calls;
        sys_us[r] = ((double)(u1.ru_stime.tv_sec - u0.ru_stime.tv_sec) * 1e6 +
                     (double)(u1.ru_stime.tv_usec - u0.ru_stime.tv_usec)) / calls;
        if (!bad) rep_med[r] = tool_median(t_all + (size_t)r * (size_t)calls, calls); /* sorts that rep's slice */
    }
    float out = 0;
    if (!bad) bad = tool_check(ctx, trr_buffer_read(ctx, b, 8, &out, sizeof out), "read");
    if (!bad && out != in[0] + in[1]) {
        fprintf(stderr, "trr_tiny_add: the add gave %g, not %g\n", (double)out, (double)(in[0] + in[1]));
        bad = 1;
    }
    if (!bad) {
        trr_device_info info;
        if (trr_context_device(ctx, &info) == TRR_OK) printf("device: %s (%s)\n", info.spec, info.name);
        printf("tiny add, %d calls, median of %d: batched %.2f us/call (wall), %.2f us/call (device timer); "
               "synced %.2f us/call (wall%s)\n",
               calls, reps, tool_median(batched, reps), tool_median(device_t, reps), tool_median(synced, reps),
               gap_us > 0 ? ", with the sleeps between calls" : "");
        if (gap_us > 0) printf("synchronized calls %d us apart (the thread sleeping between them)\n", gap_us);
        int n = calls * reps;
        double op_med = tool_median(t_op, n), sync_med = tool_median(t_sync, n);
        double sync_p90 = quantile(t_sync, n, 0.9);
        tool_median(t_all, n); /* sorts */
        printf("synced per call (us, %d calls): min %.2f p10 %.2f median %.2f p90 %.2f max %.1f; op median %.2f, "
               "synchronize median %.2f (p90 %.2f); medians of the reps:",
               n, t_all[0], quantile(t_all, n, 0.1), quantile(t_all, n, 0.5), quantile(t_all, n, 0.9), t_all[n - 1],
               op_med, sync_med, sync_p90);
        for (int r = 0; r < reps; r++) printf(" %.2f", rep_med[r]);
        printf("; context switches (voluntary/involuntary) of the reps:");
        for (int r = 0; r < reps; r++) printf(" %ld/%ld", csw_vol[r], csw_invol[r]);
        printf("; user/system us a call:");
        for (int r = 0; r < reps; r++) printf(" %.1f/%.1f", user_us[r], sys_us[r]);
        printf("; cpu %d; other threads' CPU us a call:", sched_getcpu());
        for (int k = 0; k < th_acc.n; k++) printf(" %s %.2f", th_acc.name[k], th_acc.us[k] / n);
        printf("\n");
    }
    if (!bad && mm > 0) bad = matmul_part(ctx, mm, calls, reps);
    free(t_op);
    free(t_sync);
    free(t_all);
    trr_buffer_destroy(b);
    trr_context_destroy(ctx);
    return bad;
}
