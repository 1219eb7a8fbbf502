/* trireme bench: the benchmarks of docs/ops.md on one or more devices (bench/bench.h does the work). */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include "bench.h"
#include "cli.h"
#include "report_meta.h"

#include <pthread.h>
#include <signal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 16

/* The benchmarks the op definitions declare, each with what its sizes name, wrapped after indent. */
static void list_benches(FILE *out, const char *indent) {
    size_t col = strlen(indent);
    for (int b = 0; b < trr_bench_count(); b++) {
        const trr_bench_def *d = trr_bench_get(b);
        char item[64];
        snprintf(item, sizeof item, "%s (%s)%s", d->name, d->size_label, b + 1 < trr_bench_count() ? "," : "");
        if (col + 1 + strlen(item) > 110) {
            fprintf(out, "\n%s", indent);
            col = strlen(indent);
        } else if (b) {
            fputc(' ', out);
            col++;
        }
        fputs(item, out);
        col += strlen(item);
    }
    fputc('\n', out);
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: trireme bench [BENCH...] [--device D|all] [--sizes quick|full|LIST] [--reps N] [--budget S]\n"
            "                     [--json FILE] [--csv FILE] [--plot DIR] [--seed N] [--no-vendor] [--no-clock]\n"
            "                     [--quiet]\n"
            "       trireme bench --compare A.json B.json\n"
            "       trireme bench --replot DIR A.json [B.json...]\n\n"
            "Times the docs/ops.md benchmarks on the device, each checked against the float64 reference first, with the\n"
            "device's copy bandwidth (and cuBLAS on CUDA devices) measured in the same run as ceilings.\n\n"
            "  BENCH         a benchmark, with what its sizes name (the op definitions declare them):\n"
            "                ");
    list_benches(out, "                ");
    fprintf(out,
            "                or an op name (every benchmark of that op); default: all\n"
            "  --ops-lib FILE  also the user ops a library defines and their benchmarks (docs/custom-ops.md)\n"
            "  --device D    cpu, cuda:0, opencl:1, ..., or all (every available device); repeat or comma-separate\n"
            "                for several; default: TRIREME_DEVICE, else auto\n"
            "  --sizes       quick (default: a few sizes per benchmark; on a CPU device each halved until it\n"
            "                moves at most 48 MiB or 2^28 FLOP, the report says which), full (docs/ops.md's\n"
            "                whole table), or a list, each entry as the benchmark names its sizes: n (a vector), N\n"
            "                (rows at M = %d), H or HxW (an image), M=N=K or MxNxK (a product), BxMxNxK (a batch\n"
            "                of products), BxHxSxD (attention; a trailing c: causal) or Skv or BxHqxHkvxSkvxD (attention decode);\n"
            "                2^24 is accepted (e.g. --sizes 2^20,2^24)\n"
            "  --reps N      timed repetitions per case (default: as many as fit in 0.5 s on a GPU, 1 s on a CPU\n"
            "                device, 0.25 s there in quick mode; 5 to 200)\n"
            "  --budget S    skip a case predicted to take more than S seconds per repetition (default 2 on CPU\n"
            "                devices, 30 on GPUs)\n"
            "  --json FILE, --csv FILE   write the reports; --plot DIR   one SVG chart per benchmark\n"
            "  --no-vendor   do not load cuBLAS\n"
            "  --no-clock    do not sample the GPU's SM clock during the repetitions (NVML; the MHz column)\n"
            "  --config [OP:]CFG  run OP (every op benched, without OP:) with this config: named fields left out\n"
            "                to the backend, e.g. matmul:block_m=128,block_n=128,variant=coop_nv; repeatable\n"
            "  --compare A B print the cases two JSON reports share side by side with the ratio B / A\n"
            "  --replot DIR FILES  the tables, the same-GPU view and the charts (into DIR) of saved JSON\n"
            "                reports, merged (e.g. two runs of other benchmarks on the same GPUs); runs nothing\n"
            "Ctrl-C or SIGTERM ends the run before its next case: the tables and files hold the cases that ran\n"
            "(marked interrupted), and the exit status is 128 + the signal; a second one ends it at once.\n",
            TRR_BENCH_ROWS_M);
}

