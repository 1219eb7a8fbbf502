/* `trireme conformance`: the conformance engine (core/conformance.h) on one device or on all of them, printed
 * as an ops x devices matrix; the exit status is 1 when any case failed. */
#define _POSIX_C_SOURCE 200809L /* isatty, fileno */

#include "cli.h"
#include "conformance.h"
#include "report_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEVICES 32

static void print_help(void) {
    printf("usage: trireme conformance [options]\n\n"
           "  --device D|all   one device (cpu, cuda:0, opencl:1, ...; default: TRIREME_DEVICE, else auto),\n"
           "                   or every device of every available backend\n"
           "  --ops LIST       comma-separated ops to check (default: all)\n"
           "  --ops-lib FILE   also the user ops a library defines (docs/custom-ops.md); repeatable\n"
           "  --quick          the small subset (for sanitizer builds)\n"
           "  --seed S         input seed (default: a fresh one, printed; the same seed repeats a run)\n"
           "  --json FILE      also write every case and the summary as JSON\n"
           "  --verbose        print every case as it finishes\n"
           "  --config [OP:]CFG  run OP (every op, without OP:) with this config, e.g. matmul:variant=coop_nv\n"
           "                   or softmax:variant=subgroup (named fields; those left out are the backend's);\n"
           "                   cases the backend cannot run so count as unsupported; repeatable\n\n"
           "Checks every op, dtype, layout and epilogue against the float64 reference with docs/ops.md's bounds,\n"
           "poisoned outputs and guard bytes. Prints a matrix of ops x devices (worst error / bound) and every\n"
           "failing case. Exit status: 0 all passed or unsupported, 1 a case failed, 2 a usage error.\n");
}

typedef struct conf_args {
    const char *device;
    const char *json;
    int quick, verbose;
    uint64_t op_mask;
    uint64_t seed;
    int seed_set;
    int config_set[TRR_OP_LIMIT];
    trr_config configs[TRR_OP_LIMIT];
} conf_args;

static int parse_ops(const char *list, uint64_t *out_mask) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    *out_mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        trr_op op;
        if (!cli_parse_op("conformance", "--ops: ", tok, &op)) return 0;
        *out_mask |= (uint64_t)1 << op;
    }
    if (!*out_mask) {
        cli_usage_error("conformance", "--ops names no op");
        return 0;
    }
    return 1;
}

static int parse_args(int argc, char **argv, conf_args *a, int *out_exit) {
    *a = (conf_args){0};
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if (cli_is_help(argv[i])) {
            print_help();
            *out_exit = CLI_EXIT_OK;
            return 0;
        }
        if ((r = cli_option_value(argc, argv, &i, "device", &v)) < 0) goto usage;
        if (r) { a->device = v; continue; }
        if ((r = cli_option_value(argc, argv, &i, "json", &v)) < 0) goto usage;
        if (r) { a->json = v; continue; }
        if ((r = cli_option_value(argc, argv, &i, "seed", &v)) < 0) goto usage;
        if (r) {
            if (!cli_parse_u64("seed", v, &a->seed)) goto usage;
            a->seed_set = 1;
            continue;
        }
        if ((r = cli_option_value(argc, argv, &i, "ops", &v)) < 0) goto usage;
        if (r) {
            if (!parse_ops(v, &a->op_mask)) goto usage;
            continue;
        }
        if ((r = cli_option_value(argc, argv, &i, "config", &v)) < 0) goto usage;
        if (r) {
            int op = -1;
            trr_config c;
            if (!cli_parse_config("conformance", v, &op, &c)) goto usage;
            if (op >= 0) cli_warn_config_fields("conformance", NULL, (trr_op)op, &c, NULL);
            for (int o = 0; o < TRR_OP_LIMIT; o++)
                if (op < 0 || op == o) a->configs[o] = c, a->config_set[o] = 1;
            continue;
        }
        if (cli_flag(argv, i, "quick")) { a->quick = 1; continue; }
        if (cli_flag(argv, i, "verbose")) { a->verbose = 1; continue; }
        *out_exit = cli_usage_error("conformance", "%s '%s'", argv[i][0] == '-' ? "unknown option" :
                                    "unexpected argument", argv[i]);
        return 0;
    }
    if (!a->seed_set) a->seed = cli_default_seed();
    return 1;
usage:
    *out_exit = CLI_EXIT_USAGE;
    return 0;
}

typedef struct progress_state {
    const char *spec;
    int verbose, tty;
    double next_line_s; /* without a terminal: when the next progress line is due */
} progress_state;

#define PROGRESS_LINE_INTERVAL_S 30.0

/* Long runs (PoCL, lavapipe) take minutes: a live counter on a terminal, a line every 30 s in a log (CI), every
 * case with --verbose. */
