/* `trireme run OP`: one op on one device with random inputs; prints the device chosen, the config and where it
 * came from, the check against the float64 reference, the device time and throughput (the bench's work
 * definition) and a checksum of the output, so two devices or two builds can be compared by eye. */
#include "cli.h"

#include "backend.h"
#include "bench.h"
#include "half.h"
#include "layout.h"
#include "op_table.h"
#include "tuner.h"
#include "warmup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The ops of the table whose shape rule is one of two (b may repeat a), comma separated. */
static void ops_of_shape(trr_op_shape a, trr_op_shape b, char *out, size_t cap) {
    size_t at = 0;
    out[0] = '\0';
    for (int o = 0; o < trr_op_desc_count() && at < cap; o++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)o);
        if (d->shape == a || d->shape == b) at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? ", " : "", d->name);
    }
}

/* Every op's named parameters as its definition declares them, one op a line of the help's second column:
 * "matmul: epilogue=none|relu|leaky_relu|gelu, alpha=F32 (default 0.01), ...". */
static void params_text(char *out, size_t cap) {
    size_t at = 0;
    out[0] = '\0';
    for (int o = 0; o < trr_op_desc_count() && at < cap; o++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)o);
        if (!d->n_params) continue;
        at += (size_t)snprintf(out + at, cap - at, "%s%s:", at ? "\n                      " : "", d->name);
        for (int i = 0; i < d->n_params && at < cap; i++) {
            const trr_param_info *p = &d->params[i];
            if (p->type == TRR_PARAM_ENUM) {
                at += (size_t)snprintf(out + at, cap - at, "%s %s=", i ? "," : "", p->name);
                for (const char *c = p->choices; *c && at < cap; c++) out[at++] = *c == ',' ? '|' : *c;
                if (at < cap) out[at] = '\0';
            } else {
                const char *type = p->type == TRR_PARAM_BOOL ? "0|1" : p->type == TRR_PARAM_INT ? "INT" : "F32";
                at += (size_t)snprintf(out + at, cap - at, "%s %s=%s (default %g)", i ? "," : "", p->name, type,
                                       p->default_value);
            }
        }
    }
}

