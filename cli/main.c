/* The `trireme` tool: a table of subcommands, each in its own cmd_*.c file. */
#include "bench.h"
#include "cli.h"
#include "cmd_tune.h"

#include <stdio.h>
#include <string.h>

typedef struct cli_command {
    const char *name;
    cli_command_fn fn;
    const char *summary;
} cli_command;

/* Each subcommand is one line here and one file. */
static const cli_command commands[] = {
    {"devices", cmd_devices, "list the compiled-in backends and their devices"},
    {"run", cmd_run, "run one op once and print the device time and a checksum of the output"},
    {"conformance", cmd_conformance, "check every op against the float64 reference on one or more devices"},
    {"bench", trr_cli_bench, "time the benchmarks of docs/ops.md against the device's copy and cuBLAS ceilings"},
    {"tune", trr_cli_tune, "time candidate tile configs per op and shape, and write the tuning database"},
};

static void print_help(FILE *out) {
    fprintf(out, "usage: trireme <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'trireme <command> --help' describes a command's options. TRIREME_DEVICE sets the default\n"
                 "device (e.g. cpu, cuda:0, opencl:1, vulkan:0, auto). --ops-lib FILE, with any command, loads a\n"
                 "library of user ops (docs/custom-ops.md), which then count as ops.\n");
}

/* --ops-lib FILE (repeatable, any subcommand): loads a library of user ops (trr_ops_library_load, docs/custom-ops.md)
 * before the subcommand parses its options, so --ops, --config and the benchmarks' names reach those ops; the
 * options are taken out of argv. Returns the exit status on failure, else -1. */
static int load_ops_libs(int *argc, char **argv) {
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        const char *path = NULL;
        if (!strcmp(argv[i], "--ops-lib")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "trireme: --ops-lib wants a library path\n");
                return CLI_EXIT_USAGE;
            }
            path = argv[++i];
        } else if (!strncmp(argv[i], "--ops-lib=", 10)) {
            path = argv[i] + 10;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        int defined = 0;
        const trr_status st = trr_ops_library_load(path, &defined);
        if (st != TRR_OK) {
            fprintf(stderr, "trireme: --ops-lib %s: %s\n", path, trr_last_error(NULL));
            return st == TRR_ERR_IO ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return -1;
}

/* The library's warnings (a tuning database it ignores, ...) on stderr, where the command's own go. */
static void print_warning(trr_log_level level, const char *message, void *user) {
    (void)user;
    fprintf(stderr, "trireme: %s%s\n", level == TRR_LOG_WARNING ? "" : "note: ", message);
}

int main(int argc, char **argv) {
    trr_log_set(print_warning, NULL);
    const int loaded = load_ops_libs(&argc, argv);
    if (loaded >= 0) return loaded;
    if (argc < 2) {
        print_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(name, "--version")) {
        printf("trireme %s\n", TRR_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "trireme: unknown command '%s'\n\n", name);
    print_help(stderr);
    return CLI_EXIT_USAGE;
}