static void on_progress(void *user, int index, int total, const trr_conf_result *r, double elapsed_s) {
    progress_state *p = user;
    if (p->verbose) {
        fprintf(stderr, "%s [%d/%d] %-11s %-52s %s %.3g/%.3g %.2f ms%s%s\n", p->spec, index + 1, total,
                trr_conf_outcome_name(r->outcome), r->name, r->metric, r->error, r->bound, r->device_ms,
                r->message[0] ? "  " : "", r->message);
    } else if (p->tty) {
        fprintf(stderr, "\r%s: case %d/%d, %.0f s", p->spec, index + 1, total, elapsed_s);
        if (index + 1 == total) fprintf(stderr, "\n");
    } else if (elapsed_s >= p->next_line_s) {
        fprintf(stderr, "%s: case %d/%d, %.0f s\n", p->spec, index + 1, total, elapsed_s);
        p->next_line_s = elapsed_s + PROGRESS_LINE_INTERVAL_S;
    }
}

/* The specs to run: one (possibly NULL: the default), or a list with "all" / "gpus" expanded. */
static int device_list(const conf_args *a, char specs[][32], int *out_n) {
    *out_n = 0;
    if (!a->device || (!strstr(a->device, "all") && !strstr(a->device, "gpus") && !strchr(a->device, ','))) {
        snprintf(specs[0], 32, "%s", a->device ? a->device : "");
        *out_n = 1;
        return CLI_EXIT_OK;
    }
    *out_n = cli_expand_devices(a->device, specs, MAX_DEVICES);
    return CLI_EXIT_OK;
}

int cmd_conformance(int argc, char **argv) {
    conf_args a;
    int code = CLI_EXIT_OK;
    if (!parse_args(argc, argv, &a, &code)) return code;
    /* an output that cannot be written fails now, not after the whole matrix (as bench and tune do) */
    if (a.json && !cli_output_writable("conformance", "--json", a.json, 0)) return CLI_EXIT_USAGE;
    char specs[MAX_DEVICES][32];
    int n_specs = 0;
    if ((code = device_list(&a, specs, &n_specs)) != CLI_EXIT_OK) return code;

    trr_conf_report *reports[MAX_DEVICES];
    int n_reports = 0;
    char command_line[TRR_COMMAND_LINE_MAX];
    trr_report_command_line("trireme", argc, argv, command_line, sizeof command_line);
    printf("conformance seed %llu%s\n", (unsigned long long)a.seed, a.quick ? " (quick subset)" : "");
    fflush(stdout);
    for (int d = 0; d < n_specs; d++) {
        trr_context *ctx = NULL;
        code = cli_open_context("conformance", specs[d][0] ? specs[d] : NULL, &ctx);
        if (code != CLI_EXIT_OK) break;
        trr_device_info info;
        trr_status st = trr_context_device(ctx, &info);
        int n_ops = TRR_OP_COUNT;
        trr_op_count(&n_ops);
        for (int o = 0; o < n_ops && st == TRR_OK; o++)
            if (a.config_set[o]) st = trr_config_override(ctx, (trr_op)o, &a.configs[o]);
        progress_state ps = {.spec = st == TRR_OK ? info.spec : specs[d], .verbose = a.verbose,
                             .tty = isatty(fileno(stderr)),
                             .next_line_s = PROGRESS_LINE_INTERVAL_S};
        trr_conf_options opt = {.seed = a.seed, .quick = a.quick, .op_mask = a.op_mask,
                                .progress = on_progress, .user = &ps, .command_line = command_line};
        if (st == TRR_OK) st = trr_conformance_run(ctx, &opt, &reports[n_reports]);
        if (st != TRR_OK) {
            fprintf(stderr, "trireme conformance: %s: %s (%s)\n", ps.spec, trr_status_name(st),
                    trr_last_error(ctx));
            trr_context_destroy(ctx);
            code = CLI_EXIT_FAILURE;
            break;
        }
        n_reports++;
        trr_context_destroy(ctx);
    }

    int failed = 0;
    if (n_reports) {
        trr_conformance_print_matrix((const trr_conf_report *const *)reports, n_reports, stdout);
        for (int r = 0; r < n_reports; r++) failed += reports[r]->failed;
    }
    if (a.json && n_reports) {
        trr_status st = trr_conformance_write_json((const trr_conf_report *const *)reports, n_reports, a.json);
        if (st != TRR_OK) {
            fprintf(stderr, "trireme conformance: cannot write %s: %s\n", a.json, trr_status_name(st));
            if (code == CLI_EXIT_OK) code = CLI_EXIT_FAILURE;
        }
    }
    for (int r = 0; r < n_reports; r++) trr_conformance_free(reports[r]);
    if (code == CLI_EXIT_OK && n_specs == 0) {
        fprintf(stderr, "trireme conformance: no available device\n");
        code = CLI_EXIT_FAILURE;
    }
    if (code == CLI_EXIT_OK && failed) code = CLI_EXIT_FAILURE;
    return code;
}
