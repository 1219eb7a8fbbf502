/* Contexts: one opened device plus the last error and config overrides. */
#define _POSIX_C_SOURCE 200809L
#include "backend.h"
#include "config_fields.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

trr_status trr_context_create(const char *device, trr_context **out_ctx) {
    if (!out_ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_ctx is NULL");
    const char *spec = device;
    if (!spec) {
        spec = getenv("TRIREME_DEVICE");
        if (!spec || !*spec) spec = "auto";
    }
    const trr_backend *be = NULL;
    int index = 0;
    char selection[256];
    TRR_TRY(trr_registry_resolve(spec, &be, &index, selection, sizeof selection));

    trr_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "allocating a context");
    ctx->backend = be;
    ctx->device_index = index;
    snprintf(ctx->selection, sizeof ctx->selection, "%s%s", selection,
             device ? "" : (getenv("TRIREME_DEVICE") && *getenv("TRIREME_DEVICE") ? " (from TRIREME_DEVICE)" : ""));
    trr_status st = trr_device_get_info(be->name, index, &ctx->info);
    if (st == TRR_OK) st = be->open(ctx, index, &ctx->dev);
    if (st != TRR_OK) {
        /* the backend recorded its detail on ctx; move it to the thread slot the caller can read */
        if (ctx->last_error[0]) trr_error(NULL, st, "opening %s:%d: %s", be->name, index, ctx->last_error);
        free(ctx);
        return st;
    }
    *out_ctx = ctx;
    return TRR_OK;
}

trr_status trr_context_destroy(trr_context *ctx) {
    if (!ctx) return TRR_OK;
    if (ctx->dev) ctx->backend->close(ctx->dev);
    free(ctx);
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
    return ctx->backend->synchronize(ctx);
}

trr_status trr_timer_start(trr_context *ctx) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    return ctx->backend->timer_start(ctx);
}

trr_status trr_timer_stop(trr_context *ctx, double *out_ms) {
    if (!ctx || !out_ms) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "ctx or out_ms is NULL");
    return ctx->backend->timer_stop(ctx, out_ms);
}

trr_status trr_config_override(trr_context *ctx, trr_op op, const trr_config *config) {
    if (!ctx) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx is NULL");
    if ((unsigned)op >= TRR_OP_COUNT) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (config) {
        TRR_TRY(trr_config_check_range(ctx, config));
        ctx->override[op] = *config;
    }
    ctx->has_override[op] = config != NULL;
    return TRR_OK;
}

trr_status trr_config_last(const trr_context *ctx, trr_config *out_config) {
    if (!ctx || !out_config) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "ctx or out_config is NULL");
    *out_config = ctx->last_config;
    return TRR_OK;
}