typedef struct progress_state {
    int quiet;
    char device[32];
} progress_state;

/* One line per finished case, once the run has gone on for more than a couple of seconds. */
static void on_progress(void *user, int index, int total, const char *name, const trr_bench_result *r,
                        double elapsed_s, double eta_s) {
    const progress_state *ps = user;
    if (ps->quiet || !r || elapsed_s < 2.0) return;
    char what[200];
    if (r->outcome == TRR_BENCH_OK)
        snprintf(what, sizeof what, "%.4g %s", r->figure, trr_bench_get(r->bench)->unit);
    else
        snprintf(what, sizeof what, "%s", trr_bench_outcome_name(r->outcome));
    fprintf(stderr, "[%s %d/%d] %s: %s (%.0f s elapsed, ~%.0f s left)\n", ps->device, index + 1, total, name, what,
            elapsed_s, eta_s > 0 ? eta_s : 0);
}

/* SIGINT or SIGTERM (Ctrl-C, `timeout`): every device's run ends before its next case, and the tables and files
 * hold the cases run so far, marked interrupted; a second signal ends the process at once (the handler gives
 * way to the default action after the first). */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) { stop_signal = sig; }

static void catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* One device's run. */
typedef struct bench_job {
    const char *spec; /* "" for TRIREME_DEVICE, else auto */
    trr_bench_options opt;
    progress_state ps;
    trr_bench_report *report;
    int status;
    const trr_config *configs; /* --config, per op where config_set */
    const int *config_set;
} bench_job;

typedef struct bench_queue {
    bench_job *jobs[MAX_DEVICES];
    int n;
} bench_queue;

/* The device a spec names, without opening it: "backend:N" or "backend" (its device 0). */
static int spec_info(const char *spec, trr_device_info *out) {
    char backend[32];
    int index = 0;
    snprintf(backend, sizeof backend, "%s", spec);
    char *colon = strchr(backend, ':');
    if (colon) {
        *colon = '\0';
        char *end = NULL;
        long v = strtol(colon + 1, &end, 10);
        if (!end || *end || v < 0) return 0;
        index = (int)v;
    }
    return backend[0] && trr_device_get_info(backend, index, out) == TRR_OK;
}

/* queue_of[d]: the first spec of d's queue. Only GPUs known to be different run at the same time: the devices
 * of one physical GPU share a queue (as does a spec given twice); GPUs that report no identity share one queue,
 * since any of them could be the same GPU; every device that is not a GPU (or cannot be looked up before it is
 * opened) goes in one queue, the host's. */
static void plan_queues(char specs[][32], int n, int *queue_of) {
    trr_device_info infos[MAX_DEVICES];
    const trr_device_info *devs[MAX_DEVICES] = {0};
    int group_of[MAX_DEVICES], host = -1, anonymous = -1;
    for (int d = 0; d < n; d++) {
        memset(&infos[d], 0, sizeof infos[d]);
        if (!specs[d][0] || !spec_info(specs[d], &infos[d])) infos[d].is_gpu = 0;
        devs[d] = &infos[d];
    }
    trr_bench_gpu_groups(devs, n, group_of);
    for (int d = 0; d < n; d++) {
        queue_of[d] = -1;
        if (!infos[d].is_gpu) {
            if (host < 0) host = d;
            queue_of[d] = host;
        } else if (!infos[d].uuid[0] && !infos[d].pci_bus_id[0]) {
            if (anonymous < 0) anonymous = d;
            queue_of[d] = anonymous;
        } else {
            for (int e = 0; e < d && queue_of[d] < 0; e++)
                if (!strcmp(infos[e].spec, infos[d].spec)) queue_of[d] = queue_of[e];
            if (queue_of[d] < 0) queue_of[d] = group_of[d];
        }
    }
}