static void print_help(void) {
    char ops[256], elementwise[128], planes[64], rows[96], matmul[64], norms[64], attention[32], params[1024];
    params_text(params, sizeof params);
    cli_op_names(ops, sizeof ops);
    ops_of_shape(TRR_SHAPE_ELEMENTWISE, TRR_SHAPE_ELEMENTWISE, elementwise, sizeof elementwise);
    ops_of_shape(TRR_SHAPE_PLANES, TRR_SHAPE_PLANES, planes, sizeof planes);
    ops_of_shape(TRR_SHAPE_ROWS, TRR_SHAPE_ROW_REDUCE, rows, sizeof rows);
    ops_of_shape(TRR_SHAPE_ROW_NORM, TRR_SHAPE_ROW_NORM, norms, sizeof norms);
    {
        const size_t at = strlen(rows);
        snprintf(rows + at, sizeof rows - at, ", %s", norms);
    }
    ops_of_shape(TRR_SHAPE_MATMUL, TRR_SHAPE_MATMUL, matmul, sizeof matmul);
    ops_of_shape(TRR_SHAPE_ATTENTION, TRR_SHAPE_ATTENTION, attention, sizeof attention);
    printf("usage: trireme run OP [options]\n\n"
           "OP: %s\n\n"
           "  --device D          cpu, cuda:0, opencl:1, vulkan:0, auto (default: TRIREME_DEVICE, else auto)\n"
           "  --dtype T           input dtype: f32 (default), f16, bf16, u8 (copy; rgb_to_grey is always u8),\n"
           "                      f8e4m3, f8e5m2; IN->OUT gives the output's too (cast: f32->f8e4m3), A,B->OUT\n"
           "                      the second input's apart (matmul: f8e5m2,f8e4m3->bf16 --trans-b)\n"
           "  --out-dtype T       output dtype where the op allows a choice (matmul f16|bf16->f32, rgb_to_grey u8|f32)\n"
           "  --shape S           N or RxC (%s), HxW (%s), MxN (%s), MxNxK (%s),\n"
           "                      B,H,S,D (%s); integers as 4096 or 2^12, joined by x or ','.\n"
           "                      Default: 2^20 elements, 1066x1600, 1024x1024, 512x512x512, 1,8,1024,64\n"
           "  --kv-heads H        attention: key/value heads (default: the query heads; H must divide them)\n"
           "  --seq-kv S          attention: keys (default: the queries' S)\n"
           "  --lse               attention: also write lse [B,H,S] (f32)\n"
           "  --bshd              attention: operands stored as [B,S,H,D] (torch's layout), passed as views\n"
           "  --m M --n N --k K   the same, one dimension at a time (--n alone: a vector of N elements); every\n"
           "                      dimension of the op is needed unless --shape gives them\n"
           "  --trans-a           matmul: A stored as [K,M]\n"
           "  --trans-b           matmul: B stored as [N,K]\n"
           "  --batch B           matmul: a batch of B products, operands [B,M,K], [B,K,N] -> [B,M,N]\n"
           "  --batch-stride-a 0  matmul with --batch: one A shared by every product (likewise -b for B);\n"
           "                      other batch strides are the packed ones\n"
           "  --param NAME=VALUE  one of the op's named parameters (repeatable, or comma-separated), as the\n"
           "                      op's definition declares them:\n"
           "                      %s\n"
           "  --epilogue E        matmul: --param epilogue=E\n"
           "  --alpha A           matmul: --param alpha=A\n"
           "  --seed S            input seed (default: a fresh one, printed)\n"
           "  --repeat R          timed calls after the checked call and a warm-up (1 s on a GPU, 0.05 s on a CPU\n"
           "                      device, TRIREME_WARMUP_MS when set) (default 1); the time printed is per call\n"
           "  --config CFG        the op's tile config and kernel family, named fields left out to the backend:\n"
           "                      block_m=128,block_n=128,threads=256,variant=coop_khr (trr_config_override);\n"
           "                      a field the op has no use for is ignored, with a warning\n"
           "  --no-check          skip the check of the output against the float64 reference\n\n"
           "Prints how the device was chosen, the config the call ran with and where it came from (--config, the\n"
           "tuning database or the backend's heuristic), the check against the float64 reference (sampled for\n"
           "large outputs, as the bench does; a failed check exits 1), the device time (trr_timer_start/stop) and\n"
           "throughput (GB/s, or TFLOPS for matmul, counted as `trireme bench` counts them), and the output's\n"
           "element sum and XXH64 of its bytes.\n", ops, elementwise, planes, rows, matmul, attention, params);
}

typedef struct run_args {
    trr_op op;
    const char *device;
    trr_dtype in, out;
    int mixed;     /* --dtype A,B->OUT: the second input is in2 */
    trr_dtype in2;
    int in_set, out_set;
    int64_t dims[4];
    int n_dims;        /* from --shape */
    int64_t kv_heads, seq_kv; /* attention's --kv-heads, --seq-kv; -1 when not given */
    int lse, bshd;            /* attention's --lse, --bshd */
    int64_t m, n, k;   /* from --m/--n/--k; -1 when not given */
    int trans_a, trans_b;
    int64_t batch;             /* --batch; 0 when not given (plain 2-D operands) */
    int64_t batch_stride[2];   /* --batch-stride-a/-b; -1 when not given, else 0 (shared) */
    trr_epilogue epilogue;
    float alpha;
    char params[512];          /* every --param, comma-joined: parsed against the op's definition */
    trr_op_params op_params;   /* the parsed --param values of an op other than matmul: the case's params */
    uint64_t seed;
    int seed_set;
    int64_t repeat;
    int config_set, config_op; /* config_op: the op --config named before ':', or -1 */
    trr_config config;
    int no_check;
} run_args;


/* --dtype IN, IN->OUT (cast f32->f8e4m3, matmul f8e4m3->bf16) or A,B->OUT (matmul f8e5m2,f8e4m3->f32): the input
 * dtype (the second input's apart after a comma) and, with an arrow, the output's. */
static int parse_dtypes(run_args *a, const char *text) {
    const char *arrow = strstr(text, "->");
    char in[64];
    const size_t n = arrow ? (size_t)(arrow - text) : strlen(text);
    if (n >= sizeof in) {
        fprintf(stderr, "trireme: --dtype wants IN, IN->OUT or A,B->OUT, not '%s'\n", text);
        return 0;
    }
    memcpy(in, text, n);
    in[n] = '\0';
    char *comma = strchr(in, ',');
    if (comma) {
        *comma = '\0';
        if (!cli_parse_dtype("dtype", comma + 1, &a->in2)) return 0;
        a->mixed = 1;
    }
    if (!cli_parse_dtype("dtype", in, &a->in)) return 0;
    a->in_set = 1;
    if (arrow) {
        if (!cli_parse_dtype("dtype", arrow + 2, &a->out)) return 0;
        a->out_set = 1;
    }
    return 1;
}

