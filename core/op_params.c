/* Named op parameters: setting and parsing them, listing an op's declared ones, and resolving a call's values
 * against the op's definition (op_params.h). */
#include "op_params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

trr_status trr_op_params_set(trr_op_params *params, const char *name, double value) {
    if (!params || !name) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "params or name is NULL");
    if (params->count < 0 || params->count > TRR_MAX_OP_PARAMS)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "params->count is %d (not zeroed?)", params->count);
    for (int i = 0; i < params->count; i++)
        if (params->values[i].name && !strcmp(params->values[i].name, name)) {
            params->values[i].value = value;
            return TRR_OK;
        }
    if (params->count == TRR_MAX_OP_PARAMS)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "more than %d parameters", TRR_MAX_OP_PARAMS);
    params->values[params->count].name = name;
    params->values[params->count].value = value;
    params->count++;
    return TRR_OK;
}

trr_status trr_op_get_param(trr_op op, int index, trr_param_info *out_info) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (!out_info) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_info is NULL");
    if (index < 0 || index >= d->n_params)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s declares %d parameters; no parameter %d", d->name,
                         d->n_params, index);
    *out_info = d->params[index];
    return TRR_OK;
}

/* The declared parameter called name (n bytes of it), or -1. */
static int find_param(const trr_op_desc *d, const char *name, size_t n) {
    for (int i = 0; i < d->n_params; i++)
        if (strlen(d->params[i].name) == n && !strncmp(d->params[i].name, name, n)) return i;
    return -1;
}

/* "eps, causal" or "none" for messages */
static void list_params(const trr_op_desc *d, char *out, size_t cap) {
    size_t at = (size_t)snprintf(out, cap, "%s", d->n_params ? "" : "none");
    for (int i = 0; i < d->n_params && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? ", " : "", d->params[i].name);
}

/* The index of choice (n bytes) among a comma-separated list, or -1. */
static int find_choice(const char *choices, const char *choice, size_t n) {
    int index = 0;
    for (const char *p = choices; p && *p; index++) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, choice, n)) return index;
        if (!end) break;
        p = end + 1;
    }
    return -1;
}

static int count_choices(const char *choices) {
    int n = choices && *choices ? 1 : 0;
    for (const char *p = choices; p && *p; p++) n += *p == ',';
    return n;
}

static trr_status check_value(trr_context *ctx, const trr_op_desc *d, const trr_param_info *p, double v) {
    switch (p->type) {
    case TRR_PARAM_F32:
        if (!isfinite(v) || fabs(v) > 3.4028234663852886e38)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: %s = %g is not a finite f32", d->name, p->name, v);
        return TRR_OK;
    case TRR_PARAM_BOOL:
        if (v != 0.0 && v != 1.0)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: %s is a bool (0 or 1), not %g", d->name, p->name, v);
        return TRR_OK;
    case TRR_PARAM_ENUM:
        if (v != floor(v) || v < 0 || v >= count_choices(p->choices))
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: %s = %g is not one of its choices (%s)", d->name,
                             p->name, v, p->choices);
        return TRR_OK;
    case TRR_PARAM_INT:
        if (v != floor(v) || fabs(v) > 9007199254740992.0)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: %s = %g is not a whole number", d->name, p->name, v);
        return TRR_OK;
    }
    return trr_error(ctx, TRR_ERR_INTERNAL, "%s: %s has an unknown type", d->name, p->name);
}

trr_status trr_op_params_resolve(trr_context *ctx, const trr_op_desc *d, const trr_op_params *params,
                                 double out_values[TRR_MAX_OP_PARAMS]) {
    for (int i = 0; i < TRR_MAX_OP_PARAMS; i++) out_values[i] = i < d->n_params ? d->params[i].default_value : 0.0;
    if (!params) return TRR_OK;
    if (params->count < 0 || params->count > TRR_MAX_OP_PARAMS)
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: params->count is %d, outside [0, %d]", d->name,
                         params->count, TRR_MAX_OP_PARAMS);
    int seen[TRR_MAX_OP_PARAMS] = {0};
    for (int i = 0; i < params->count; i++) {
        const trr_param_value *pv = &params->values[i];
        if (!pv->name) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: parameter %d has no name", d->name, i);
        const int slot = find_param(d, pv->name, strlen(pv->name));
        if (slot < 0) {
            char names[256];
            list_params(d, names, sizeof names);
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s has no parameter '%s' (its parameters: %s)", d->name,
                             pv->name, names);
        }
        if (seen[slot]++)
            return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "%s: parameter '%s' given twice", d->name, pv->name);
        TRR_TRY(check_value(ctx, d, &d->params[slot], pv->value));
        out_values[slot] = d->params[slot].type == TRR_PARAM_F32 ? (double)(float)pv->value : pv->value;
    }
    return TRR_OK;
}

/* One "name=value" item of n bytes at text into params. */
static trr_status parse_item(const trr_op_desc *d, const char *text, size_t n, trr_op_params *params) {
    const char *eq = memchr(text, '=', n);
    if (!eq) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: '%.*s' is not name=value", d->name, (int)n, text);
    const int slot = find_param(d, text, (size_t)(eq - text));
    if (slot < 0) {
        char names[256];
        list_params(d, names, sizeof names);
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s has no parameter '%.*s' (its parameters: %s)", d->name,
                         (int)(eq - text), text, names);
    }
    const trr_param_info *p = &d->params[slot];
    char value[64];
    const size_t vn = n - (size_t)(eq + 1 - text);
    if (vn == 0 || vn >= sizeof value)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: %s needs a value", d->name, p->name);
    memcpy(value, eq + 1, vn);
    value[vn] = '\0';
    double v;
    int choice = -1;
    if (p->type == TRR_PARAM_BOOL && (!strcmp(value, "true") || !strcmp(value, "false"))) {
        v = value[0] == 't';
    } else if (p->type == TRR_PARAM_ENUM && (choice = find_choice(p->choices, value, vn)) >= 0) {
        v = choice;
    } else {
        char *end = NULL;
        errno = 0;
        v = strtod(value, &end);
        if (end == value || *end != '\0' || errno == ERANGE)
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "%s: %s = '%s' is not a %s", d->name, p->name, value,
                             p->type == TRR_PARAM_ENUM ? p->choices : p->type == TRR_PARAM_BOOL ? "bool" : "number");
    }
    TRR_TRY(check_value(NULL, d, p, v));
    /* the name points into the op's definition, which outlives any params */
    return trr_op_params_set(params, p->name, v);
}

trr_status trr_op_params_parse(trr_op op, const char *text, trr_op_params *out_params) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown op %d", (int)op);
    if (!text || !out_params) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "text or out_params is NULL");
    trr_op_params params;
    memset(&params, 0, sizeof params);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        TRR_TRY(parse_item(d, p, n, &params));
        if (!end) break;
        p = end + 1;
    }
    *out_params = params;
    return TRR_OK;
}
