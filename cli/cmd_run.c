/* `trireme run OP`: one op on one device with random inputs; prints the device chosen, the device time and a
 * checksum of the output, so two devices or two builds can be compared by eye. */
#include "cli.h"

#include "backend.h"
#include "half.h"
#include "layout.h"
#include "op_table.h"
#include "random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void print_help(void) {
    printf("usage: trireme run OP [options]\n\n"
           "OP: copy, add, gelu, silu, rgb_to_grey, softmax, row_sum, matmul\n\n"
           "  --device D          cpu, cuda:0, opencl:1, vulkan:0, auto (default: TRIREME_DEVICE, else auto)\n"
           "  --dtype T           input dtype: f32 (default), f16, bf16, u8 (copy; rgb_to_grey is always u8)\n"
           "  --out-dtype T       output dtype where the op allows a choice (matmul f16|bf16->f32, rgb_to_grey u8|f32)\n"
           "  --shape S           N or RxC (copy, add, gelu, silu), HxW (rgb_to_grey), MxN (softmax, row_sum),\n"
           "                      MxNxK (matmul)\n"
           "  --m M --n N --k K   the same, one dimension at a time (--n alone: a vector of N elements)\n"
           "  --trans-a           matmul: A stored as [K,M]\n"
           "  --trans-b           matmul: B stored as [N,K]\n"
           "  --batch B           matmul: a batch of B products, operands [B,M,K], [B,K,N] -> [B,M,N]\n"
           "  --batch-stride-a 0  matmul with --batch: one A shared by every product (likewise -b for B);\n"
           "                      other batch strides are the packed ones\n"
           "  --epilogue E        matmul: none (default), relu, leaky_relu, gelu\n"
           "  --alpha A           leaky_relu slope (default 0.01)\n"
           "  --seed S            input seed (default: a fresh one, printed)\n"
           "  --repeat R          timed calls after one warm-up call (default 1); the time printed is per call\n"
           "  --config CFG        the op's tile config and kernel family, named fields left out to the backend:\n"
           "                      block_m=128,block_n=128,threads=256,variant=coop_khr (trr_config_override)\n\n"
           "Prints how the device was chosen, the device time (trr_timer_start/stop) and the output's element\n"
           "sum and XXH64 of its bytes.\n");
}

typedef struct run_args {
    trr_op op;
    const char *device;
    trr_dtype in, out;
    int in_set, out_set;
    int64_t dims[3];
    int n_dims;        /* from --shape */
    int64_t m, n, k;   /* from --m/--n/--k; -1 when not given */
    int trans_a, trans_b;
    int64_t batch;             /* --batch; 0 when not given (plain 2-D operands) */
    int64_t batch_stride[2];   /* --batch-stride-a/-b; -1 when not given, else 0 (shared) */
    trr_epilogue epilogue;
    float alpha;
    uint64_t seed;
    int seed_set;
    int64_t repeat;
    int config_set, config_op; /* config_op: the op --config named before ':', or -1 */
    trr_config config;
} run_args;


static int parse_shape(const char *text, run_args *a) {
    const char *p = text;
    a->n_dims = 0;
    while (*p) {
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || a->n_dims == 3) return 0;
        a->dims[a->n_dims++] = v;
        if (*end == 'x' || *end == 'X') end++;
        else if (*end) return 0;
        p = end;
    }
    return a->n_dims > 0;
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