static int parse_epilogue(const char *text, trr_epilogue *out) {
    for (int e = 0; e < TRR_EPI_COUNT; e++) {
        const char *name = NULL;
        if (trr_epilogue_name((trr_epilogue)e, &name) == TRR_OK && name && !strcmp(name, text)) {
            *out = (trr_epilogue)e;
            return 1;
        }
    }
    return 0;
}

/* --param against the op's definition (trr_op_params_parse); the values land where the case takes them.
 * 0 with *out_exit set on a usage error. */
static int apply_params(run_args *a, const trr_op_desc *d, int *out_exit) {
    trr_op_params p;
    if (trr_op_params_parse(d->op, a->params, &p) != TRR_OK) {
        *out_exit = cli_usage_error("run", "--param: %s", trr_last_error(NULL));
        return 0;
    }
    if (d->shape != TRR_SHAPE_MATMUL) { /* the case carries them to trr_op_run and into the reference's call */
        a->op_params = p;
        return 1;
    }
    for (int i = 0; i < p.count; i++) {
        const char *name = p.values[i].name;
        const double v = p.values[i].value;
        if (!strcmp(name, "epilogue")) a->epilogue = (trr_epilogue)v;
        else if (!strcmp(name, "alpha")) a->alpha = (float)v;
        else if (!strcmp(name, "scale_a") || !strcmp(name, "scale_b")) /* the case passes them on */
            trr_op_params_set(&a->op_params, name, v);
        else {
            *out_exit = cli_usage_error("run", "--param %s: run does not pass this parameter yet", name);
            return 0;
        }
    }
    return 1;
}

