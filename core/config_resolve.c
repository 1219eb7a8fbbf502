/* Completing and judging one config for one call: the backend's heuristic and the op table fill what a config
 * leaves at zero, the backend's supports and check_config say whether it runs. */
#include "tune.h"

#include "op_table.h"

#include <stdio.h>
#include <string.h>

static void fill_op_defaults(const trr_call *call, trr_config *c) {
    const trr_op_desc *desc = trr_op_desc_get(call->op);
    int *f = &c->block_m;
    const int *d = &desc->default_config.block_m;
    for (size_t i = 0; i < sizeof *c / sizeof(int); i++)
        if (f[i] == 0 && (desc->config_fields & (1u << i))) f[i] = d[i];
}

void trr_tune_complete_config(trr_context *ctx, const trr_call *call, const trr_config *listed,
                              trr_config *out_config) {
    trr_call c = *call;
    c.config = *listed;
    if (ctx->backend->choose_config) ctx->backend->choose_config(ctx, &c);
    fill_op_defaults(&c, &c.config);
    *out_config = c.config;
}

void trr_tune_default_config(trr_context *ctx, const trr_call *call, trr_config *out_config) {
    trr_config zero;
    memset(&zero, 0, sizeof zero);
    trr_tune_complete_config(ctx, call, &zero, out_config);
}

int trr_tune_config_runs(trr_context *ctx, const trr_call *call, const trr_config *config, char *why, size_t cap) {
    trr_call c = *call;
    c.config = *config;
    trr_status st = TRR_OK;
    if (ctx->backend->supports) st = ctx->backend->supports(ctx, &c);
    if (st == TRR_OK && ctx->backend->check_config) st = ctx->backend->check_config(ctx, &c);
    if (st == TRR_OK) return 1;
    if (why && cap) snprintf(why, cap, "%s", trr_last_error(ctx));
    return 0;
}

