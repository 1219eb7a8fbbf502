/* `trireme tune [OP...] [options]`: builds the list of jobs (op x signature x layout x shape), runs the tuner
 * (core/tuner.h) on each, prints progress on stderr and a table on stdout, and merges each job's result into
 * the tuning database as soon as it is known, so an interrupted run keeps what it finished. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "cmd_tune.h"

#include "cli.h"
#include "layout.h"
#include "op_table.h"
#include "tune_space.h"
#include "tuner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_JOBS 4096
#define MAX_SHAPES 64

typedef struct dims {
    int n;           /* 1, 2 or 3 */
    int64_t d[3];
} dims;

typedef struct tune_args {
    const char *device;
    const char *shapes;   /* NULL: the full defaults */
    const char *dtypes;   /* NULL: every signature */
    const char *layouts;  /* matmul: "nn,nt" unless given */
    const char *db;
    int reps, warmup;
    int list_only, no_write, tf32;
    int have_only;
    trr_config only;
    uint64_t seed;
    uint64_t op_mask; /* bit (1 << op), user ops included */
} tune_args;

static void usage(FILE *out) {
    fprintf(out,
            "usage: trireme tune [OP...] [--device D] [--shapes LIST|quick] [--dtype LIST] [--layout LIST]\n"
            "                    [--reps N] [--warmup N] [--db FILE] [--only-config CFG] [--tf32] [--list]\n"
            "                    [--no-write] [--seed N]\n\n"
            "Times every candidate tile config of each op (all ops unless named), dtype, layout and shape on one\n"
            "device after checking its output against the float64 reference, and writes the fastest into the\n"
            "tuning database, which every later call on that device (same backend, device name and driver)\n"
            "reads by itself.\n\n"
            "  --device D       cpu, cuda:0, opencl:1, vulkan:0, auto (default: TRIREME_DEVICE, else auto)\n"
            "  --shapes LIST    comma-separated shapes: MxNxK for matmul, RxC for softmax, row_sum, the norms,\n"
            "                   rgb_to_grey (HxW) and element-wise ops, or N for element-wise ops; shapes that do\n"
            "                   not fit an op are skipped for it. 'quick' is a small set per op. Default:\n"
            "                   benchmark-like sizes.\n"
            "  --dtype LIST     input dtypes or signatures, e.g. f32 or f16->f32 (default: every signature)\n"
            "  --layout LIST    matmul operand layouts: nn, nt, tn, tt or all (default: nn,nt; t = transposed)\n"
            "  --reps N         timed runs per candidate; the median counts (default 10, quick 5)\n"
            "  --warmup N       untimed runs first, the checked run included (default 2), then more until\n"
            "                   50 ms have passed, so the device is at its working clock\n"
            "  --db FILE        the database to merge into (default: TRIREME_TUNE_DB, else the cache dir's\n"
            "                   tune.json)\n"
            "  --only-config CFG  time only this config against the default, and store it if it passes the\n"
            "                   check: named fields (block_m=128,threads=256,variant=simt; fields left out are\n"
            "                   the backend's choice) or BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK\n"
            "  --tf32           matmul f32 with TRR_MATMUL_ALLOW_TF32 (a separate database key)\n"
            "  --list           print each job's candidates and why any are dropped; time nothing\n"
            "  --no-write       tune and report, but leave the database alone\n"
            "  --seed N         input seed\n"
            "  --ops-lib FILE   also the user ops a library defines (docs/custom-ops.md); repeatable\n");
}

/* Splits a comma list into items (in place in a copy). */
static int split(const char *text, char *buf, size_t cap, char **items, int max) {
    snprintf(buf, cap, "%s", text);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        items[n++] = t;
    return n;
}

static int dtype_selected(const tune_args *a, const trr_op_signature *sig) {
    if (!a->dtypes) return 1;
    char buf[256];
    char *items[16];
    int n = split(a->dtypes, buf, sizeof buf, items, 16);
    const char *in = "?", *out = "?";
    trr_dtype_name(sig->in, &in);
    trr_dtype_name(sig->out, &out);
    char full[32];
    snprintf(full, sizeof full, "%s->%s", in, out);
    for (int i = 0; i < n; i++)
        if (!strcmp(items[i], in) || !strcmp(items[i], full)) return 1;
    return 0;
}