static int parse_args(int argc, char **argv, run_args *a, int *out_exit) {
    *a = (run_args){.in = TRR_F32, .m = -1, .n = -1, .k = -1, .alpha = TRR_LEAKY_RELU_DEFAULT_ALPHA, .repeat = 1,
                    .batch_stride = {-1, -1}, .kv_heads = -1, .seq_kv = -1};
    const char *op_name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (cli_is_help(argv[i])) {
            print_help();
            *out_exit = CLI_EXIT_OK;
            return 0;
        }
#define OPT(name)                                                                                              \
    if ((r = cli_option_value(argc, argv, &i, name, &v)) < 0) goto usage;                                     \
    if (r > 0)
        OPT("device") { a->device = v; continue; }
        OPT("dtype") { if (!parse_dtypes(a, v)) goto usage; continue; }
        OPT("out-dtype") { if (!cli_parse_dtype("out-dtype", v, &a->out)) goto usage; a->out_set = 1; continue; }
        OPT("shape") { if (!cli_parse_dims("shape", v, 0, a->dims, 4, &a->n_dims)) goto usage; continue; }
        OPT("kv-heads") { if (!cli_parse_i64("kv-heads", v, 1, &a->kv_heads)) goto usage; continue; }
        OPT("seq-kv") { if (!cli_parse_i64("seq-kv", v, 0, &a->seq_kv)) goto usage; continue; }
        OPT("m") { if (!cli_parse_i64("m", v, 0, &a->m)) goto usage; continue; }
        OPT("n") { if (!cli_parse_i64("n", v, 0, &a->n)) goto usage; continue; }
        OPT("k") { if (!cli_parse_i64("k", v, 0, &a->k)) goto usage; continue; }
        OPT("batch") { if (!cli_parse_i64("batch", v, 1, &a->batch)) goto usage; continue; }
        OPT("batch-stride-a") { if (!cli_parse_i64("batch-stride-a", v, 0, &a->batch_stride[0])) goto usage; continue; }
        OPT("batch-stride-b") { if (!cli_parse_i64("batch-stride-b", v, 0, &a->batch_stride[1])) goto usage; continue; }
        OPT("epilogue") {
            if (!parse_epilogue(v, &a->epilogue)) {
                *out_exit = cli_usage_error("run", "--epilogue wants none, relu, leaky_relu or gelu, not '%s'", v);
                return 0;
            }
            continue;
        }
        OPT("alpha") { if (!cli_parse_float("alpha", v, &a->alpha)) goto usage; continue; }
        OPT("param") {
            const size_t at = strlen(a->params);
            if (at + strlen(v) + 2 > sizeof a->params) {
                *out_exit = cli_usage_error("run", "--param: too many parameters");
                return 0;
            }
            snprintf(a->params + at, sizeof a->params - at, "%s%s", at ? "," : "", v);
            continue;
        }
        OPT("seed") { if (!cli_parse_u64("seed", v, &a->seed)) goto usage; a->seed_set = 1; continue; }
        OPT("repeat") { if (!cli_parse_i64("repeat", v, 1, &a->repeat)) goto usage; continue; }
        OPT("config") {
            if (!cli_parse_config("run", v, &a->config_op, &a->config)) { *out_exit = CLI_EXIT_USAGE; return 0; }
            a->config_set = 1;
            continue;
        }
#undef OPT
        if (cli_flag(argv, i, "trans-a")) { a->trans_a = 1; continue; }
        if (cli_flag(argv, i, "trans-b")) { a->trans_b = 1; continue; }
        if (cli_flag(argv, i, "no-check")) { a->no_check = 1; continue; }
        if (cli_flag(argv, i, "lse")) { a->lse = 1; continue; }
        if (cli_flag(argv, i, "bshd")) { a->bshd = 1; continue; }
        if (argv[i][0] == '-') {
            *out_exit = cli_usage_error("run", "unknown option '%s'", argv[i]);
            return 0;
        }
        if (op_name) {
            *out_exit = cli_usage_error("run", "unexpected argument '%s' (the op is '%s')", argv[i], op_name);
            return 0;
        }
        op_name = argv[i];
    }
    if (!op_name) {
        trr_op none;
        trr_op_from_name("", &none); /* its error lists the ops */
        *out_exit = cli_usage_error("run", "which op? %s", strchr(trr_last_error(NULL), '('));
        return 0;
    }
    if (!cli_parse_op("run", "", op_name, &a->op)) goto usage;
    if (a->config_set && a->config_op >= 0 && a->config_op != (int)a->op) {
        *out_exit = cli_usage_error("run", "--config names another op than '%s'", op_name);
        return 0;
    }
    /* dtypes the user left out come from the op's signatures: its first, or the first for the given input */
    const trr_op_desc *d = trr_op_desc_get(a->op);
    if (a->params[0] && !apply_params(a, d, out_exit)) return 0;
    if (!a->in_set) a->in = d->signatures[0].in;
    if (!a->out_set) {
        a->out = a->in;
        for (int i = d->n_signatures - 1; i >= 0; i--)
            if (d->signatures[i].in == a->in) a->out = d->signatures[i].out;
    }
    if (!a->seed_set) a->seed = cli_default_seed();
    return 1;
usage:
    *out_exit = CLI_EXIT_USAGE;
    return 0;
}

/* attention's case: --shape B,H,S,D (default 1,8,1024,64), --kv-heads, --seq-kv, --lse, --bshd; causal and scale
 * are --param values. */
static int resolve_attention(const run_args *a, trr_case *c) {
    if (a->m >= 0 || a->n >= 0 || a->k >= 0 || a->batch || a->trans_a || a->trans_b || a->epilogue != TRR_EPI_NONE)
        return cli_usage_error("run", "attention takes --shape B,H,S,D (with --kv-heads, --seq-kv), not --m, --n, "
                               "--k, --batch, --trans-a/-b or --epilogue");
    c->attn.b = 1, c->attn.hq = 8, c->attn.sq = 1024, c->attn.d = 64;
    if (a->n_dims == 4) c->attn.b = a->dims[0], c->attn.hq = a->dims[1], c->attn.sq = a->dims[2], c->attn.d = a->dims[3];
    else if (a->n_dims) return cli_usage_error("run", "attention --shape wants B,H,S,D");
    c->attn.hkv = a->kv_heads >= 0 ? a->kv_heads : c->attn.hq;
    c->attn.skv = a->seq_kv >= 0 ? a->seq_kv : c->attn.sq;
    if (c->attn.hkv < 1 || c->attn.hq % c->attn.hkv != 0)
        return cli_usage_error("run", "--kv-heads %lld does not divide the %lld query heads", (long long)c->attn.hkv,
                               (long long)c->attn.hq);
    c->attn.lse = a->lse, c->attn.bshd = a->bshd;
    c->rows = c->attn.sq, c->cols = c->attn.d;
    return CLI_EXIT_OK;
}

