/* Helpers the Criterion tests share. */
#ifndef TRR_TEST_SUPPORT_H
#define TRR_TEST_SUPPORT_H

#include <stdlib.h>
#include <string.h>

/* 1 when TRIREME_REQUIRE_BACKENDS (a comma list; CI sets cpu,opencl,vulkan) names this backend: then a missing
 * device fails the test instead of skipping it. */
static inline int backend_required(const char *name) {
    const char *list = getenv("TRIREME_REQUIRE_BACKENDS");
    if (!list) return 0;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, name, len)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

#endif