static int add_job(trr_tune_job *jobs, int *n, const trr_tune_job *j) {
    if (*n >= MAX_JOBS) return 0;
    jobs[(*n)++] = *j;
    return 1;
}

/* Every job the arguments select. Returns the count, or -1 after a usage error. */
static int build_jobs(const tune_args *a, trr_tune_job *jobs) {
    int n = 0;
    const int quick = a->shapes && !strcmp(a->shapes, "quick");
    static const char *const layout_names[4] = {"nn", "nt", "tn", "tt"};
    int layouts[4] = {1, 1, 0, 0};
    if (a->layouts) {
        char buf[64];
        char *items[8];
        int k = split(a->layouts, buf, sizeof buf, items, 8);
        memset(layouts, 0, sizeof layouts);
        for (int i = 0; i < k; i++) {
            const int all = !strcmp(items[i], "all");
            int found = all;
            for (int l = 0; l < 4; l++)
                if (all || !strcmp(items[i], layout_names[l])) layouts[l] = 1, found = 1;
            if (!found) return cli_usage_error("tune", "--layout wants nn, nt, tn, tt or all, not '%s'", items[i]), -1;
        }
    } else if (quick) {
        layouts[1] = 0;
    }
    for (int o = 0; o < trr_op_desc_count(); o++) {
        const trr_op op = (trr_op)o;
        if (a->op_mask && !(a->op_mask & ((uint64_t)1 << op))) continue;
        const trr_op_desc *d = trr_op_desc_get(op);
        if (!d->config_fields) continue; /* nothing to tune: trr_cli_tune says so */
        if (d->shape == TRR_SHAPE_ATTENTION) { /* its rank-4 shapes have no tuning space yet */
            if (a->op_mask) fprintf(stderr, "trireme tune: %s is not tuned yet; skipping it\n", d->name);
            continue;
        }
        const char *list = !a->shapes || quick ? trr_tune_default_shapes(d->shape, quick) : a->shapes;
        char buf[2048];
        char *items[MAX_SHAPES];
        int k = split(list, buf, sizeof buf, items, MAX_SHAPES);
        int fitted = 0;
        for (int i = 0; i < k; i++) {
            dims dm;
            if (!cli_parse_dims("shapes", items[i], 1, dm.d, 3, &dm.n)) return -1;
            int is_mm = d->shape == TRR_SHAPE_MATMUL;
            int elementwise = d->shape == TRR_SHAPE_ELEMENTWISE;
            if (is_mm ? dm.n != 3 : (dm.n == 3 || (dm.n == 1 && !elementwise))) continue;
            fitted++;
            for (int g = 0; g < d->n_signatures; g++) {
                if (!dtype_selected(a, &d->signatures[g])) continue;
                /* a tuning job has one input dtype: the mixed 8-bit float pairs are not tuned (lookups for them
                 * find their first input's entries) */
                if (d->signatures[g].mixed) continue;
                trr_tune_job j = {.op = op, .in_dtype = d->signatures[g].in, .out_dtype = d->signatures[g].out};
                if (is_mm) {
                    j.m = dm.d[0], j.n = dm.d[1], j.k = dm.d[2];
                    j.allow_tf32 = a->tf32 && j.in_dtype == TRR_F32;
                    for (int l = 0; l < 4; l++) {
                        if (!layouts[l]) continue;
                        j.trans_a = l >= 2, j.trans_b = l & 1;
                        if (!add_job(jobs, &n, &j)) return n;
                    }
                } else {
                    j.rows = dm.n == 1 ? 1 : dm.d[0];
                    j.cols = dm.n == 1 ? dm.d[0] : dm.d[1];
                    if (!add_job(jobs, &n, &j)) return n;
                }
            }
        }
        if (a->shapes && !quick && !fitted)
            fprintf(stderr, "trireme tune: no shape in --shapes fits %s (%s); skipping it\n", d->name,
                    d->shape == TRR_SHAPE_MATMUL ? "MxNxK" : "RxC or N");
    }
    return n;
}