/* The case to run: the shape from --shape/--m/--n/--k after each shape rule's defaults. */
static int resolve_case(const run_args *a, trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(a->op);
    *c = (trr_case){.op = a->op, .in_dtype = a->in, .out_dtype = a->out, .mixed = a->mixed, .in2_dtype = a->in2,
                    .layout = TRR_LAYOUT_PACKED,
                    .trans_a = a->trans_a, .trans_b = a->trans_b, .epilogue = a->epilogue, .alpha = a->alpha,
                    .params = a->op_params};
    if (d->shape == TRR_SHAPE_MATMUL) {
        c->m = c->n = c->k = 512; /* the default when no dimension is given (help says so) */
        if (a->n_dims == 3) c->m = a->dims[0], c->n = a->dims[1], c->k = a->dims[2];
        else if (a->n_dims) return cli_usage_error("run", "matmul --shape wants MxNxK");
        const int64_t given[3] = {a->m, a->n, a->k};
        /* some dimensions without the others: a K (or M, N) left to a default would run another product */
        if (!a->n_dims && (a->m >= 0 || a->n >= 0 || a->k >= 0))
            for (int i = 0; i < 3; i++)
                if (given[i] < 0)
                    return cli_usage_error("run", "matmul needs every dimension: --%c is missing (give --m, --n "
                                           "and --k, or --shape MxNxK)", "mnk"[i]);
        if (a->m >= 0) c->m = a->m;
        if (a->n >= 0) c->n = a->n;
        if (a->k >= 0) c->k = a->k;
        c->batch = a->batch;
        for (int i = 0; i < 2; i++) {
            if (a->batch_stride[i] < 0) continue;
            if (!a->batch) return cli_usage_error("run", "--batch-stride-%c needs --batch", "ab"[i]);
            if (a->batch_stride[i] != 0)
                return cli_usage_error("run", "--batch-stride-%c takes 0 (one matrix shared by the batch); other "
                                       "strides are the packed layout's", "ab"[i]);
        }
        c->bcast_a = a->batch_stride[0] == 0;
        c->bcast_b = a->batch_stride[1] == 0;
        return CLI_EXIT_OK;
    }
    if (d->shape == TRR_SHAPE_ATTENTION) return resolve_attention(a, c);
    if (a->kv_heads >= 0 || a->seq_kv >= 0 || a->lse || a->bshd)
        return cli_usage_error("run", "--kv-heads, --seq-kv, --lse and --bshd are for attention only");
    if (a->n_dims == 4) return cli_usage_error("run", "--shape B,H,S,D is attention's; %s takes fewer dimensions", d->name);
    if (a->k >= 0) return cli_usage_error("run", "--k is for matmul only");
    if (a->batch || a->batch_stride[0] >= 0 || a->batch_stride[1] >= 0)
        return cli_usage_error("run", "--batch and --batch-stride-a/-b are for matmul only");
    if (a->trans_a || a->trans_b || a->epilogue != TRR_EPI_NONE)
        return cli_usage_error("run", "--trans-a, --trans-b and --epilogue are for matmul only");
    if (d->shape == TRR_SHAPE_ELEMENTWISE) {
        c->rows = 1, c->cols = 1 << 20;
        if (a->n_dims == 1) c->cols = a->dims[0];
        else if (a->n_dims == 2) c->rows = a->dims[0], c->cols = a->dims[1];
        else if (a->n_dims) return cli_usage_error("run", "--shape wants N or RxC for %s", d->name);
    } else {
        if (d->shape == TRR_SHAPE_PLANES) c->rows = 1066, c->cols = 1600;
        else c->rows = 1024, c->cols = 1024;
        if (a->n_dims == 2) c->rows = a->dims[0], c->cols = a->dims[1];
        else if (a->n_dims)
            return cli_usage_error("run", "--shape wants %s for %s", d->shape == TRR_SHAPE_PLANES ? "HxW" : "MxN",
                                   d->name);
    }
    /* --m alone would run the default's columns; for ops of two dimensions so would --n alone (element-wise ops
     * take --n alone as a vector of N) */
    if (!a->n_dims && a->m >= 0 && a->n < 0)
        return cli_usage_error("run", "%s needs --n with --m (or --shape %s)", d->name,
                               d->shape == TRR_SHAPE_PLANES ? "HxW" : d->shape == TRR_SHAPE_ELEMENTWISE ? "RxC" : "MxN");
    if (!a->n_dims && a->n >= 0 && a->m < 0 && d->shape != TRR_SHAPE_ELEMENTWISE)
        return cli_usage_error("run", "%s needs --m with --n (or --shape %s)", d->name,
                               d->shape == TRR_SHAPE_PLANES ? "HxW" : "MxN");
    if (a->m >= 0) c->rows = a->m;
    if (a->n >= 0) c->cols = a->n;
    return CLI_EXIT_OK;
}

