/* `trireme run OP`: one op on one device with random inputs; prints the device chosen, the device time and a
 * checksum of the output, so two devices or two builds can be compared by eye. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void print_help(void) {
    printf("usage: trireme run OP [options]\n\n"
           "OP: copy, add, gelu, rgb_to_grey, softmax, row_sum, matmul\n\n"
           "  --device D          cpu, cuda:0, opencl:1, vulkan:0, auto (default: TRIREME_DEVICE, else auto)\n"
           "  --dtype T           input dtype: f32 (default), f16, u8 (copy; rgb_to_grey is always u8)\n"
           "  --out-dtype T       output dtype where the op allows a choice (matmul f16->f32, rgb_to_grey u8|f32)\n"
           "  --shape S           N or RxC (copy, add, gelu), HxW (rgb_to_grey), MxN (softmax, row_sum),\n"
           "                      MxNxK (matmul)\n"
           "  --m M --n N --k K   the same, one dimension at a time (--n alone: a vector of N elements)\n"
           "  --trans-a           matmul: A stored as [K,M]\n"
           "  --trans-b           matmul: B stored as [N,K]\n"
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
    trr_epilogue epilogue;
    float alpha;
    uint64_t seed;
    int seed_set;
    int64_t repeat;
    int config_set, config_op; /* config_op: the op --config named before ':', or -1 */
    trr_config config;
} run_args;

/* The problem after defaults: rows x cols for everything but matmul, which uses m, n, k. */
typedef struct problem {
    int64_t rows, cols, m, n, k;
    int flat;
} problem;

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
    *a = (run_args){.in = TRR_F32, .m = -1, .n = -1, .k = -1, .alpha = TRR_LEAKY_RELU_DEFAULT_ALPHA, .repeat = 1};
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
        *out_exit = cli_usage_error("run", "which op? (copy, add, gelu, rgb_to_grey, softmax, row_sum, matmul)");
        return 0;
    }
    if (trr_op_from_name(op_name, &a->op) != TRR_OK) {
        *out_exit = cli_usage_error("run", "unknown op '%s' (copy, add, gelu, rgb_to_grey, softmax, row_sum, "
                                    "matmul)", op_name);
        return 0;
    }
    if (a->config_set && a->config_op >= 0 && a->config_op != (int)a->op) {
        *out_exit = cli_usage_error("run", "--config names another op than '%s'", op_name);
        return 0;
    }
    if (a->op == TRR_OP_RGB_TO_GREY && !a->in_set) a->in = TRR_U8;
    if (!a->out_set) a->out = a->op == TRR_OP_ROW_SUM ? TRR_F32 : a->in;
    if (!a->seed_set) a->seed = cli_default_seed();
    return 1;
usage:
    *out_exit = CLI_EXIT_USAGE;
    return 0;
}

static int resolve_problem(const run_args *a, problem *p) {
    const int is_elementwise = a->op == TRR_OP_COPY || a->op == TRR_OP_ADD || a->op == TRR_OP_GELU;
    *p = (problem){0};
    if (a->op == TRR_OP_MATMUL) {
        p->m = p->n = p->k = 512;
        if (a->n_dims == 3) p->m = a->dims[0], p->n = a->dims[1], p->k = a->dims[2];
        else if (a->n_dims) return cli_usage_error("run", "matmul --shape wants MxNxK");
        if (a->m >= 0) p->m = a->m;
        if (a->n >= 0) p->n = a->n;
        if (a->k >= 0) p->k = a->k;
        return CLI_EXIT_OK;
    }
    if (a->k >= 0) return cli_usage_error("run", "--k is for matmul only");
    if (is_elementwise) {
        p->rows = 1, p->cols = 1 << 20, p->flat = 1;
        if (a->n_dims == 1) p->cols = a->dims[0];
        else if (a->n_dims == 2) p->rows = a->dims[0], p->cols = a->dims[1], p->flat = 0;
        else if (a->n_dims) return cli_usage_error("run", "--shape wants N or RxC for this op");
        if (a->m >= 0) p->rows = a->m, p->flat = 0;
        if (a->n >= 0) p->cols = a->n;
        return CLI_EXIT_OK;
    }
    if (a->op == TRR_OP_RGB_TO_GREY) p->rows = 1066, p->cols = 1600;
    else p->rows = 1024, p->cols = 1024;
    if (a->n_dims == 2) p->rows = a->dims[0], p->cols = a->dims[1];
    else if (a->n_dims) return cli_usage_error("run", "--shape wants %s for this op",
                                               a->op == TRR_OP_RGB_TO_GREY ? "HxW" : "MxN");
    if (a->m >= 0) p->rows = a->m;
    if (a->n >= 0) p->cols = a->n;
    return CLI_EXIT_OK;
}

