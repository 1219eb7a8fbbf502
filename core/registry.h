/* The backend registry: which backends are compiled in, whether their drivers load, and device selection. */
#ifndef TRR_REGISTRY_H
#define TRR_REGISTRY_H

#include "backend.h"

/* Resolves a device spec ("cpu", "cuda:1", "auto", ...) to a backend and device index; *selection gets a
 * sentence on how it was chosen. Errors are recorded in this thread's slot (no context exists yet). */
trr_status trr_registry_resolve(const char *spec, const trr_backend **out_backend, int *out_index,
                                char *selection, size_t selection_cap);

/* One device "auto" may choose. */
typedef struct trr_device_ref {
    const trr_backend *backend;
    int index;
    char name[128];
} trr_device_ref;

/* The devices "auto" tries, best first: every GPU of every available backend in preference order, then cpu:0
 * (always last, always there). Returns how many were written (at most cap). */
int trr_registry_auto_order(trr_device_ref *out, int cap);

/* Opens the first device of order that opens (context.c); the selection text names the ones that failed. suffix
 * ends the selection text. The status and detail of the last failure when none opens. */
trr_status trr_context_open_first(const trr_device_ref *order, int n, const char *suffix, trr_context **out_ctx);

#endif
