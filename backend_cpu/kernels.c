/*
 * The CPU backend's ops, by shape rule: each rule's code, which kernels it has (C functions named by the stem and
 * entry of an op's definition), its config heuristic and limits, and the config fields its kernels read. An op
 * reaches its kernel through its definition (shape rule, stem, name); whether the backend runs it is decided
 * here, in trr_cpu_supports.
 */
#include "cpu.h"

#include "kernel_find.h"
#include "user_op.h"

#include <stdio.h>
#include <string.h>

/* The variant is read by trr_cpu_check_config alone (the CPU has one kernel family, simt). */
#define STREAM_FIELDS (TRR_CFG_BLOCK_N | TRR_CFG_VARIANT)
#define MATMUL_FIELDS                                                                                           \
    (TRR_CFG_BLOCK_M | TRR_CFG_BLOCK_N | TRR_CFG_BLOCK_K | TRR_CFG_GROUP_M | TRR_CFG_SPLIT_K | TRR_CFG_VARIANT)

/* Element-wise ops and row norms take elements per task from block_n (16384: large enough that waking a thread
 * costs little against it); the rules whose kernels split rows by themselves leave it unread. The other fields
 * mean nothing on a CPU but are filled so the recorded config says what ran. */
static void choose_stream(trr_call *call) {
    trr_config *c = &call->config;
    if (!c->block_n) c->block_n = 16384;
    if (!c->threads) c->threads = 1;
    if (!c->vector_width) c->vector_width = 1;
}

static trr_status check_stream(trr_context *ctx, const trr_call *call) {
    if (call->config.block_n < 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu: block_n must be positive, got %d", call->config.block_n);
    return TRR_OK;
}

/* A rule whose code is one kernel: its stem and entry. */
typedef struct one_kernel {
    const char *stem, *entry;
} one_kernel;

typedef struct cpu_rule {
    trr_op_shape shape;
    /* the rule's kernels: a lookup by definition, or the one kernel its code is */
    int (*provides)(const trr_op_desc *d, char *why, size_t cap);
    one_kernel only;
    trr_status (*run)(trr_context *ctx, const trr_call *call);
    void (*choose)(trr_call *call);
    trr_status (*check)(trr_context *ctx, const trr_call *call);
    unsigned fields;  /* TRR_CFG_* its kernels read */
    int records_simt; /* the rule has kernel families on other backends: the config records simt, what ran here */
} cpu_rule;

static const cpu_rule rules[] = {
    {TRR_SHAPE_ELEMENTWISE, trr_cpu_elementwise_provides, {NULL, NULL}, trr_cpu_elementwise, choose_stream,
     check_stream, STREAM_FIELDS, 0},
    {TRR_SHAPE_PLANES, NULL, {"rgb_to_grey", "rgb_to_grey"}, trr_cpu_rgb_to_grey, choose_stream, check_stream,
     TRR_CFG_VARIANT, 0},
    {TRR_SHAPE_ROWS, NULL, {"softmax", "softmax"}, trr_cpu_softmax, choose_stream, check_stream, TRR_CFG_VARIANT, 1},
    {TRR_SHAPE_ROW_REDUCE, NULL, {"row_sum", "row_sum"}, trr_cpu_row_sum, choose_stream, check_stream,
     TRR_CFG_VARIANT, 0},
    {TRR_SHAPE_MATMUL, NULL, {"matmul", "matmul"}, trr_cpu_matmul, trr_cpu_matmul_choose_config,
     trr_cpu_matmul_check_config, MATMUL_FIELDS, 1},
    {TRR_SHAPE_ROW_NORM, trr_cpu_norm_provides, {NULL, NULL}, trr_cpu_row_norm, choose_stream, check_stream,
     TRR_CFG_VARIANT, 0},
    {TRR_SHAPE_ATTENTION, NULL, {"attention", "attention"}, trr_cpu_attention, trr_cpu_attention_choose_config,
     trr_cpu_attention_check_config, TRR_CFG_BLOCK_M | TRR_CFG_BLOCK_N | TRR_CFG_SPLIT_K | TRR_CFG_VARIANT, 1},
};

/* user ops (core/user_op.h): the definition's C function; its tile parameters are the definition's fields */
static int user_provides(const trr_op_desc *d, char *why, size_t cap) {
    if (d->user->def.cpu || d->user->row_cpu) return 1;
    snprintf(why, cap, "its definition gives no C function");
    return 0;
}
static void choose_none(trr_call *call) { (void)call; }
static trr_status check_none(trr_context *ctx, const trr_call *call) { return (void)ctx, (void)call, TRR_OK; }
static const cpu_rule user_rule = {TRR_SHAPE_ELEMENTWISE, user_provides, {NULL, NULL}, trr_cpu_user, choose_none,
                                   check_none, 0, 0};

static const cpu_rule *rule_for(const trr_op_desc *d) {
    if (!d) return NULL;
    if (d->user) return &user_rule;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].shape == d->shape) return &rules[i];
    return NULL;
}

