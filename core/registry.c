/* The backend registry (see registry.h). Each backend's driver is probed once, on first use, under a lock. */
#include "registry.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct registry_entry {
    const char *name;
    const trr_backend *backend; /* NULL: not compiled in */
    int probed;
    trr_status status;
    int device_count;
    char reason[256];
} registry_entry;

/* "auto" prefers GPUs in this order: the native API first, then the portable ones. */
static registry_entry entries[] = {
#ifdef TRIREME_WITH_CUDA
    {"cuda", &trr_backend_cuda, 0, TRR_OK, 0, ""},
#else
    {"cuda", NULL, 0, TRR_OK, 0, ""},
#endif
#ifdef TRIREME_WITH_VULKAN
    {"vulkan", &trr_backend_vulkan, 0, TRR_OK, 0, ""},
#else
    {"vulkan", NULL, 0, TRR_OK, 0, ""},
#endif
#ifdef TRIREME_WITH_OPENCL
    {"opencl", &trr_backend_opencl, 0, TRR_OK, 0, ""},
#else
    {"opencl", NULL, 0, TRR_OK, 0, ""},
#endif
    {"cpu", &trr_backend_cpu, 0, TRR_OK, 0, ""},
};
#define ENTRY_COUNT ((int)(sizeof entries / sizeof entries[0]))

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static registry_entry *probed_entry(int i) {
    registry_entry *e = &entries[i];
    pthread_mutex_lock(&registry_lock);
    if (!e->probed) {
        if (!e->backend) {
            char upper[16];
            size_t n = 0;
            for (; e->name[n] && n + 1 < sizeof upper; n++) upper[n] = (char)toupper((unsigned char)e->name[n]);
            upper[n] = '\0';
            e->status = TRR_ERR_UNAVAILABLE;
            snprintf(e->reason, sizeof e->reason, "not compiled in (configure with -DTRIREME_%s=ON)", upper);
        } else if (e->backend->api_version != TRR_BACKEND_API_VERSION) {
            e->status = TRR_ERR_UNAVAILABLE;
            snprintf(e->reason, sizeof e->reason, "backend API version %d, runtime expects %d",
                     e->backend->api_version, TRR_BACKEND_API_VERSION);
        } else {
            e->status = e->backend->probe(&e->device_count, e->reason, sizeof e->reason);
            if (e->status == TRR_OK && e->device_count == 0) {
                e->status = TRR_ERR_UNAVAILABLE;
                if (!e->reason[0]) snprintf(e->reason, sizeof e->reason, "driver loaded but reports no device");
            }
            if (e->status != TRR_OK) e->device_count = 0;
        }
        e->probed = 1;
    }
    pthread_mutex_unlock(&registry_lock);
    return e;
}

static int find_entry(const char *name, size_t len) {
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (strlen(entries[i].name) == len && strncmp(entries[i].name, name, len) == 0) return i;
    return -1;
}

trr_status trr_backend_count(int *out_count) {
    if (!out_count) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_count is NULL");
    *out_count = ENTRY_COUNT;
    return TRR_OK;
}

trr_status trr_backend_get_info(int index, trr_backend_info *out_info) {
    if (!out_info) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_info is NULL");
    if (index < 0 || index >= ENTRY_COUNT)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "backend index %d out of range [0, %d)", index, ENTRY_COUNT);
    registry_entry *e = probed_entry(index);
    memset(out_info, 0, sizeof *out_info);
    snprintf(out_info->name, sizeof out_info->name, "%s", e->name);
    out_info->available = e->status == TRR_OK;
    out_info->device_count = e->device_count;
    snprintf(out_info->reason, sizeof out_info->reason, "%s", e->status == TRR_OK ? "" : e->reason);
    return TRR_OK;
}

trr_status trr_device_get_info(const char *backend, int index, trr_device_info *out_info) {
    if (!backend || !out_info) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "backend or out_info is NULL");
    int i = find_entry(backend, strlen(backend));
    if (i < 0) return trr_error(NULL, TRR_ERR_NO_DEVICE, "unknown backend '%s' (cpu, cuda, opencl, vulkan)", backend);
    registry_entry *e = probed_entry(i);
    if (e->status != TRR_OK) return trr_error(NULL, TRR_ERR_UNAVAILABLE, "%s: %s", e->name, e->reason);
    if (index < 0 || index >= e->device_count)
        return trr_error(NULL, TRR_ERR_NO_DEVICE, "%s:%d does not exist: %s has %d device(s)", e->name, index,
                         e->name, e->device_count);
    trr_device_info info;
    memset(&info, 0, sizeof info);
    trr_status st = e->backend->device_info(index, &info);
    if (st != TRR_OK) return st;
    snprintf(info.backend, sizeof info.backend, "%s", e->name);
    info.index = index;
    snprintf(info.spec, sizeof info.spec, "%s:%d", e->name, index);
    *out_info = info;
    return TRR_OK;
}

/* A list of every usable device, for error messages that name the alternatives. */
static void list_devices(char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ENTRY_COUNT; i++) {
        registry_entry *e = probed_entry(i);
        for (int d = 0; d < e->device_count && used < cap; d++) {
            int n = snprintf(buf + used, cap - used, "%s%s:%d", used ? ", " : "", e->name, d);
            if (n > 0) used += (size_t)n;
        }
    }
}

int trr_registry_auto_order(trr_device_ref *out, int cap) {
    int n = 0;
    for (int i = 0; i < ENTRY_COUNT && n + 1 < cap; i++) {
        registry_entry *e = probed_entry(i);
        if (e->status != TRR_OK || e->backend == &trr_backend_cpu) continue;
        for (int d = 0; d < e->device_count && n + 1 < cap; d++) {
            trr_device_info info;
            memset(&info, 0, sizeof info);
            if (e->backend->device_info(d, &info) != TRR_OK || !info.is_gpu) continue;
            out[n] = (trr_device_ref){.backend = e->backend, .index = d};
            snprintf(out[n].name, sizeof out[n].name, "%s", info.name);
            n++;
        }
    }
    if (n < cap) {
        out[n] = (trr_device_ref){.backend = &trr_backend_cpu, .index = 0};
        snprintf(out[n].name, sizeof out[n].name, "the CPU");
        n++;
    }
    return n;
}

trr_status trr_registry_resolve(const char *spec, const trr_backend **out_backend, int *out_index,
                                char *selection, size_t cap) {
    char devices[512];
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int i = find_entry(spec, name_len);
    if (i < 0) {
        list_devices(devices, sizeof devices);
        return trr_error(NULL, TRR_ERR_NO_DEVICE, "unknown device '%s': use auto, cpu, cuda, opencl or vulkan, "
                         "optionally with :INDEX (available: %s)", spec, devices);
    }
    long index = 0;
    if (colon) {
        char *end = NULL;
        index = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || index < 0 || index > 1000000)
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bad device index in '%s': expected BACKEND:N", spec);
    }
    registry_entry *e = probed_entry(i);
    if (e->status != TRR_OK) return trr_error(NULL, TRR_ERR_UNAVAILABLE, "%s is unavailable: %s", e->name, e->reason);
    if (index >= e->device_count) {
        list_devices(devices, sizeof devices);
        return trr_error(NULL, TRR_ERR_NO_DEVICE, "%s:%ld does not exist: %s has %d device(s) (available: %s)",
                         e->name, index, e->name, e->device_count, devices);
    }
    *out_backend = e->backend;
    *out_index = (int)index;
    snprintf(selection, cap, "%s: chose %s:%ld", spec, e->name, index);
    return TRR_OK;
}
