/* The last-error text: per context, or per thread before a context exists. */
#define _POSIX_C_SOURCE 200809L
#include "backend.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char thread_error[8192];

static char *slot(trr_context *ctx, size_t *out_cap) {
    if (ctx) {
        *out_cap = sizeof ctx->last_error;
        return ctx->last_error;
    }
    *out_cap = sizeof thread_error;
    return thread_error;
}

trr_status trr_verror(trr_context *ctx, trr_status status, const char *fmt, va_list ap) {
    size_t cap;
    char *buf = slot(ctx, &cap);
    int n = snprintf(buf, cap, "%s: ", trr_status_name(status));
    if (n > 0 && (size_t)n < cap) vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
    if (ctx) ctx->last_status = status;
    return status;
}

trr_status trr_error(trr_context *ctx, trr_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    trr_verror(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

void trr_error_append(trr_context *ctx, const char *text) {
    size_t cap;
    char *buf = slot(ctx, &cap);
    size_t len = strnlen(buf, cap);
    if (len + 1 < cap) snprintf(buf + len, cap - len, "\n%s", text ? text : "");
}

const char *trr_last_error(const trr_context *ctx) {
    return ctx ? ctx->last_error : thread_error;
}