static void describe_job(const trr_tune_job *j, char *out, size_t cap) {
    const char *op = "?", *in = "?", *o = "?";
    trr_op_name(j->op, &op);
    trr_dtype_name(j->in_dtype, &in);
    trr_dtype_name(j->out_dtype, &o);
    if (trr_op_desc_get(j->op)->shape == TRR_SHAPE_MATMUL)
        snprintf(out, cap, "%s %s->%s %c%c%s %lldx%lldx%lld", op, in, o, j->trans_a ? 't' : 'n', j->trans_b ? 't' : 'n',
                 j->allow_tf32 ? " tf32" : "", (long long)j->m, (long long)j->n, (long long)j->k);
    else
        snprintf(out, cap, "%s %s->%s %lldx%lld", op, in, o, (long long)j->rows, (long long)j->cols);
}

/* ---- progress ---- */

typedef struct progress_state {
    int job, jobs;
    double done_s; /* seconds spent on finished jobs */
    char name[128];
} progress_state;

static void on_progress(void *user, const trr_tune_progress *p) {
    progress_state *ps = user;
    char cfg[TRR_CONFIG_TEXT_MAX], best[TRR_CONFIG_TEXT_MAX] = "-";
    trr_config_format(p->config, cfg, sizeof cfg);
    if (p->best) trr_config_format(p->best, best, sizeof best);
    /* the jobs still to come are assumed to cost what the finished ones did on average */
    double per_job = ps->job > 1 ? ps->done_s / (ps->job - 1) : p->elapsed_s + p->left_s;
    double left = p->left_s + per_job * (ps->jobs - ps->job);
    if (p->checking && !p->note[0])
        fprintf(stderr, "[%d/%d] %s  candidate %d/%d %-26s   checked against the reference: passed  (checks ~%.0f s left)\n",
                ps->job, ps->jobs, ps->name, p->index, p->total, cfg, p->left_s);
    else if (p->ms >= 0)
        fprintf(stderr, "[%d/%d] %s  candidate %d/%d %-26s %10.4f ms  best %.4f ms (%s)  ~%.0f s left%s%s\n", ps->job,
                ps->jobs, ps->name, p->index, p->total, cfg, p->ms, p->best_ms, best, left, p->note[0] ? "  " : "",
                p->note);
    else
        fprintf(stderr, "[%d/%d] %s  candidate %d/%d %-26s   FAILED: %s\n", ps->job, ps->jobs, ps->name, p->index,
                p->total, cfg, p->note);
}

/* ---- --list ---- */