/* ---- buffers ---- */

static uint64_t next_random(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* n random elements of dt: floats uniform in [-1, 1) and never zero, u8 uniform. */
static void *random_host(trr_dtype dt, size_t n, uint64_t *rng) {
    size_t esz = 0;
    if (trr_dtype_size(dt, &esz) != TRR_OK) return NULL;
    uint8_t *h = malloc(n * esz + 1);
    if (!h) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (dt == TRR_U8) {
            h[i] = (uint8_t)(next_random(rng) >> 56);
            continue;
        }
        float f = (float)((int64_t)(next_random(rng) >> 40) - (1 << 23)) / (float)(1 << 23);
        if (f == 0.0f) f = 0.5f;
        if (dt == TRR_F16) {
            uint16_t v = 0;
            trr_f32_to_f16(&f, &v, 1);
            memcpy(h + 2 * i, &v, 2);
        } else {
            memcpy(h + esz * i, &f, sizeof f <= esz ? sizeof f : esz);
        }
    }
    return h;
}

typedef struct run_state {
    trr_context *ctx;
    trr_buffer *bx, *by, *bz;
    trr_tensor x, y, z;
    size_t out_elems, out_bytes;
} run_state;

/* A buffer of n random elements written to the device. */
static trr_status input_buffer(run_state *s, trr_dtype dt, size_t n, uint64_t *rng, trr_buffer **out) {
    size_t esz = 0;
    trr_status st = trr_dtype_size(dt, &esz);
    if (st != TRR_OK) return st;
    void *h = random_host(dt, n, rng);
    if (!h) return TRR_ERR_OUT_OF_MEMORY;
    st = trr_buffer_create(s->ctx, n * esz + 1, out);
    if (st == TRR_OK) st = trr_buffer_write(s->ctx, *out, 0, h, n * esz);
    free(h);
    return st;
}

