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
                 "device (e.g. cpu, cuda:0, opencl:1, vulkan:0, auto).\n");
}

int main(int argc, char **argv) {
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
