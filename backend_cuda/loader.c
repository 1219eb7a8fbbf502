/* Loads the CUDA driver and NVRTC at run time, so one build runs (and says why not) where neither is
 * installed, and the CI test can compile kernels with NVRTC where no driver exists. */
#include "trr_cuda.h"

#include "dynlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

trr_cu_api trr_cu;
trr_nvrtc_api trr_nvrtc;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cu_library;
static void *nvrtc_library;
static int nvrtc_version;

/* Function pointers cannot be assigned from void * in ISO C; copying the bytes is the portable spelling. */
#define TRR_STORE_SYM(field, sym) memcpy(&(field), &(sym), sizeof(sym))

/* The first of two exports (a versioned one, then the plain one), or NULL. */
static void *sym_either(void *lib, const char *first, const char *second) {
    void *p = trr_dynlib_sym(lib, first, NULL, 0);
    return p ? p : second ? trr_dynlib_sym(lib, second, NULL, 0) : NULL;
}

/* An optional group of driver entry points: each export (the first name, else the second) and the api field it
 * fills. */
typedef struct optional_sym {
    const char *first, *second;
    void *field; /* a function pointer of trr_cu_api, written by its bytes as TRR_STORE_SYM does */
} optional_sym;

/* All of the group or none: a caller checks one field and may then use every one. */
static void load_optional(void *lib, const optional_sym *syms, int n) {
    void *p[16];
    if (n > 16) return;
    for (int i = 0; i < n; i++)
        if (!(p[i] = sym_either(lib, syms[i].first, syms[i].second))) return;
    for (int i = 0; i < n; i++) memcpy(syms[i].field, &p[i], sizeof p[i]);
}

/* CUDA graphs for batch.c (the kernel-node entry points of CUDA 12's _v2 struct, whose leading fields the older
 * ones read alike; node enabling since CUDA 11.6), and wait.c's flag in mapped host memory. */
static void load_optional_apis(void *lib, trr_cu_api *api) {
    const optional_sym graphs[] = {
        {"cuGraphCreate", NULL, &api->GraphCreate},
        {"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode", &api->GraphAddKernelNode},
        {"cuGraphInstantiateWithFlags", NULL, &api->GraphInstantiate},
        {"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams", &api->GraphExecKernelNodeSetParams},
        {"cuGraphNodeSetEnabled", NULL, &api->GraphNodeSetEnabled},
        {"cuGraphLaunch", NULL, &api->GraphLaunch},
        {"cuGraphExecDestroy", NULL, &api->GraphExecDestroy},
        {"cuGraphDestroy", NULL, &api->GraphDestroy},
    };
    const optional_sym flag[] = {
        {"cuMemHostAlloc", NULL, &api->MemHostAlloc},
        {"cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer", &api->MemHostGetDevicePointer},
        {"cuMemFreeHost", NULL, &api->MemFreeHost},
        {"cuStreamWriteValue32_v2", NULL, &api->StreamWriteValue32},
    };
    load_optional(lib, graphs, (int)(sizeof graphs / sizeof graphs[0]));
    load_optional(lib, flag, (int)(sizeof flag / sizeof flag[0]));
}

static trr_status load_driver_locked(char *reason, size_t reason_cap) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    char why[512];
    void *lib = trr_dynlib_open(names, why, sizeof why);
    if (!lib) {
        snprintf(reason, reason_cap, "libcuda.so.1 not found: no NVIDIA driver (%s)", why);
        return TRR_ERR_UNAVAILABLE;
    }
    trr_cu_api api;
    memset(&api, 0, sizeof api);
#define TRR_CU_LOOKUP(symname, field, params)                                                                  \
    {                                                                                                          \
        void *sym = trr_dynlib_sym(lib, symname, reason, reason_cap);                                          \
        if (!sym) return TRR_ERR_UNAVAILABLE;                                                                  \
        TRR_STORE_SYM(api.field, sym);                                                                         \
    }
    TRR_CU_FUNCTIONS(TRR_CU_LOOKUP)