/* ---- the run ---- */

typedef struct run_state {
    trr_context *ctx;
    trr_bench_setup setup; /* the bench's operands: packed, random inputs kept on the host for the check */
    int have_setup;
} run_state;

static trr_status setup(run_state *s, const trr_case *c, uint64_t seed) {
    trr_case_views views;
    trr_status st = trr_case_views_make(c, &views);
    if (st != TRR_OK) { /* the detail after the status name the thread slot's text starts with */
        const char *why = strstr(trr_last_error(NULL), ": ");
        return trr_error(s->ctx, st, "%s", why ? why + 2 : trr_last_error(NULL));
    }
    /* a mistyped size is refused before it takes host memory */
    TRR_TRY(trr_case_views_check_size(s->ctx, &views));
    TRR_TRY(trr_bench_setup_create(s->ctx, c, seed, &s->setup));
    s->have_setup = 1;
    return TRR_OK;
}

static trr_status call_op(run_state *s) { return trr_bench_setup_call(s->ctx, &s->setup); }
static trr_status warm_call(trr_context *ctx, void *s) {
    (void)ctx;
    return call_op(s);
}

/* The sum of the output's values (as doubles) and the XXH64 of its bytes. */
static trr_status checksum(run_state *s, double *out_sum, uint64_t *out_hash) {
    const trr_bench_operand *z = &s->setup.op[TRR_OUT];
    uint8_t *h = malloc(z->bytes + 1);
    if (!h) return trr_error(s->ctx, TRR_ERR_OUT_OF_MEMORY, "%zu bytes of host memory for the output", z->bytes);
    trr_status st = trr_buffer_read(s->ctx, z->buf, 0, h, z->bytes);
    double sum = 0;
    for (int64_t i = 0; st == TRR_OK && i < z->count; i++) sum += trr_dtype_load_f32(h, z->dtype, i);
    *out_sum = sum;
    *out_hash = XXH64(h, z->bytes, 0);
    free(h);
    return st;
}

static void teardown(run_state *s) {
    if (s->have_setup) trr_bench_setup_destroy(&s->setup);
    if (s->ctx) trr_context_destroy(s->ctx);
}

static int fail(run_state *s, const char *what, trr_status st) {
    fprintf(stderr, "trireme run: %s: %s\n", what, trr_last_error(s->ctx));
    teardown(s);
    return cli_exit_for_status(st);
}

/* "the tuning database (bucket ... of FILE)", "--config", "the backend's heuristic" */
static void config_source(const trr_context *ctx, char *out, size_t cap) {
    const trr_config_origin *o = &ctx->last_config_origin;
    switch (o->source) {
    case TRR_CONFIG_FROM_OVERRIDE:
        snprintf(out, cap, "--config; the fields it leaves out: the backend's heuristic");
        break;
    case TRR_CONFIG_FROM_TUNING_DB: snprintf(out, cap, "the tuning database: %s", o->where); break;
    default: snprintf(out, cap, "the backend's heuristic (no --config, no tuning database entry)"); break;
    }
}

