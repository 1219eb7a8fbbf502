/* Resolving a call's config, once per call (validate.h: trr_call_resolve_config), and the pieces the tuner
 * shares with it (tune.h): the backend's heuristic and the op table fill what a config leaves at zero, the
 * backend's supports and check_config say whether it runs. */
#include "tune.h"

#include "config_fields.h"
#include "op_table.h"
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trr_tune_complete_config(trr_context *ctx, const trr_call *call, const trr_config *listed,
                              trr_config *out_config) {
    trr_call c = *call;
    c.config = *listed;
    if (ctx->backend->choose_config) ctx->backend->choose_config(ctx, &c);
    const trr_op_desc *desc = trr_op_desc_get(call->op);
    trr_config_fill(&c.config, &desc->default_config, desc->config_fields);
    *out_config = c.config;
}

unsigned trr_config_fields_used(const trr_context *ctx, trr_op op) {
    const trr_op_desc *desc = trr_op_desc_get(op);
    if (!desc) return 0;
    const trr_backend *be = ctx ? ctx->backend : NULL;
    return desc->config_fields & (be && be->config_fields_used ? be->config_fields_used(op) : ~0u);
}

void trr_tune_default_config(trr_context *ctx, const trr_call *call, trr_config *out_config) {
    trr_config zero;
    memset(&zero, 0, sizeof zero);
    trr_tune_complete_config(ctx, call, &zero, out_config);
}

/* Whether the call's backend runs the call as configured: every field in range, ops of one kernel family take no
 * other variant, then the backend's supports and check_config. Records the reason on ctx. */
static trr_status judge(trr_context *ctx, const trr_call *call) {
    /* a heuristic's product of overridden fields past the largest field (trr_config_product): an override or a
     * database entry was range-checked where it was set, so a field out of range here is a config the backend
     * cannot run rather than a bad argument */
    if (trr_config_check_range(ctx, &call->config) != TRR_OK) {
        char why[160];
        snprintf(why, sizeof why, "%s", trr_last_error(ctx));
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s (a field the backend fills from the ones given)", why);
    }
    const trr_op_desc *desc = trr_op_desc_get(call->op);
    int v = call->config.variant;
    if (!(desc->config_fields & TRR_CFG_VARIANT) && v != TRR_VARIANT_AUTO && v != TRR_VARIANT_SIMT) {
        const char *name = "?";
        trr_variant_name((trr_variant)v, &name);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s has one kernel family on every backend; variant %s is not one",
                         desc->name, name);
    }
    const trr_backend *be = ctx->backend;
    if (be->supports) TRR_TRY(be->supports(ctx, call));
    if (be->check_config) TRR_TRY(be->check_config(ctx, call));
    return TRR_OK;
}

int trr_tune_config_runs(trr_context *ctx, const trr_call *call, const trr_config *config, char *why, size_t cap) {
    trr_call c = *call;
    c.config = *config;
    if (judge(ctx, &c) == TRR_OK) return 1;
    if (why && cap) snprintf(why, cap, "%s", trr_last_error(ctx));
    return 0;
}

/* Only the variant is set: the caller picked a kernel family and left its tiles to the database and heuristic. */
static int names_only_variant(const trr_config *c) {
    if (!c->variant) return 0;
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++)
        if (i != TRR_CONFIG_FIELD_VARIANT && trr_config_get(c, i)) return 0;
    return 1;
}

/* A database entry the backend rejects must not leave its reason as the context's last error: the call goes on
 * with the heuristic and succeeds. The saved text is usually short, so a hit costs no allocation. */
typedef struct saved_error {
    trr_status status;
    size_t len;
    char small[512];
    char *text;
} saved_error;

static void save_error(const trr_context *ctx, saved_error *s) {
    s->status = ctx->last_status;
    s->len = strlen(ctx->last_error);
    s->text = s->len < sizeof s->small ? s->small : malloc(s->len + 1);
    if (s->text) memcpy(s->text, ctx->last_error, s->len + 1);
}

static void restore_error(trr_context *ctx, saved_error *s) {
    ctx->last_status = s->status;
    if (s->text) memcpy(ctx->last_error, s->text, s->len + 1);
    else ctx->last_error[0] = '\0';
    if (s->text != s->small) free(s->text);
}

trr_status trr_call_resolve_config(trr_context *ctx, trr_call *call, trr_config_origin *out_origin) {
    trr_config_origin ignored;
    if (!out_origin) out_origin = &ignored;
    const trr_op op = call->op;
    memset(&call->config, 0, sizeof call->config);
    const int overridden = ctx->has_override[op];
    if (overridden) call->config = ctx->override[op];
    out_origin->source = overridden ? TRR_CONFIG_FROM_OVERRIDE : TRR_CONFIG_FROM_HEURISTIC;
    out_origin->where[0] = '\0';
    /* precedence: the caller's override, else the tuning database (also when the override names nothing but a
     * variant: then an entry of that variant), then the backend's heuristic, then the op table; each only
     * fills what the ones before left at zero */
    if (!overridden || names_only_variant(&call->config)) {
        trr_config tuned;
        char where[512];
        if (trr_tune_lookup(ctx, call, overridden ? call->config.variant : 0, &tuned, where, sizeof where)) {
            trr_call c = *call;
            trr_tune_complete_config(ctx, call, &tuned, &c.config);
            saved_error saved;
            save_error(ctx, &saved);
            if (judge(ctx, &c) == TRR_OK) {
                if (saved.text != saved.small) free(saved.text);
                call->config = c.config;
                out_origin->source = TRR_CONFIG_FROM_TUNING_DB;
                snprintf(out_origin->where, sizeof out_origin->where, "%s", where);
                return TRR_OK;
            }
            char why[512];
            snprintf(why, sizeof why, "%s", trr_last_error(ctx));
            restore_error(ctx, &saved);
            trr_tune_rejected(where, why);
        }
    }
    trr_tune_complete_config(ctx, call, &call->config, &call->config);
    return judge(ctx, call);
}
