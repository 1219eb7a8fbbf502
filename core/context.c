/* Contexts: one opened device plus the last error and config overrides. */
#define _POSIX_C_SOURCE 200809L
#include "backend.h"
#include "config_fields.h"
#include "registry.h"
#include "op_table.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opens device index of be into a new context; on failure its detail goes to this thread's slot. */
static trr_status open_device(const trr_backend *be, int index, const char *selection, trr_context **out_ctx) {
    trr_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "allocating a context");
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);
    if (!err) {
        err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
        if (!err) err = pthread_mutex_init(&ctx->lock, &attr);
        pthread_mutexattr_destroy(&attr);
    }
    if (err) {
        free(ctx);
        return trr_error(NULL, TRR_ERR_INTERNAL, "creating the context's lock: %s", strerror(err));
    }
    ctx->refs = 1;
    ctx->backend = be;
    ctx->device_index = index;
    snprintf(ctx->selection, sizeof ctx->selection, "%s", selection);
    trr_status st = trr_device_get_info(be->name, index, &ctx->info);
    if (st == TRR_OK) st = be->open(ctx, index, &ctx->dev);
    if (st != TRR_OK) {
        /* the backend recorded its detail on ctx; move it to the thread slot the caller can read */
        trr_error(NULL, st, "opening %s:%d: %s", be->name, index,
                  ctx->last_error[0] ? ctx->last_error : trr_status_message(st));
        pthread_mutex_destroy(&ctx->lock);
        free(ctx);
        return st;
    }
    *out_ctx = ctx;
    return TRR_OK;
}

trr_status trr_context_open_first(const trr_device_ref *order, int n, const char *suffix, trr_context **out_ctx) {
    char skipped[512] = "";
    trr_status st = TRR_ERR_NO_DEVICE;
    for (int i = 0; i < n; i++) {
        const trr_device_ref *r = &order[i];
        char selection[1024];
        const int cpu = i == n - 1 && r->backend == &trr_backend_cpu;
        snprintf(selection, sizeof selection, "auto: chose %s:%d (%s), %s%s%s%s", r->backend->name, r->index, r->name,
                 cpu ? "no GPU found" : skipped[0] ? "the first GPU that opened" : "the first GPU found",
                 skipped[0] ? "; " : "", skipped, suffix);
        if (cpu && skipped[0])
            snprintf(selection, sizeof selection, "auto: chose cpu:0, no GPU opened; %s%s", skipped, suffix);
        st = open_device(r->backend, r->index, selection, out_ctx);
        if (st == TRR_OK) return TRR_OK;
        size_t at = strlen(skipped);
        snprintf(skipped + at, sizeof skipped - at, "%s%s:%d failed to open (%s)", at ? ", " : "", r->backend->name,
                 r->index, trr_last_error(NULL));
    }
    return st;
}

trr_status trr_context_create(const char *device, trr_context **out_ctx) {
    if (!out_ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_ctx is NULL");
    const char *spec = device;
    if (!spec) {
        spec = getenv("TRIREME_DEVICE");
        if (!spec || !*spec) spec = "auto";
    }
    const char *suffix = device ? "" : (getenv("TRIREME_DEVICE") && *getenv("TRIREME_DEVICE") ? " (from TRIREME_DEVICE)" : "");
    if (strcmp(spec, "auto") == 0 || spec[0] == '\0') {
        /* a GPU that is listed but fails to open (driver mismatch, out of memory) gives way to the next one */
        trr_device_ref order[64];
        const int n = trr_registry_auto_order(order, 64);
        return trr_context_open_first(order, n, suffix, out_ctx);
    }
    const trr_backend *be = NULL;
    int index = 0;
    char selection[256], text[300];
    TRR_TRY(trr_registry_resolve(spec, &be, &index, selection, sizeof selection));
    snprintf(text, sizeof text, "%s%s", selection, suffix);
    return open_device(be, index, text, out_ctx);
}

/* Closes the device and frees ctx: called once, when the last reference goes. */
static void context_free(trr_context *ctx) {
    if (ctx->dev) ctx->backend->close(ctx->dev);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

trr_status trr_context_enter(trr_context *ctx, const char *what) {
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->destroyed) return TRR_OK;
    trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: the context was destroyed (only its buffers may still be destroyed)",
              what);
    pthread_mutex_unlock(&ctx->lock);
    return TRR_ERR_INVALID_ARGUMENT;
}

void trr_context_leave(trr_context *ctx) {
    pthread_mutex_unlock(&ctx->lock);
}

void trr_context_release(trr_context *ctx) {
    pthread_mutex_lock(&ctx->lock);
    const int last = --ctx->refs == 0;
    pthread_mutex_unlock(&ctx->lock);
    if (last) context_free(ctx); /* no reference is left, so no other thread can be waiting on the lock */
}

trr_status trr_context_destroy(trr_context *ctx) {
    if (!ctx) return TRR_OK;
    TRR_TRY(trr_context_enter(ctx, "context_destroy"));
    ctx->destroyed = 1;
    trr_context_leave(ctx);
    trr_context_release(ctx);
    trr_trace_flush(); /* TRIREME_TRACE: the file holds every call so far */
    return TRR_OK;
}

trr_status trr_context_device(const trr_context *ctx, trr_device_info *out_info) {
    if (!ctx || !out_info) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx or out_info is NULL");
    *out_info = ctx->info;
    return TRR_OK;
}

trr_status trr_context_selection(const trr_context *ctx, const char **out_text) {
    if (!ctx || !out_text) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx or out_text is NULL");
    *out_text = ctx->selection;
    return TRR_OK;
}

trr_status trr_synchronize(trr_context *ctx) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    TRR_TRY(trr_context_enter(ctx, "synchronize"));
    const trr_status st = ctx->backend->synchronize(ctx);
    trr_context_leave(ctx);
    return st;
}

trr_status trr_timer_start(trr_context *ctx) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    TRR_TRY(trr_context_enter(ctx, "timer_start"));
    trr_status st = ctx->backend->timer_start(ctx);
    ctx->timer_running = st == TRR_OK;
    trr_context_leave(ctx);
    return st;
}

trr_status trr_timer_stop(trr_context *ctx, double *out_ms) {
    if (!ctx || !out_ms) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "ctx or out_ms is NULL");
    TRR_TRY(trr_context_enter(ctx, "timer_stop"));
    ctx->timer_running = 0;
    const trr_status st = ctx->backend->timer_stop(ctx, out_ms);
    trr_context_leave(ctx);
    return st;
}

static trr_status config_override(trr_context *ctx, trr_op op, const trr_config *config) {
    if (!trr_op_desc_get(op)) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (config) {
        TRR_TRY(trr_config_check_range(ctx, config));
        ctx->override[op] = *config;
    }
    ctx->has_override[op] = config != NULL;
    return TRR_OK;
}

trr_status trr_config_override(trr_context *ctx, trr_op op, const trr_config *config) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    TRR_TRY(trr_context_enter(ctx, "config_override"));
    const trr_status st = config_override(ctx, op, config);
    trr_context_leave(ctx);
    return st;
}

trr_status trr_config_last(const trr_context *ctx, trr_config *out_config) {
    if (!ctx || !out_config) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx or out_config is NULL");
    trr_context *c = (trr_context *)ctx; /* the lock is the one mutable part a const context has */
    TRR_TRY(trr_context_enter(c, "config_last"));
    *out_config = ctx->last_config;
    trr_context_leave(c);
    return TRR_OK;
}