static trr_status setup(run_state *s, const run_args *a, const problem *p) {
    uint64_t rng = a->seed;
    size_t osz = 0;
    trr_status st = trr_dtype_size(a->out, &osz);
    if (st != TRR_OK) return st;
    switch (a->op) {
    case TRR_OP_MATMUL: {
        trr_tensor t;
        st = input_buffer(s, a->in, (size_t)(p->m * p->k), &rng, &s->bx);
        if (st == TRR_OK) st = input_buffer(s, a->in, (size_t)(p->k * p->n), &rng, &s->by);
        if (st == TRR_OK) st = trr_buffer_create(s->ctx, (size_t)(p->m * p->n) * osz + 1, &s->bz);
        if (st != TRR_OK) return st;
        if (a->trans_a) {
            TRR_CLI_TRY(trr_tensor_2d(s->bx, 0, a->in, p->k, p->m, 0, &t));
            TRR_CLI_TRY(trr_tensor_transpose(&t, &s->x));
        } else {
            TRR_CLI_TRY(trr_tensor_2d(s->bx, 0, a->in, p->m, p->k, 0, &s->x));
        }
        if (a->trans_b) {
            TRR_CLI_TRY(trr_tensor_2d(s->by, 0, a->in, p->n, p->k, 0, &t));
            TRR_CLI_TRY(trr_tensor_transpose(&t, &s->y));
        } else {
            TRR_CLI_TRY(trr_tensor_2d(s->by, 0, a->in, p->k, p->n, 0, &s->y));
        }
        s->out_elems = (size_t)(p->m * p->n);
        return trr_tensor_2d(s->bz, 0, a->out, p->m, p->n, 0, &s->z);
    }
    case TRR_OP_RGB_TO_GREY: {
        size_t isz = 0;
        TRR_CLI_TRY(trr_dtype_size(a->in, &isz));
        TRR_CLI_TRY(input_buffer(s, a->in, (size_t)(3 * p->rows * p->cols), &rng, &s->bx));
        TRR_CLI_TRY(trr_buffer_create(s->ctx, (size_t)(p->rows * p->cols) * osz + 1, &s->bz));
        s->x = (trr_tensor){.buffer = s->bx, .dtype = a->in, .ndim = 3, .shape = {3, p->rows, p->cols},
                            .strides = {p->rows * p->cols, p->cols, 1}};
        s->out_elems = (size_t)(p->rows * p->cols);
        return trr_tensor_2d(s->bz, 0, a->out, p->rows, p->cols, 0, &s->z);
    }
    case TRR_OP_ROW_SUM:
        TRR_CLI_TRY(input_buffer(s, a->in, (size_t)(p->rows * p->cols), &rng, &s->bx));
        TRR_CLI_TRY(trr_buffer_create(s->ctx, (size_t)p->rows * osz + 1, &s->bz));
        TRR_CLI_TRY(trr_tensor_2d(s->bx, 0, a->in, p->rows, p->cols, 0, &s->x));
        s->out_elems = (size_t)p->rows;
        return trr_tensor_1d(s->bz, 0, a->out, p->rows, &s->z);
    default: {
        const size_t n = (size_t)(p->rows * p->cols);
        TRR_CLI_TRY(input_buffer(s, a->in, n, &rng, &s->bx));
        if (a->op == TRR_OP_ADD) TRR_CLI_TRY(input_buffer(s, a->in, n, &rng, &s->by));
        TRR_CLI_TRY(trr_buffer_create(s->ctx, n * osz + 1, &s->bz));
        s->out_elems = n;
        if (p->flat) {
            TRR_CLI_TRY(trr_tensor_1d(s->bx, 0, a->in, p->cols, &s->x));
            if (s->by) TRR_CLI_TRY(trr_tensor_1d(s->by, 0, a->in, p->cols, &s->y));
            return trr_tensor_1d(s->bz, 0, a->out, p->cols, &s->z);
        }
        TRR_CLI_TRY(trr_tensor_2d(s->bx, 0, a->in, p->rows, p->cols, 0, &s->x));
        if (s->by) TRR_CLI_TRY(trr_tensor_2d(s->by, 0, a->in, p->rows, p->cols, 0, &s->y));
        return trr_tensor_2d(s->bz, 0, a->out, p->rows, p->cols, 0, &s->z);
    }
    }
}

static trr_status call_op(run_state *s, const run_args *a) {
    switch (a->op) {
    case TRR_OP_COPY: return trr_copy(s->ctx, &s->x, &s->z);
    case TRR_OP_ADD: return trr_add(s->ctx, &s->x, &s->y, &s->z);
    case TRR_OP_GELU: return trr_gelu(s->ctx, &s->x, &s->z);
    case TRR_OP_RGB_TO_GREY: return trr_rgb_to_grey(s->ctx, &s->x, &s->z);
    case TRR_OP_SOFTMAX: return trr_softmax(s->ctx, &s->x, &s->z);
    case TRR_OP_ROW_SUM: return trr_row_sum(s->ctx, &s->x, &s->z);
    case TRR_OP_MATMUL: return trr_matmul(s->ctx, &s->x, &s->y, &s->z, a->epilogue, a->alpha, 0);
    default: return TRR_ERR_INVALID_ARGUMENT;
    }
}

/* The sum of the output's values (as doubles) and the XXH64 of its bytes. */
static trr_status checksum(run_state *s, trr_dtype dt, double *out_sum, uint64_t *out_hash) {
    size_t esz = 0;
    TRR_CLI_TRY(trr_dtype_size(dt, &esz));
    uint8_t *h = malloc(s->out_elems * esz + 1);
    if (!h) return TRR_ERR_OUT_OF_MEMORY;
    trr_status st = trr_buffer_read(s->ctx, s->bz, 0, h, s->out_elems * esz);
    double sum = 0;
    for (size_t i = 0; st == TRR_OK && i < s->out_elems; i++) {
        float f = 0;
        if (dt == TRR_F32) {
            memcpy(&f, h + 4 * i, 4);
        } else if (dt == TRR_F16) {
            uint16_t v;
            memcpy(&v, h + 2 * i, 2);
            trr_f16_to_f32(&v, &f, 1);
        } else {
            f = h[i];
        }
        sum += f;
    }
    *out_sum = sum;
    *out_hash = XXH64(h, s->out_elems * esz, 0);
    free(h);
    return st;
}