#undef TRR_CU_LOOKUP
    void *elapsed = trr_dynlib_sym(lib, "cuEventElapsedTime_v2", NULL, 0);
    if (!elapsed) elapsed = trr_dynlib_sym(lib, "cuEventElapsedTime", reason, reason_cap);
    if (!elapsed) return TRR_ERR_UNAVAILABLE;
    TRR_STORE_SYM(api.EventElapsedTime, elapsed);
    void *encode = trr_dynlib_sym(lib, "cuTensorMapEncodeTiled", NULL, 0); /* optional: CUDA 12.0+ */
    if (encode) TRR_STORE_SYM(api.TensorMapEncodeTiled, encode);
    /* optional: device identity for `trireme devices` and the same-GPU grouping of the bench */
    void *uuid = trr_dynlib_sym(lib, "cuDeviceGetUuid_v2", NULL, 0);
    if (!uuid) uuid = trr_dynlib_sym(lib, "cuDeviceGetUuid", NULL, 0);
    if (uuid) TRR_STORE_SYM(api.DeviceGetUuid, uuid);
    void *bus = trr_dynlib_sym(lib, "cuDeviceGetPCIBusId", NULL, 0);
    if (bus) TRR_STORE_SYM(api.DeviceGetPCIBusId, bus);
    void *clusters = trr_dynlib_sym(lib, "cuOccupancyMaxActiveClusters", NULL, 0);
    if (clusters) TRR_STORE_SYM(api.OccupancyMaxActiveClusters, clusters);
    load_optional_apis(lib, &api);

    CUresult r = api.Init(0);
    if (r != TRR_CUDA_SUCCESS) {
        const char *name = NULL;
        if (api.GetErrorName(r, &name) != TRR_CUDA_SUCCESS || !name) name = "unknown CUresult";
        /* 100 is CUDA_ERROR_NO_DEVICE: a driver without GPUs, the common case in containers. */
        snprintf(reason, reason_cap, "cuInit failed: %s (%d)", name, r);
        return TRR_ERR_UNAVAILABLE;
    }
    trr_cu = api;
    cu_library = lib;
    return TRR_OK;
}

trr_status trr_cuda_load_driver(char *reason, size_t reason_cap) {
    pthread_mutex_lock(&load_lock);
    trr_status st = cu_library ? TRR_OK : load_driver_locked(reason, reason_cap);
    pthread_mutex_unlock(&load_lock);
    return st;
}

static trr_status load_nvrtc_locked(char *reason, size_t reason_cap) {
    static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    char why[1024];
    void *lib = trr_dynlib_open(sonames, why, sizeof why);
    if (!lib) {
        /* Toolkits installed outside the loader path: $CUDA_HOME first, then the conventional prefix. */
        static const char *const bases[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
        const char *home = getenv("CUDA_HOME");
        const char *dirs[2] = {home && home[0] ? home : NULL, "/usr/local/cuda"};
        for (int d = 0; d < 2 && !lib; d++) {
            if (!dirs[d]) continue;
            for (int b = 0; b < 3 && !lib; b++) {
                char path[1024];
                snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], bases[b]);
                const char *one[] = {path, NULL};
                lib = trr_dynlib_open(one, NULL, 0);
            }
        }
    }
    if (!lib) {
        snprintf(reason, reason_cap, "NVRTC not found (libnvrtc.so.13/.12, $CUDA_HOME/lib64, /usr/local/cuda/lib64): %s",
                 why);
        return TRR_ERR_UNAVAILABLE;
    }
    trr_nvrtc_api api;
    memset(&api, 0, sizeof api);
#define TRR_NVRTC_LOOKUP(name, params)                                                                         \
    {                                                                                                          \
        void *sym = trr_dynlib_sym(lib, "nvrtc" #name, reason, reason_cap);                                    \
        if (!sym) return TRR_ERR_UNAVAILABLE;                                                                  \
        TRR_STORE_SYM(api.name, sym);                                                                          \
    }
    TRR_NVRTC_FUNCTIONS(TRR_NVRTC_LOOKUP)
    TRR_NVRTC_LOOKUP(GetErrorString, ())
#undef TRR_NVRTC_LOOKUP
    int major = 0, minor = 0;
    if (api.Version(&major, &minor) != 0) {
        snprintf(reason, reason_cap, "nvrtcVersion failed");
        return TRR_ERR_UNAVAILABLE;
    }
    trr_nvrtc = api;
    nvrtc_version = major * 1000 + minor * 10;
    nvrtc_library = lib;
    return TRR_OK;
}

trr_status trr_cuda_load_nvrtc(char *reason, size_t reason_cap) {
    pthread_mutex_lock(&load_lock);
    trr_status st = nvrtc_library ? TRR_OK : load_nvrtc_locked(reason, reason_cap);
    pthread_mutex_unlock(&load_lock);
    return st;
}

int trr_cuda_nvrtc_version(void) { return nvrtc_version; }

const char *trr_cuda_result_name(CUresult r) {
    const char *name = NULL;
    if (trr_cu.GetErrorName && trr_cu.GetErrorName(r, &name) == TRR_CUDA_SUCCESS && name) return name;
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "CUresult %d", r);
    return buf;
}

trr_status trr_cuda_fail(trr_context *ctx, const char *function, CUresult r) {
    trr_status st = r == TRR_CUDA_ERROR_OUT_OF_MEMORY ? TRR_ERR_OUT_OF_MEMORY : TRR_ERR_DEVICE;
    return trr_error(ctx, st, "%s: %s", function, trr_cuda_result_name(r));
}
