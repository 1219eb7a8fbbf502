/* Helpers the Criterion tests share. */
#ifndef TRR_TEST_SUPPORT_H
#define TRR_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trireme.h"

/* 1 when TRIREME_REQUIRE_BACKENDS (a comma list; CI sets cpu,opencl,vulkan) names this backend: then a missing
 * device fails the test instead of skipping it. */
/* The library's warnings (trr_log_set) printed as the trireme command prints them, for tests that read them
 * from a redirected stderr. */
static inline void log_to_stderr_handler(trr_log_level level, const char *message, void *user) {
    (void)level;
    (void)user;
    fprintf(stderr, "trireme: %s\n", message);
}
static inline void log_to_stderr(void) { trr_log_set(log_to_stderr_handler, NULL); }

/* A whole file's text, malloc'd (a kernel source a test defines an op with, as a user's program reads its own). */
static inline char *read_text_file(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    cr_assert(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* TRIREME_CONFORMANCE_QUICK=1, which the sanitizer run sets (Makefile): conformance runs take the quick case
 * list, the same checks on fewer shapes. */
static inline int conformance_quick_env(void) {
    const char *q = getenv("TRIREME_CONFORMANCE_QUICK");
    return q && !strcmp(q, "1");
}

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

/* A context on spec (e.g. "vulkan:0"). Where it cannot be opened the test is skipped with the reason, or fails
 * when TRIREME_REQUIRE_BACKENDS names backend (NULL: the part of spec before the colon). Every test that needs a
 * device opens it here, so one cause reads the same in every skip `make test` lists. */
static inline trr_context *open_device_or_skip(const char *spec, const char *backend) {
    char name[32];
    if (!backend) {
        size_t n = strcspn(spec, ":");
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, spec, n);
        name[n] = '\0';
        backend = name;
    }
    trr_context *ctx = NULL;
    if (trr_context_create(spec, &ctx) != TRR_OK) {
        if (backend_required(backend)) cr_assert_fail("%s is required but: %s", spec, trr_last_error(NULL));
        cr_skip_test("%s: %s", spec, trr_last_error(NULL));
    }
    return ctx;
}

/* For a backend this build lacks: the test skips with that reason, or fails when TRIREME_REQUIRE_BACKENDS
 * names the backend. */
static inline void skip_not_compiled_in(const char *backend) {
    if (backend_required(backend))
        cr_assert_fail("backend %s is required (TRIREME_REQUIRE_BACKENDS) but not compiled in", backend);
    cr_skip_test("backend %s is not compiled in", backend);
}

#endif
