/* The GPU's SM clock sampled beside the timed repetitions (bench.h, "the clock"), through NVIDIA's management
 * library loaded at run time: the driver lowers the clock when it sees the GPU idle, and a figure timed at a
 * lowered clock reads as a slow kernel. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include "dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* nvml.h's types and the few entry points used; the library is found at run time, so no header is needed to build
 * (NVML keeps these signatures stable across versions). */
typedef int nvml_return;
typedef struct nvml_device_st *nvml_device;
#define NVML_SUCCESS 0
#define NVML_CLOCK_SM 1
#define NVML_EVENT_REASON_GPU_IDLE 0x1ull

/* How often the sampler thread reads the clock while repetitions run: the governor moves it over tens of
 * milliseconds, and each reading is a call into the driver beside the timed work. */
#define SAMPLE_INTERVAL_NS 20000000L

struct trr_bench_clock {
    void *lib;
    nvml_device dev;
    unsigned max_mhz;
    char source[96];
    char reason[256];
    nvml_return (*shutdown)(void);
    nvml_return (*clock_info)(nvml_device, int, unsigned *);
    nvml_return (*event_reasons)(nvml_device, unsigned long long *);
    /* the sampler thread, between trr_bench_clock_begin and _end */
    pthread_t thread;
    int running;
    pthread_mutex_t lock;
    int stop;
    trr_bench_clock_stats acc;
    double sum_mhz;
};

static void sample(trr_bench_clock *c) {
    unsigned mhz = 0;
    unsigned long long reasons = 0;
    if (c->clock_info(c->dev, NVML_CLOCK_SM, &mhz) != NVML_SUCCESS || mhz == 0) return;
    const int idle = c->event_reasons && c->event_reasons(c->dev, &reasons) == NVML_SUCCESS &&
                     (reasons & NVML_EVENT_REASON_GPU_IDLE);
    pthread_mutex_lock(&c->lock);
    trr_bench_clock_stats *a = &c->acc;
    if (a->samples == 0 || mhz < a->min_mhz) a->min_mhz = mhz;
    if (mhz > a->max_mhz) a->max_mhz = mhz;
    c->sum_mhz += mhz;
    a->samples++;
    a->idle_samples += idle;
    pthread_mutex_unlock(&c->lock);
}

static void *sampler(void *user) {
    trr_bench_clock *c = user;
    const struct timespec gap = {0, SAMPLE_INTERVAL_NS};
    for (;;) {
        pthread_mutex_lock(&c->lock);
        const int stop = c->stop;
        pthread_mutex_unlock(&c->lock);
        if (stop) return NULL;
        sample(c);
        nanosleep(&gap, NULL);
    }
}

#define LOAD(var, sym)                                                                                         \
    do {                                                                                                       \
        void *sym_ = trr_dynlib_sym(c->lib, sym, c->reason, sizeof c->reason);                                 \
        if (!sym_) return 0;                                                                                   \
        memcpy(&var, &sym_, sizeof sym_);                                                                      \
    } while (0)