static void *run_queue(void *arg) {
    bench_queue *q = arg;
    for (int i = 0; i < q->n && !stop_signal; i++) { /* interrupted: the devices not started are left */
        bench_job *j = q->jobs[i];
        trr_context *ctx = NULL;
        j->status = cli_open_context("bench", j->spec[0] ? j->spec : NULL, &ctx);
        if (j->status != CLI_EXIT_OK) continue;
        trr_device_info info;
        trr_context_device(ctx, &info);
        snprintf(j->ps.device, sizeof j->ps.device, "%s", j->spec[0] ? j->spec : "auto");
        for (int o = 0; o < TRR_OP_LIMIT; o++)
            if (j->config_set[o]) trr_config_override(ctx, (trr_op)o, &j->configs[o]); /* parsed: in range */
        j->opt.user = &j->ps;
        if (!j->ps.quiet)
            fprintf(stderr, "bench: %s (%s), sizes %s\n", info.spec, info.name,
                    j->opt.sizes == TRR_BENCH_SIZES_FULL ? "full" : j->opt.sizes == TRR_BENCH_SIZES_LIST ? j->opt.size_list : "quick");
        trr_status st = trr_bench_run(ctx, &j->opt, &j->report);
        if (st != TRR_OK) {
            fprintf(stderr, "trireme bench: %s: %s\n", info.spec, trr_last_error(ctx));
            j->status = CLI_EXIT_FAILURE;
            j->report = NULL;
        }
        trr_context_destroy(ctx);
    }
    return NULL;
}

/* --replot: saved reports merged, printed and charted as a run would have been. */
static int replot(const char *dir, int n_files, char **files) {
    trr_bench_report *reports[MAX_DEVICES * 4];
    int n = 0, status = CLI_EXIT_OK;
    for (int f = 0; f < n_files && status == CLI_EXIT_OK; f++)
        if (trr_bench_load_reports(files[f], reports, (int)(sizeof reports / sizeof reports[0]), &n, stderr) != TRR_OK) {
            fprintf(stderr, "trireme bench: %s\n", trr_last_error(NULL));
            status = CLI_EXIT_FAILURE;
        }
    if (status == CLI_EXIT_OK) {
        const trr_bench_report *const *reps = (const trr_bench_report *const *)reports;
        trr_bench_print(reps, n, stdout);
        trr_bench_print_physical(reps, n, stdout);
        fflush(stdout);
        if (trr_bench_write_plots(reps, n, dir, stderr) != TRR_OK ||
            trr_bench_write_physical_plots(reps, n, dir, stderr) != TRR_OK) {
            fprintf(stderr, "trireme bench: %s\n", trr_last_error(NULL));
            status = CLI_EXIT_FAILURE;
        }
    }
    for (int i = 0; i < n; i++) trr_bench_free(reports[i]);
    return status;
}

