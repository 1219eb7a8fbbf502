/* The backend registry: which backends are compiled in, whether their drivers load, and device selection. */
#ifndef TRR_REGISTRY_H
#define TRR_REGISTRY_H

#include "backend.h"

/* Resolves a device spec ("cpu", "cuda:1", "auto", ...) to a backend and device index; *selection gets a
 * sentence on how it was chosen. Errors are recorded in this thread's slot (no context exists yet). */
trr_status trr_registry_resolve(const char *spec, const trr_backend **out_backend, int *out_index,
                                char *selection, size_t selection_cap);

#endif
