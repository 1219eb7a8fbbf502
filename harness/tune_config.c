/* The config as text (tuner.h): the named form of config_fields.h ("block_m=64,threads=256,variant=simt"),
 * which --config and --only-config take and the tuner's progress shows; the older positional form
 * "BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK" is still read. */
#include "tuner.h"

#include "config_fields.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The positional form covers the eight tile fields in table order; the variant only has a name. */
static trr_status parse_positional(const char *text, trr_config *out_config) {
    trr_config c;
    memset(&c, 0, sizeof c);
    const int n_fields = TRR_CONFIG_FIELD_VARIANT;
    const char *p = text;
    for (int i = 0;; i++) {
        if (i == n_fields)
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT,
                             "config \"%s\": more than %d fields (BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK)", text,
                             n_fields);
        while (*p == ' ') p++;
        if (isdigit((unsigned char)*p)) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (v > trr_config_fields[i].max)
                return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": %s (%ld) is over %d", text,
                                 trr_config_fields[i].name, v, trr_config_fields[i].max);
            trr_config_set(&c, i, (int)v);
            p = end;
            while (*p == ' ') p++;
        }
        if (*p == '\0') break;
        if (*p != ',')
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT,
                             "config \"%s\": expected name=value items (block_m=128,variant=simt) or up to 8 "
                             "comma-separated non-negative integers (BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK), found '%c'",
                             text, *p);
        p++;
    }
    *out_config = c;
    return TRR_OK;
}

trr_status trr_config_parse(const char *text, trr_config *out_config) {
    if (!text || !out_config) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "config: NULL argument");
    if (strchr(text, '=')) return trr_config_from_text(NULL, text, out_config);
    return parse_positional(text, out_config);
}

void trr_config_format(const trr_config *c, char *out, size_t cap) {
    trr_config_to_text(c, out, cap);
    if (cap && !out[0]) snprintf(out, cap, "(backend's choice)");
}