static int list_job(trr_context *ctx, const trr_tune_job *j, const char *name) {
    /* the space depends on the call only through its shape, dtypes and layout: a call on tiny buffers will not
     * do, so build the real operands' call through a one-candidate tuning setup */
    trr_tune_candidate *cand = calloc(TRR_TUNE_MAX_CANDIDATES, sizeof *cand);
    if (!cand) return CLI_EXIT_FAILURE;
    trr_case c;
    trr_tune_job_case(j, &c);
    trr_call call;
    if (trr_case_packed_call(&c, &call) != TRR_OK) {
        free(cand);
        return CLI_EXIT_FAILURE;
    }
    call.allow_tf32 = j->allow_tf32;
    int n = 0;
    trr_config def;
    trr_tune_default_config(ctx, &call, &def);
    trr_status st = trr_tune_space(ctx, &call, cand, TRR_TUNE_MAX_CANDIDATES, &n);
    char cfg[TRR_CONFIG_TEXT_MAX];
    trr_config_format(&def, cfg, sizeof cfg);
    printf("%s: default %s, %d candidates\n", name, cfg, n);
    for (int i = 0; st == TRR_OK && i < n; i++) {
        trr_config_format(&cand[i].resolved, cfg, sizeof cfg);
        printf("  %3d %-28s %s%s\n", i + 1, cfg, cand[i].dropped ? "dropped: " : "ok", cand[i].dropped ? cand[i].reason : "");
    }
    free(cand);
    return st == TRR_OK ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

/* ---- arguments ---- */

static int parse_args(int argc, char **argv, tune_args *a) {
    memset(a, 0, sizeof *a);
    a->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return -1;
        }
        if ((r = cli_option_value(argc, argv, &i, "device", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            a->device = v;
        } else if ((r = cli_option_value(argc, argv, &i, "shapes", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            a->shapes = v;
        } else if ((r = cli_option_value(argc, argv, &i, "dtype", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            a->dtypes = v;
        } else if ((r = cli_option_value(argc, argv, &i, "layout", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            a->layouts = v;
        } else if ((r = cli_option_value(argc, argv, &i, "db", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            a->db = v;
        } else if ((r = cli_option_value(argc, argv, &i, "reps", &v)) != 0) {
            int64_t x;
            if (r < 0 || !cli_parse_i64("reps", v, 1, &x)) return CLI_EXIT_USAGE;
            a->reps = (int)(x > 100000 ? 100000 : x);
        } else if ((r = cli_option_value(argc, argv, &i, "warmup", &v)) != 0) {
            int64_t x;
            if (r < 0 || !cli_parse_i64("warmup", v, 1, &x)) return CLI_EXIT_USAGE;
            a->warmup = (int)(x > 1000 ? 1000 : x);
        } else if ((r = cli_option_value(argc, argv, &i, "seed", &v)) != 0) {
            if (r < 0 || !cli_parse_u64("seed", v, &a->seed)) return CLI_EXIT_USAGE;
        } else if ((r = cli_option_value(argc, argv, &i, "only-config", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (trr_config_parse(v, &a->only) != TRR_OK)
                return cli_usage_error("tune", "--only-config: %s", trr_last_error(NULL));
            a->have_only = 1;
        } else if (cli_flag(argv, i, "list")) {
            a->list_only = 1;
        } else if (cli_flag(argv, i, "no-write")) {
            a->no_write = 1;
        } else if (cli_flag(argv, i, "tf32")) {
            a->tf32 = 1;
        } else if (argv[i][0] == '-') {
            return cli_usage_error("tune", "unknown option '%s'", argv[i]);
        } else {
            trr_op op;
            if (!cli_parse_op("tune", "", argv[i], &op)) return CLI_EXIT_USAGE;
            a->op_mask |= (uint64_t)1 << op;
        }
    }
    if (!a->reps) a->reps = a->shapes && !strcmp(a->shapes, "quick") ? 5 : 10;
    return CLI_EXIT_OK;
}

static void print_row(const char *name, const trr_tune_outcome *o) {
    char def[TRR_CONFIG_TEXT_MAX], best[TRR_CONFIG_TEXT_MAX];
    trr_config_format(&o->entry.default_config, def, sizeof def);
    trr_config_format(&o->entry.config, best, sizeof best);
    double gain = o->entry.ms > 0 && o->entry.default_ms > 0 ? o->entry.default_ms / o->entry.ms : 1.0;
    printf("%-34s default %-26s %10.4f ms  tuned %-26s %10.4f ms  x%.2f  (%d timed, %d dropped, %d failed)\n", name,
           def, o->entry.default_ms, best, o->entry.ms, gain, o->timed, o->dropped, o->failed);
}

int trr_cli_tune(int argc, char **argv) {
    tune_args a;
    int code = parse_args(argc, argv, &a);
    if (code < 0) return CLI_EXIT_OK; /* --help */
    if (code != CLI_EXIT_OK) return code;
    trr_tune_job *jobs = calloc(MAX_JOBS, sizeof *jobs);
    if (!jobs) return CLI_EXIT_FAILURE;
    int n_jobs = build_jobs(&a, jobs);
    if (n_jobs < 0) {
        free(jobs);
        return CLI_EXIT_USAGE;
    }
    if (n_jobs == 0) {
        free(jobs);
        for (int o = 0; o < trr_op_desc_count(); o++)
            if ((a.op_mask & ((uint64_t)1 << o)) && !trr_op_desc_get((trr_op)o)->config_fields)
                return cli_usage_error("tune", "%s has no tile parameters: there is nothing to tune",
                                       trr_op_desc_get((trr_op)o)->name);
        return cli_usage_error("tune", "nothing to tune: no op, dtype and shape combination is selected");
    }
    trr_context *ctx = NULL;
    if ((code = cli_open_context("tune", a.device, &ctx)) != CLI_EXIT_OK) {
        free(jobs);
        return code;
    }
    trr_device_info info;
    trr_context_device(ctx, &info);
    char path[4096] = "";
    if (a.db) snprintf(path, sizeof path, "%s", a.db);
    else if (!a.list_only && !a.no_write && trr_tune_db_path(ctx, path, sizeof path) != TRR_OK) {
        fprintf(stderr, "trireme tune: no place for the database: %s (use --db)\n", trr_last_error(ctx));
        trr_context_destroy(ctx);
        free(jobs);
        return CLI_EXIT_FAILURE;
    }
    /* a database that cannot be written fails before hours of tuning, not after */
    if (!a.list_only && !a.no_write && !cli_output_writable("tune", "--db", path, 0)) {
        trr_context_destroy(ctx);
        free(jobs);
        return CLI_EXIT_USAGE;
    }
    fprintf(stderr, "trireme tune: %s %s (%s, driver %s): %d jobs%s%s\n", info.backend, info.spec, info.name,
            info.driver, n_jobs, path[0] && !a.list_only && !a.no_write ? ", database " : "",
            !a.list_only && !a.no_write ? path : "");

    int failures = 0, written = 0;
    progress_state ps = {.jobs = n_jobs};
    trr_tune_options opt = {.reps = a.reps, .warmup = a.warmup, .only_config = a.have_only ? &a.only : NULL,
                            .progress = on_progress, .user = &ps, .seed = a.seed};
    for (int i = 0; i < n_jobs; i++) {
        char name[128];
        describe_job(&jobs[i], name, sizeof name);
        if (a.list_only) {
            if (list_job(ctx, &jobs[i], name) != CLI_EXIT_OK) failures++;
            continue;
        }
        ps.job = i + 1;
        snprintf(ps.name, sizeof ps.name, "%s", name);
        trr_tune_outcome out;
        struct timespec ts0, ts1;
        timespec_get(&ts0, TIME_UTC);
        trr_status st = trr_tune_run(ctx, &jobs[i], &opt, &out);
        timespec_get(&ts1, TIME_UTC);
        ps.done_s += (double)(ts1.tv_sec - ts0.tv_sec) + 1e-9 * (double)(ts1.tv_nsec - ts0.tv_nsec);
        if (st == TRR_ERR_UNSUPPORTED) {
            printf("%-34s unsupported: %s\n", name, trr_last_error(ctx));
            continue;
        }
        if (st != TRR_OK) {
            printf("%-34s FAILED: %s\n", name, trr_last_error(ctx));
            failures++;
            if (st == TRR_ERR_DEVICE) break; /* the context may be unusable */
            continue;
        }
        if (out.listed == 0 && !a.have_only) {
            /* the space is empty: the default config is all the backend runs */
            printf("%-34s %s has no tile parameters on %s: its default config is the only one (nothing stored)\n",
                   name, trr_op_desc_get(jobs[i].op)->name, info.spec);
            continue;
        }
        print_row(name, &out);
        fflush(stdout);
        if (a.no_write) continue;
        char note[512];
        st = trr_tune_db_store(ctx, path, &out.entry, 1, note, sizeof note);
        if (note[0]) fprintf(stderr, "trireme tune: %s\n", note);
        if (st != TRR_OK) {
            fprintf(stderr, "trireme tune: cannot write the database: %s\n", trr_last_error(ctx));
            failures++;
            break;
        }
        written++;
    }
    if (!a.list_only && !a.no_write && written > 0) printf("wrote %d entries to %s\n", written, path);
    trr_context_destroy(ctx);
    free(jobs);
    return failures ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