/* The rule that runs d, when it has d's kernel; else NULL with the reason. */
static const cpu_rule *rule_running(const trr_op_desc *d, char *why, size_t cap) {
    const cpu_rule *r = rule_for(d);
    if (!r) {
        snprintf(why, cap, "the CPU backend has no path for its shape rule (%d)", d ? (int)d->shape : -1);
        return NULL;
    }
    if (r->provides) return r->provides(d, why, cap) ? r : NULL;
    if (d->kernel && strcmp(d->kernel, r->only.stem) == 0 && strcmp(d->name, r->only.entry) == 0) return r;
    snprintf(why, cap, "its shape rule's only kernel here is %s/%s, not %s/%s", r->only.stem, r->only.entry,
             d->kernel ? d->kernel : "-", d->name);
    return NULL;
}

int trr_cpu_kernel_named(const trr_op_desc *d, const char *stem, const char *entry) {
    return d->kernel && strcmp(d->kernel, stem) == 0 && strcmp(d->name, entry) == 0;
}

/* Whether the rule of each op's shape has its kernel, found once per definition. */
static trr_kernel_memo provided[TRR_OP_LIMIT];

trr_status trr_cpu_supports(trr_context *ctx, const trr_call *call) {
    const trr_op_desc *d = trr_op_desc_get(call->op);
    if (d && trr_kernel_memo_get(&provided[call->op], d) == 1) return TRR_OK;
    char why[256];
    if (!rule_running(d, why, sizeof why)) return trr_kernel_unsupported(ctx, "cpu", d, why);
    trr_kernel_memo_put(&provided[call->op], d, 1);
    return TRR_OK; /* every dtype of the op's signatures, bf16 included */
}

void trr_cpu_choose_config(trr_context *ctx, trr_call *call) {
    (void)ctx;
    const cpu_rule *r = rule_for(trr_op_desc_get(call->op));
    if (!r) return; /* trr_cpu_supports says why */
    if (r->records_simt && !call->config.variant) call->config.variant = TRR_VARIANT_SIMT;
    r->choose(call);
}

trr_status trr_cpu_check_config(trr_context *ctx, const trr_call *call) {
    if (call->config.variant != TRR_VARIANT_AUTO && call->config.variant != TRR_VARIANT_SIMT) {
        const char *name = "?";
        trr_variant_name((trr_variant)call->config.variant, &name);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "cpu: variant %s is not a kernel of the CPU backend (only simt)",
                         name);
    }
    TRR_TRY(trr_cpu_supports(ctx, call));
    return rule_for(trr_op_desc_get(call->op))->check(ctx, call);
}

unsigned trr_cpu_config_fields_used(trr_op op) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (d && d->user) return d->config_fields;
    const cpu_rule *r = rule_for(d);
    return r ? r->fields : TRR_CFG_VARIANT;
}

trr_status trr_cpu_run(trr_context *ctx, const trr_call *call) {
    TRR_TRY(trr_cpu_supports(ctx, call));
    return rule_for(trr_op_desc_get(call->op))->run(ctx, call);
}