int cmd_run(int argc, char **argv) {
    run_args a;
    int code = CLI_EXIT_OK;
    if (!parse_args(argc, argv, &a, &code)) return code;
    run_state s = {0};
    trr_case tcase;
    if ((code = resolve_case(&a, &tcase)) != CLI_EXIT_OK) return code;

    if ((code = cli_open_context("run", a.device, &s.ctx)) != CLI_EXIT_OK) return code;
    trr_device_info info;
    const char *selection = "";
    trr_status st = trr_context_device(s.ctx, &info);
    if (st == TRR_OK) st = trr_context_selection(s.ctx, &selection);
    if (st != TRR_OK) return fail(&s, "device", st);
    printf("device: %s (%s)\nselection: %s\n", info.spec, info.name, selection);
    if (a.config_set && (st = trr_config_override(s.ctx, a.op, &a.config)) != TRR_OK) return fail(&s, "--config", st);

    if ((st = setup(&s, &tcase, a.seed)) != TRR_OK) return fail(&s, "setting up buffers", st);
    char what[160];
    trr_case_describe(&tcase, what, sizeof what);
    printf("op: %s%s\nseed: %llu\n", what, a.n_dims || a.m >= 0 || a.n >= 0 || a.k >= 0 ? "" : " (the default shape)",
           (unsigned long long)a.seed);
    fflush(stdout);

    /* the checked call is also the warm-up: one-time costs (kernel compilation, first-touch) stay out of the time */
    trr_bench_check check = {0};
    int check_failed = 0;
    if (!a.no_check) {
        st = trr_bench_check_case(s.ctx, &s.setup, a.seed + 1, &check);
        if (st == TRR_ERR_MISMATCH) check_failed = 1;
        else if (st != TRR_OK) return fail(&s, "checked run", st);
    } else if ((st = call_op(&s)) != TRR_OK) {
        return fail(&s, "op", st);
    }
    trr_config ran;
    trr_config_last(s.ctx, &ran);
    char cfg[TRR_CONFIG_TEXT_MAX], source[600];
    trr_config_format(&ran, cfg, sizeof cfg);
    config_source(s.ctx, source, sizeof source);
    printf("config: %s (from %s)\n", cfg, source);
    if (a.config_set) cli_warn_config_fields("run", s.ctx, a.op, &a.config, &ran);
    if (a.no_check)
        printf("check: skipped (--no-check)\n");
    else if (check_failed)
        printf("check: FAILED against the float64 reference: %s\n", check.message);
    else
        printf("check: passed against the float64 reference (%lld of %lld elements compared, worst %s %.3g of "
               "bound %.3g)\n", (long long)check.checked, (long long)check.total, check.metric ? check.metric : "",
               check.error, check.bound);

    /* The device busy before the timed calls, as the bench and the tuner keep it (warmup.h): a GPU left idle while
     * the host filled the inputs and checked the result runs its next calls far below its clock. */
    const double warm_s = trr_warmup_seconds(s.ctx);
    if ((st = trr_warmup_run(s.ctx, warm_call, &s, 0, warm_s, 1)) != TRR_OK) return fail(&s, "warm-up", st);
    double ms = 0;
    if ((st = trr_timer_start(s.ctx)) != TRR_OK) return fail(&s, "timer", st);
    for (int64_t r = 0; r < a.repeat && st == TRR_OK; r++) st = call_op(&s);
    if (st != TRR_OK) return fail(&s, "op", st);
    if ((st = trr_timer_stop(s.ctx, &ms)) != TRR_OK) return fail(&s, "timer", st);
    const double per_call = ms / (double)a.repeat;

    double sum = 0;
    uint64_t hash = 0;
    if ((st = checksum(&s, &sum, &hash)) != TRR_OK) return fail(&s, "reading the output", st);
    printf("device time: %.4g ms per call (%lld timed call%s after the %s call and %.3g s of warm-up)\n", per_call,
           (long long)a.repeat, a.repeat == 1 ? "" : "s", a.no_check ? "first" : "checked", warm_s);
    const double figure = trr_bench_case_figure(&tcase, per_call);
    if (trr_bench_case_compute_bound(&tcase))
        printf("throughput: %.4g TFLOPS (%.4g FLOP per call, as `trireme bench` counts it)\n", figure,
               trr_bench_case_work(&tcase));
    else
        printf("throughput: %.4g GB/s (%.4g bytes read and written per call, as `trireme bench` counts them)\n",
               figure, trr_bench_case_work(&tcase));
    printf("output: %lld elements, sum %.9g, xxh64 %016llx\n", (long long)s.setup.op[TRR_OUT].count, sum,
           (unsigned long long)hash);
    teardown(&s);
    if (check_failed) {
        fprintf(stderr, "trireme run: the output failed its check against the float64 reference: %s\n",
                check.message);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
