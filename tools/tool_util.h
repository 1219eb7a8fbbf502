/* What the measuring tools over the public API share: the median of their repetitions and the report of a failed
 * call. A tool defines TOOL_NAME (its program name) before including this. */
#ifndef TRR_TOOL_UTIL_H
#define TRR_TOOL_UTIL_H

#include "trireme.h"

#include <stdio.h>
#include <stdlib.h>

static int tool_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place. */
static double tool_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, tool_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* 0 when st is TRR_OK; else prints what failed (ctx's last error where there is a context) and returns 1. */
static int tool_check(trr_context *ctx, trr_status st, const char *what) {
    if (st == TRR_OK) return 0;
    fprintf(stderr, "%s: %s: %s: %s\n", TOOL_NAME, what, trr_status_name(st), ctx ? trr_last_error(ctx) : "");
    return 1;
}

#endif