int trr_cli_bench(int argc, char **argv) {
    trr_bench_options opt = {.sizes = TRR_BENCH_SIZES_QUICK, .seed = 0x7B1D5EEDull};
    const char *json = NULL, *csv = NULL, *plot = NULL, *v = NULL;
    char specs[MAX_DEVICES][32];
    int n_specs = 0, device_given = 0;
    progress_state ps = {0};
    int config_set[TRR_OP_LIMIT] = {0};
    trr_config configs[TRR_OP_LIMIT];
    for (int i = 1; i < argc; i++) {
        int r;
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (cli_flag(argv, i, "compare")) {
            if (i + 2 >= argc) return cli_usage_error("bench", "--compare needs two JSON files");
            if (trr_bench_compare(argv[i + 1], argv[i + 2], stdout) == TRR_OK) return CLI_EXIT_OK;
            fprintf(stderr, "trireme bench: %s\n", trr_last_error(NULL));
            return CLI_EXIT_FAILURE;
        }
        if (cli_flag(argv, i, "replot")) {
            if (i + 2 >= argc) return cli_usage_error("bench", "--replot needs a directory and one JSON file or more");
            return replot(argv[i + 1], argc - i - 2, argv + i + 2);
        }
        if (cli_flag(argv, i, "no-vendor")) {
            opt.no_vendor = 1;
        } else if (cli_flag(argv, i, "no-clock")) {
            opt.no_clock = 1;
        } else if (cli_flag(argv, i, "quiet")) {
            ps.quiet = 1;
        } else if ((r = cli_option_value(argc, argv, &i, "device", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            device_given = 1;
            n_specs += cli_expand_devices(v, specs + n_specs, MAX_DEVICES - n_specs);
        } else if ((r = cli_option_value(argc, argv, &i, "sizes", &v)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (!strcmp(v, "quick")) opt.sizes = TRR_BENCH_SIZES_QUICK;
            else if (!strcmp(v, "full")) opt.sizes = TRR_BENCH_SIZES_FULL;
            else opt.sizes = TRR_BENCH_SIZES_LIST, opt.size_list = v;
        } else if ((r = cli_option_value(argc, argv, &i, "reps", &v)) != 0) {
            int64_t n = 0;
            if (r < 0 || !cli_parse_i64("reps", v, 1, &n)) return CLI_EXIT_USAGE;
            opt.reps = (int)(n > 100000 ? 100000 : n);
        } else if ((r = cli_option_value(argc, argv, &i, "budget", &v)) != 0) {
            float s = 0;
            if (r < 0 || !cli_parse_float("budget", v, &s)) return CLI_EXIT_USAGE;
            if (!(s > 0)) return cli_usage_error("bench", "--budget wants a positive number of seconds, not '%s'", v);
            opt.budget_s = s;
        } else if ((r = cli_option_value(argc, argv, &i, "seed", &v)) != 0) {
            if (r < 0 || !cli_parse_u64("seed", v, &opt.seed)) return CLI_EXIT_USAGE;
        } else if ((r = cli_option_value(argc, argv, &i, "config", &v)) != 0) {
            int op = -1;
            trr_config c;
            if (r < 0 || !cli_parse_config("bench", v, &op, &c)) return CLI_EXIT_USAGE;
            if (op >= 0) cli_warn_config_fields("bench", NULL, (trr_op)op, &c, NULL);
            for (int o = 0; o < TRR_OP_LIMIT; o++)
                if (op < 0 || op == o) configs[o] = c, config_set[o] = 1;
        } else if ((r = cli_option_value(argc, argv, &i, "json", &json)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
        } else if ((r = cli_option_value(argc, argv, &i, "csv", &csv)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
        } else if ((r = cli_option_value(argc, argv, &i, "plot", &plot)) != 0) {
            if (r < 0) return CLI_EXIT_USAGE;
        } else if (argv[i][0] == '-') {
            return cli_usage_error("bench", "unknown option '%s'", argv[i]);
        } else {
            uint64_t m = trr_bench_mask_for(argv[i]);
            if (!m) return cli_usage_error("bench", "unknown benchmark '%s'", argv[i]);
            opt.bench_mask |= m;
        }
    }
    /* an output that cannot be written fails now, not after the whole run */
    if ((json && !cli_output_writable("bench", "--json", json, 0)) || (csv && !cli_output_writable("bench", "--csv", csv, 0)) ||
        (plot && !cli_output_writable("bench", "--plot", plot, 1)))
        return CLI_EXIT_USAGE;
    /* a bad size list is a usage error: find it before opening any device */
    if (opt.sizes == TRR_BENCH_SIZES_LIST)
        for (int b = 0; b < trr_bench_count(); b++) {
            if (opt.bench_mask && !(opt.bench_mask & ((uint64_t)1 << b))) continue;
            trr_case *cases = NULL;
            int n = 0;
            if (trr_bench_cases((trr_bench_id)b, opt.sizes, opt.size_list, &cases, &n) != TRR_OK)
                return cli_usage_error("bench", "%s", trr_last_error(NULL));
            free(cases);
        }
    if (device_given && n_specs == 0) return cli_usage_error("bench", "--device all found no available device");
    if (n_specs == 0) specs[n_specs++][0] = '\0'; /* TRIREME_DEVICE, else auto */

    char command_line[TRR_COMMAND_LINE_MAX];
    trr_report_command_line("trireme", argc, argv, command_line, sizeof command_line);
    opt.command_line = command_line;
    opt.progress = on_progress;
    opt.stop = &stop_signal;
    catch_stop_signals();

    /* Devices that are one physical GPU run one after another (their APIs would share its memory bandwidth);
     * different physical GPUs run at the same time, one thread each; every CPU device shares the host, so all
     * of them run in one queue. */
    static bench_job jobs[MAX_DEVICES];
    int queue_of[MAX_DEVICES];
    plan_queues(specs, n_specs, queue_of);
    for (int d = 0; d < n_specs; d++)
        jobs[d] = (bench_job){.spec = specs[d], .opt = opt, .ps = {.quiet = ps.quiet}, .status = CLI_EXIT_OK,
                              .configs = configs, .config_set = config_set};
    static bench_queue queues[MAX_DEVICES];
    int n_queues = 0;
    for (int d = 0; d < n_specs; d++) {
        if (queue_of[d] != d) continue;
        queues[n_queues].n = 0;
        for (int e = 0; e < n_specs; e++)
            if (queue_of[e] == d) queues[n_queues].jobs[queues[n_queues].n++] = &jobs[e];
        n_queues++;
    }
    pthread_t threads[MAX_DEVICES];
    int started[MAX_DEVICES] = {0};
    for (int q = 0; q < n_queues; q++)
        started[q] = n_queues > 1 && pthread_create(&threads[q], NULL, run_queue, &queues[q]) == 0;
    for (int q = 0; q < n_queues; q++) {
        if (started[q]) pthread_join(threads[q], NULL);
        else run_queue(&queues[q]);
    }

    trr_bench_report *reports[MAX_DEVICES];
    int n_reports = 0, status = CLI_EXIT_OK;
    for (int d = 0; d < n_specs; d++) {
        if (jobs[d].status != CLI_EXIT_OK) status = jobs[d].status;
        if (jobs[d].report) reports[n_reports++] = jobs[d].report;
    }
    const trr_bench_report *const *reps = (const trr_bench_report *const *)reports;
    trr_bench_print(reps, n_reports, stdout);
    trr_bench_print_physical(reps, n_reports, stdout);
    fflush(stdout); /* the tables before the file names the writers log to stderr */
    if (json && trr_bench_write_json(reps, n_reports, json) != TRR_OK) {
        fprintf(stderr, "trireme bench: %s\n", trr_last_error(NULL));
        status = CLI_EXIT_FAILURE;
    }
    if (csv && trr_bench_write_csv(reps, n_reports, csv) != TRR_OK) {
        fprintf(stderr, "trireme bench: %s\n", trr_last_error(NULL));
        status = CLI_EXIT_FAILURE;
    }
    if (plot && (trr_bench_write_plots(reps, n_reports, plot, stderr) != TRR_OK ||
                 trr_bench_write_physical_plots(reps, n_reports, plot, stderr) != TRR_OK)) {
        fprintf(stderr, "trireme bench: %s\n", trr_last_error(NULL));
        status = CLI_EXIT_FAILURE;
    }
    if (trr_bench_failures(reps, n_reports) > 0) {
        fprintf(stderr, "trireme bench: %d case(s) failed their check or run; they report no figure\n",
                trr_bench_failures(reps, n_reports));
        status = CLI_EXIT_FAILURE;
    }
    if (stop_signal) {
        int ran = 0, planned = 0;
        for (int i = 0; i < n_reports; i++) {
            ran += reports[i]->n_results;
            planned += reports[i]->cases_planned;
        }
        fprintf(stderr, "trireme bench: interrupted by signal %d after %d of %d cases; the reports hold those\n",
                (int)stop_signal, ran, planned);
        status = 128 + (int)stop_signal; /* the shell's status for a process a signal ended */
    }
    for (int i = 0; i < n_reports; i++) trr_bench_free(reports[i]);
    return status;
}