static int parse_args(int argc, char **argv, run_args *a, int *out_exit) {
    *a = (run_args){.in = TRR_F32, .m = -1, .n = -1, .k = -1, .alpha = TRR_LEAKY_RELU_DEFAULT_ALPHA, .repeat = 1,
                    .batch_stride = {-1, -1}};
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
        OPT("dtype") { if (!cli_parse_dtype("dtype", v, &a->in)) goto usage; a->in_set = 1; continue; }
        OPT("out-dtype") { if (!cli_parse_dtype("out-dtype", v, &a->out)) goto usage; a->out_set = 1; continue; }
        OPT("shape") {
            if (!parse_shape(v, a)) {
                *out_exit = cli_usage_error("run", "--shape wants N, RxC or MxNxK, not '%s'", v);
                return 0;
            }
            continue;
        }
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
    if (trr_op_from_name(op_name, &a->op) != TRR_OK) {
        *out_exit = cli_usage_error("run", "%s", trr_last_error(NULL));
        return 0;
    }
    if (a->config_set && a->config_op >= 0 && a->config_op != (int)a->op) {
        *out_exit = cli_usage_error("run", "--config names another op than '%s'", op_name);
        return 0;
    }
    /* dtypes the user left out come from the op's signatures: its first, or the first for the given input */
    const trr_op_desc *d = trr_op_desc_get(a->op);
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

/* The case to run: the shape from --shape/--m/--n/--k after each shape rule's defaults. */
static int resolve_case(const run_args *a, trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(a->op);
    *c = (trr_case){.op = a->op, .in_dtype = a->in, .out_dtype = a->out, .layout = TRR_LAYOUT_PACKED,
                    .trans_a = a->trans_a, .trans_b = a->trans_b, .epilogue = a->epilogue, .alpha = a->alpha};
    if (d->shape == TRR_SHAPE_MATMUL) {
        c->m = c->n = c->k = 512;
        if (a->n_dims == 3) c->m = a->dims[0], c->n = a->dims[1], c->k = a->dims[2];
        else if (a->n_dims) return cli_usage_error("run", "matmul --shape wants MxNxK");
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
    if (a->m >= 0) c->rows = a->m;
    if (a->n >= 0) c->cols = a->n;
    return CLI_EXIT_OK;
}

/* ---- buffers ---- */

/* Kernels index a view with 32-bit integers, so the runtime rejects any view of 2^31 elements or more: saying so
 * before allocating keeps a mistyped size from taking host memory first. */
#define VIEW_LIMIT ((int64_t)1 << 31)

static int view_elements(const trr_stored_view *v, int64_t *out) {
    int64_t n;
    if (__builtin_mul_overflow(v->planes, v->rows, &n) || __builtin_mul_overflow(n, v->cols, &n)) return 0;
    *out = n;
    return n < VIEW_LIMIT;
}

typedef struct run_state {
    trr_context *ctx;
    trr_case tcase;
    int n_inputs;
    trr_buffer *buf[3];
    trr_tensor t[3];
    size_t out_elems, out_bytes;
} run_state;

/* A buffer of n random elements (harness/random.h) written to the device. */
static trr_status input_buffer(run_state *s, trr_dtype dt, size_t n, uint64_t *rng, trr_buffer **out) {
    size_t esz = 0;
    TRR_TRY(trr_dtype_size(dt, &esz));
    uint8_t *h = malloc(n * esz + 1);
    if (!h) return trr_error(s->ctx, TRR_ERR_OUT_OF_MEMORY, "%zu bytes of host memory for an input", n * esz);
    trr_rng_fill(rng, s->tcase.op, dt, h, (int64_t)n);
    trr_status st = trr_buffer_create(s->ctx, n * esz + 1, out);
    if (st == TRR_OK) st = trr_buffer_write(s->ctx, *out, 0, h, n * esz);
    free(h);
    return st;
}

static trr_status setup(run_state *s, uint64_t seed) {
    trr_case_views views;
    trr_status st = trr_case_views_make(&s->tcase, &views);
    if (st != TRR_OK) { /* the detail after the status name the thread slot's text starts with */
        const char *why = strstr(trr_last_error(NULL), ": ");
        return trr_error(s->ctx, st, "%s", why ? why + 2 : trr_last_error(NULL));
    }
    s->n_inputs = views.n_inputs;
    for (int i = 0; i < 3; i++) {
        if (i == 1 && s->n_inputs == 1) continue;
        int64_t n = 0;
        if (!view_elements(&views.v[i], &n))
            return trr_error(s->ctx, TRR_ERR_OVERFLOW,
                             "operand %d spans %lld x %lld x %lld elements: 2^31 or more, over the runtime's index limit",
                             i, (long long)views.v[i].planes, (long long)views.v[i].rows, (long long)views.v[i].cols);
    }
    uint64_t rng = seed;
    for (int i = 0; i < 3; i++) {
        if (i == 1 && s->n_inputs == 1) continue;
        const trr_stored_view *v = &views.v[i];
        const size_t n = (size_t)trr_stored_extent(v);
        if (i != TRR_OUT) {
            TRR_TRY(input_buffer(s, v->dtype, n, &rng, &s->buf[i]));
        } else {
            size_t esz = 0;
            TRR_TRY(trr_dtype_size(v->dtype, &esz));
            s->out_elems = n;
            s->out_bytes = n * esz;
            TRR_TRY(trr_buffer_create(s->ctx, s->out_bytes + 1, &s->buf[i]));
        }
        TRR_TRY(trr_stored_tensor(v, s->buf[i], &s->t[i]));
    }
    return TRR_OK;
}

static trr_status call_op(run_state *s) { return trr_case_call(s->ctx, &s->tcase, s->t, 0); }

/* The sum of the output's values (as doubles) and the XXH64 of its bytes. */
static trr_status checksum(run_state *s, trr_dtype dt, double *out_sum, uint64_t *out_hash) {
    uint8_t *h = malloc(s->out_bytes + 1);
    if (!h) return trr_error(s->ctx, TRR_ERR_OUT_OF_MEMORY, "%zu bytes of host memory for the output", s->out_bytes);
    trr_status st = trr_buffer_read(s->ctx, s->buf[TRR_OUT], 0, h, s->out_bytes);
    double sum = 0;
    for (size_t i = 0; st == TRR_OK && i < s->out_elems; i++) {
        sum += trr_dtype_load_f32(h, dt, (int64_t)i);
    }
    *out_sum = sum;
    *out_hash = XXH64(h, s->out_bytes, 0);
    free(h);
    return st;
}

static void teardown(run_state *s) {
    for (int i = 0; i < 3; i++)
        if (s->buf[i]) trr_buffer_destroy(s->buf[i]);
    if (s->ctx) trr_context_destroy(s->ctx);
}

static int fail(run_state *s, const char *what, trr_status st) {
    fprintf(stderr, "trireme run: %s: %s\n", what, trr_last_error(s->ctx));
    teardown(s);
    return cli_exit_for_status(st);
}

int cmd_run(int argc, char **argv) {
    run_args a;
    int code = CLI_EXIT_OK;
    if (!parse_args(argc, argv, &a, &code)) return code;
    run_state s = {0};
    if ((code = resolve_case(&a, &s.tcase)) != CLI_EXIT_OK) return code;

    if ((code = cli_open_context("run", a.device, &s.ctx)) != CLI_EXIT_OK) return code;
    trr_device_info info;
    const char *selection = "";
    trr_status st = trr_context_device(s.ctx, &info);
    if (st == TRR_OK) st = trr_context_selection(s.ctx, &selection);
    if (st != TRR_OK) return fail(&s, "device", st);
    printf("device: %s (%s)\nselection: %s\n", info.spec, info.name, selection);
    if (a.config_set && (st = trr_config_override(s.ctx, a.op, &a.config)) != TRR_OK) return fail(&s, "--config", st);

    if ((st = setup(&s, a.seed)) != TRR_OK) return fail(&s, "setting up buffers", st);
    /* a warm-up call keeps one-time costs (kernel compilation, first-touch) out of the time */
    if ((st = call_op(&s)) != TRR_OK) return fail(&s, "op", st);
    double ms = 0;
    if ((st = trr_timer_start(s.ctx)) != TRR_OK) return fail(&s, "timer", st);
    for (int64_t r = 0; r < a.repeat && st == TRR_OK; r++) st = call_op(&s);
    if (st != TRR_OK) return fail(&s, "op", st);
    if ((st = trr_timer_stop(s.ctx, &ms)) != TRR_OK) return fail(&s, "timer", st);

    double sum = 0;
    uint64_t hash = 0;
    if ((st = checksum(&s, a.out, &sum, &hash)) != TRR_OK) return fail(&s, "reading the output", st);
    char what[160];
    trr_case_describe(&s.tcase, what, sizeof what);
    printf("op: %s\nseed: %llu\n", what, (unsigned long long)a.seed);
    printf("device time: %.4f ms per call (%lld timed call%s after 1 warm-up)\n", ms / (double)a.repeat,
           (long long)a.repeat, a.repeat == 1 ? "" : "s");
    printf("output: %zu elements, sum %.9g, xxh64 %016llx\n", s.out_elems, sum, (unsigned long long)hash);
    teardown(&s);
    return CLI_EXIT_OK;
}
