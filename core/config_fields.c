/* The config field table and the named text form (config_fields.h), plus the public variant names. */
#include "config_fields.h"

#include "backend.h"
#include "op_table.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD(n, b) {#n, offsetof(trr_config, n), b, TRR_CONFIG_FIELD_MAX}
const trr_config_field trr_config_fields[TRR_CONFIG_FIELD_COUNT] = {
    FIELD(block_m, TRR_CFG_BLOCK_M),
    FIELD(block_n, TRR_CFG_BLOCK_N),
    FIELD(block_k, TRR_CFG_BLOCK_K),
    FIELD(group_m, TRR_CFG_GROUP_M),
    FIELD(threads, TRR_CFG_THREADS),
    FIELD(stages, TRR_CFG_STAGES),
    FIELD(vector_width, TRR_CFG_VECTOR_WIDTH),
    FIELD(split_k, TRR_CFG_SPLIT_K),
    {"variant", offsetof(trr_config, variant), TRR_CFG_VARIANT, TRR_VARIANT_COUNT - 1},
};
#undef FIELD


static const char *const variant_names[TRR_VARIANT_COUNT] = {"auto",     "simt",    "mma", "wgmma",
                                                             "coop_khr", "coop_nv", "cm2", "subgroup",
                                                             "streamk"};

trr_status trr_variant_name(trr_variant variant, const char **out_name) {
    if (!out_name) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_variant_name: out_name is NULL");
    if ((unsigned)variant >= TRR_VARIANT_COUNT)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown variant %d", (int)variant);
    *out_name = variant_names[variant];
    return TRR_OK;
}

trr_status trr_variant_from_name(const char *name, trr_variant *out_variant) {
    if (!name || !out_variant)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_variant_from_name: NULL argument");
    for (int v = 0; v < TRR_VARIANT_COUNT; v++)
        if (strcmp(name, variant_names[v]) == 0) {
            *out_variant = (trr_variant)v;
            return TRR_OK;
        }
    return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT,
                     "unknown variant \"%s\" (auto, simt, mma, wgmma, coop_khr, coop_nv, cm2, subgroup, streamk)", name);
}

int trr_config_field_index(const char *name) {
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++)
        if (strcmp(name, trr_config_fields[i].name) == 0) return i;
    return -1;
}

int trr_config_get(const trr_config *c, int field) {
    int v;
    memcpy(&v, (const char *)c + trr_config_fields[field].offset, sizeof v);
    return v;
}

void trr_config_set(trr_config *c, int field, int value) {
    memcpy((char *)c + trr_config_fields[field].offset, &value, sizeof value);
}

int trr_config_equal(const trr_config *a, const trr_config *b) {
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++)
        if (trr_config_get(a, i) != trr_config_get(b, i)) return 0;
    return 1;
}

void trr_config_fill(trr_config *c, const trr_config *defaults, unsigned fields) {
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++)
        if ((fields & trr_config_fields[i].bit) && trr_config_get(c, i) == 0)
            trr_config_set(c, i, trr_config_get(defaults, i));
}

trr_status trr_config_check_range(trr_context *ctx, const trr_config *c) {
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++) {
        int v = trr_config_get(c, i);
        if (v < 0 || v > trr_config_fields[i].max)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config: %s = %d is outside [0, %d]",
                             trr_config_fields[i].name, v, trr_config_fields[i].max);
    }
    return TRR_OK;
}

void trr_config_to_text(const trr_config *c, char *out, size_t cap) {
    if (!cap) return;
    out[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++) {
        int v = trr_config_get(c, i);
        if (v == 0) continue;
        char item[48];
        if (i == TRR_CONFIG_FIELD_VARIANT && v > 0 && v < TRR_VARIANT_COUNT)
            snprintf(item, sizeof item, "%s%s=%s", len ? "," : "", trr_config_fields[i].name, variant_names[v]);
        else
            snprintf(item, sizeof item, "%s%s=%d", len ? "," : "", trr_config_fields[i].name, v);
        int n = snprintf(out + len, cap - len, "%s", item);
        if (n < 0 || (size_t)n >= cap - len) return; /* truncated */
        len += (size_t)n;
    }
}

trr_status trr_config_from_text(trr_context *ctx, const char *text, trr_config *out_config) {
    if (!text || !out_config) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config: NULL argument");
    trr_config c;
    memset(&c, 0, sizeof c);
    unsigned seen = 0;
    const char *p = text;
    while (*p == ' ') p++;
    while (*p) {
        while (*p == ' ') p++;
        const char *item = p;
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        char buf[96];
        size_t len = (size_t)(end - item);
        while (len && item[len - 1] == ' ') len--;
        if (len == 0) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": an empty item", text);
        if (len >= sizeof buf)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": an item is too long", text);
        memcpy(buf, item, len);
        buf[len] = '\0';
        char *eq = strchr(buf, '=');
        if (!eq)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT,
                             "config \"%s\": \"%s\" is not name=value (names: block_m, block_n, block_k, group_m, "
                             "threads, stages, vector_width, split_k, variant)",
                             text, buf);
        *eq = '\0';
        char *name = buf, *value = eq + 1;
        size_t nl = strlen(name);
        while (nl && name[nl - 1] == ' ') name[--nl] = '\0';
        while (*value == ' ') value++;
        int f = trr_config_field_index(name);
        if (f < 0)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT,
                             "config \"%s\": unknown field \"%s\" (block_m, block_n, block_k, group_m, threads, "
                             "stages, vector_width, split_k, variant)",
                             text, name);
        if (seen & (1u << f))
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": %s is given twice", text, name);
        seen |= 1u << f;
        long v;
        if (f == TRR_CONFIG_FIELD_VARIANT && !isdigit((unsigned char)*value)) {
            trr_variant var;
            if (trr_variant_from_name(value, &var) != TRR_OK)
                return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT,
                                 "config \"%s\": unknown variant \"%s\" (auto, simt, mma, wgmma, coop_khr, coop_nv, "
                                 "cm2, subgroup)",
                                 text, value);
            v = (long)var;
        } else {
            char *num_end = NULL;
            errno = 0;
            v = isdigit((unsigned char)*value) ? strtol(value, &num_end, 10) : -1;
            if (!num_end || *num_end != '\0' || errno)
                return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT,
                                 "config \"%s\": %s = \"%s\" is not a non-negative integer", text, name, value);
        }
        if (v < 0 || v > trr_config_fields[f].max)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": %s = %ld is outside [0, %d]", text, name,
                             v, trr_config_fields[f].max);
        trr_config_set(&c, f, (int)v);
        if (*end == '\0') break;
        p = end + 1;
        if (*p == '\0') return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "config \"%s\": an empty item", text);
    }
    *out_config = c;
    return TRR_OK;
}
