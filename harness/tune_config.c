/* The config as text, "BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK" (tuner.h): what `trireme tune --only-config` takes
 * and what the tuner's progress shows, in trr_config's field order. */
#include "tuner.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

trr_status trr_config_parse(const char *text, trr_config *out_config) {
    if (!text || !out_config) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "config: NULL argument");
    trr_config c;
    memset(&c, 0, sizeof c);
    int *f = &c.block_m;
    const char *p = text;
    for (int i = 0;; i++) {
        if (i == 8)
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT,
                             "config \"%s\": more than 8 fields (BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK)", text);
        while (*p == ' ') p++;
        if (isdigit((unsigned char)*p)) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (v > TRR_TUNE_FIELD_MAX)
                return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": field %d (%ld) is over %d", text,
                                 i + 1, v, TRR_TUNE_FIELD_MAX);
            f[i] = (int)v;
            p = end;
            while (*p == ' ') p++;
        }
        if (*p == '\0') break;
        if (*p != ',')
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT,
                             "config \"%s\": expected up to 8 comma-separated non-negative integers "
                             "(BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK), found '%c'",
                             text, *p);
        p++;
    }
    *out_config = c;
    return TRR_OK;
}

void trr_config_format(const trr_config *c, char *out, size_t cap) {
    snprintf(out, cap, "%d,%d,%d,%d,%d,%d,%d,%d", c->block_m, c->block_n, c->block_k, c->group_m, c->threads,
             c->stages, c->vector_width, c->split_k);
}