/* NVML's device of the same UUID (or, when the API gave none, the same PCI address). Returns 1 when found. */
static int find_device(trr_bench_clock *c, const trr_device_info *dev) {
    nvml_return (*init)(void), (*count)(unsigned *), (*by_index)(unsigned, nvml_device *),
        (*uuid_of)(nvml_device, char *, unsigned), (*by_pci)(const char *, nvml_device *), (*driver)(char *, unsigned);
    LOAD(init, "nvmlInit_v2");
    LOAD(c->shutdown, "nvmlShutdown");
    LOAD(count, "nvmlDeviceGetCount_v2");
    LOAD(by_index, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(uuid_of, "nvmlDeviceGetUUID");
    LOAD(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    LOAD(driver, "nvmlSystemGetDriverVersion");
    LOAD(c->clock_info, "nvmlDeviceGetClockInfo");
    nvml_return (*max_clock)(nvml_device, int, unsigned *);
    LOAD(max_clock, "nvmlDeviceGetMaxClockInfo");
    /* the newer name first; drivers before 535 have only the older one, same signature and bits */
    void *er = trr_dynlib_sym(c->lib, "nvmlDeviceGetCurrentClocksEventReasons", NULL, 0);
    if (!er) er = trr_dynlib_sym(c->lib, "nvmlDeviceGetCurrentClocksThrottleReasons", NULL, 0);
    memcpy(&c->event_reasons, &er, sizeof er);
    if (init() != NVML_SUCCESS) {
        snprintf(c->reason, sizeof c->reason, "clock not sampled: nvmlInit failed");
        return 0;
    }
    unsigned n = 0;
    int found = 0;
    if (dev->uuid[0] && count(&n) == NVML_SUCCESS)
        for (unsigned i = 0; i < n && !found; i++) {
            char u[96];
            nvml_device d;
            if (by_index(i, &d) != NVML_SUCCESS || uuid_of(d, u, sizeof u) != NVML_SUCCESS) continue;
            /* NVML writes "GPU-" before the UUID the APIs report */
            const char *bare = strncasecmp(u, "GPU-", 4) == 0 ? u + 4 : u;
            if (!strcasecmp(bare, dev->uuid)) {
                c->dev = d;
                found = 1;
            }
        }
    if (!found && !dev->uuid[0] && dev->pci_bus_id[0] && by_pci(dev->pci_bus_id, &c->dev) == NVML_SUCCESS) found = 1;
    if (!found) {
        snprintf(c->reason, sizeof c->reason, "clock not sampled: NVML has no GPU with %s %s",
                 dev->uuid[0] ? "UUID" : "PCI address", dev->uuid[0] ? dev->uuid : dev->pci_bus_id);
        c->shutdown();
        return 0;
    }
    char version[64] = "?";
    driver(version, sizeof version);
    if (max_clock(c->dev, NVML_CLOCK_SM, &c->max_mhz) != NVML_SUCCESS) c->max_mhz = 0;
    snprintf(c->source, sizeof c->source, "NVML, driver %s, SM clock up to %u MHz", version, c->max_mhz);
    return 1;
}

void trr_bench_clock_open(const trr_device_info *dev, int no_clock, trr_bench_clock **out) {
    *out = NULL;
    trr_bench_clock *c = calloc(1, sizeof *c);
    if (!c) return;
    *out = c;
    pthread_mutex_init(&c->lock, NULL);
    if (no_clock) {
        snprintf(c->reason, sizeof c->reason, "clock not sampled (--no-clock)");
        return;
    }
    if (!dev->is_gpu || (!dev->uuid[0] && !dev->pci_bus_id[0])) {
        snprintf(c->reason, sizeof c->reason, "clock not sampled: %s", dev->is_gpu ? "the device gives no UUID or "
                 "PCI address to find it by" : "not a GPU");
        return;
    }
    static const char *const names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so", NULL};
    char why[200];
    c->lib = trr_dynlib_open(names, why, sizeof why);
    if (!c->lib) {
        snprintf(c->reason, sizeof c->reason, "clock not sampled: NVIDIA's management library did not load (%s)", why);
        return;
    }
    find_device(c, dev); /* on failure c->reason says why, and NVML is shut down again */
}

const char *trr_bench_clock_source(const trr_bench_clock *c) {
    return !c ? "clock not sampled: out of host memory" : c->reason[0] ? c->reason : c->source;
}

unsigned trr_bench_clock_max_mhz(const trr_bench_clock *c) { return c && !c->reason[0] ? c->max_mhz : 0; }

void trr_bench_clock_begin(trr_bench_clock *c) {
    if (!c || c->reason[0] || c->running) return;
    memset(&c->acc, 0, sizeof c->acc);
    c->sum_mhz = 0;
    c->stop = 0;
    sample(c); /* one reading even when the repetitions end before the thread's first */
    c->running = pthread_create(&c->thread, NULL, sampler, c) == 0;
}

void trr_bench_clock_end(trr_bench_clock *c, trr_bench_clock_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c || c->reason[0]) return;
    if (c->running) {
        pthread_mutex_lock(&c->lock);
        c->stop = 1;
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
        c->running = 0;
    }
    sample(c);
    *out = c->acc;
    out->mean_mhz = c->acc.samples ? c->sum_mhz / c->acc.samples : 0;
}

void trr_bench_clock_close(trr_bench_clock *c) {
    if (!c) return;
    if (c->running) {
        trr_bench_clock_stats ignored;
        trr_bench_clock_end(c, &ignored);
    }
    if (!c->reason[0]) c->shutdown(); /* NVML was initialised and the device found */
    if (c->lib) dlclose(c->lib);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int trr_bench_clock_idle_low(const trr_bench_clock_stats *s, double max_mhz) {
    return s->samples > 0 && s->idle_samples > 0 && max_mhz > 0 && s->min_mhz < TRR_BENCH_CLOCK_LOW * max_mhz;
}