static void teardown(run_state *s) {
    if (s->bx) trr_buffer_destroy(s->bx);
    if (s->by) trr_buffer_destroy(s->by);
    if (s->bz) trr_buffer_destroy(s->bz);
    if (s->ctx) trr_context_destroy(s->ctx);
}

static int fail(run_state *s, const char *what, trr_status st) {
    fprintf(stderr, "trireme run: %s: %s\n", what, trr_last_error(s->ctx));
    teardown(s);
    return cli_exit_for_status(st);
}

int cmd_run(int argc, char **argv) {
    run_args a;
    problem p;
    int code = CLI_EXIT_OK;
    if (!parse_args(argc, argv, &a, &code)) return code;
    if ((code = resolve_problem(&a, &p)) != CLI_EXIT_OK) return code;

    run_state s = {0};
    if ((code = cli_open_context("run", a.device, &s.ctx)) != CLI_EXIT_OK) return code;
    trr_device_info info;
    const char *selection = "";
    trr_status st = trr_context_device(s.ctx, &info);
    if (st == TRR_OK) st = trr_context_selection(s.ctx, &selection);
    if (st != TRR_OK) return fail(&s, "device", st);
    printf("device: %s (%s)\nselection: %s\n", info.spec, info.name, selection);
    if (a.config_set && (st = trr_config_override(s.ctx, a.op, &a.config)) != TRR_OK) return fail(&s, "--config", st);

    if ((st = setup(&s, &a, &p)) != TRR_OK) return fail(&s, "setting up buffers", st);
    /* a warm-up call keeps one-time costs (kernel compilation, first-touch) out of the time */
    if ((st = call_op(&s, &a)) != TRR_OK) return fail(&s, "op", st);
    double ms = 0;
    if ((st = trr_timer_start(s.ctx)) != TRR_OK) return fail(&s, "timer", st);
    for (int64_t r = 0; r < a.repeat && st == TRR_OK; r++) st = call_op(&s, &a);
    if (st != TRR_OK) return fail(&s, "op", st);
    if ((st = trr_timer_stop(s.ctx, &ms)) != TRR_OK) return fail(&s, "timer", st);

    double sum = 0;
    uint64_t hash = 0;
    if ((st = checksum(&s, a.out, &sum, &hash)) != TRR_OK) return fail(&s, "reading the output", st);
    const char *op = "?", *din = "?", *dout = "?", *epi = "?";
    trr_op_name(a.op, &op);
    trr_dtype_name(a.in, &din);
    trr_dtype_name(a.out, &dout);
    trr_epilogue_name(a.epilogue, &epi);
    if (a.op == TRR_OP_MATMUL)
        printf("op: matmul %s->%s M=%lld N=%lld K=%lld%s%s epilogue %s", din, dout, (long long)p.m,
               (long long)p.n, (long long)p.k, a.trans_a ? " trans_a" : "", a.trans_b ? " trans_b" : "", epi);
    else
        printf("op: %s %s->%s %lldx%lld", op, din, dout, (long long)p.rows, (long long)p.cols);
    if (a.op == TRR_OP_MATMUL && a.epilogue == TRR_EPI_LEAKY_RELU) printf(" alpha %g", (double)a.alpha);
    printf("\nseed: %llu\n", (unsigned long long)a.seed);
    printf("device time: %.4f ms per call (%lld timed call%s after 1 warm-up)\n", ms / (double)a.repeat,
           (long long)a.repeat, a.repeat == 1 ? "" : "s");
    printf("output: %zu elements, sum %.9g, xxh64 %016llx\n", s.out_elems, sum, (unsigned long long)hash);
    teardown(&s);
    return CLI_EXIT_OK;
}
