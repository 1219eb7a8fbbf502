/* Plumbing shared by the subcommands of the `trireme` tool. */
#ifndef TRR_CLI_H
#define TRR_CLI_H

#include "trireme.h"

#include <stdint.h>

/* Exit statuses of every subcommand. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILURE = 1, CLI_EXIT_USAGE = 2 };

/* Returns a failing trr_status from the enclosing function (the library's TRR_TRY, without its internal header). */
#define TRR_CLI_TRY(expr)                                                                                      \
    do {                                                                                                       \
        trr_status cli_try_status_ = (expr);                                                                   \
        if (cli_try_status_ != TRR_OK) return cli_try_status_;                                                \
    } while (0)

/* A subcommand: argv[0] is the subcommand's name. Returns an exit status. */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_devices(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_conformance(int argc, char **argv);

/* Option parsing: if argv[*i] is --name or --name=value, sets *out_value (the next argument, or the text
 * after '='), advances *i past what it used and returns 1; returns 0 when argv[*i] is another option; returns
 * -1 (after printing a usage error) when the value is missing. */
int cli_option_value(int argc, char **argv, int *i, const char *name, const char **out_value);
/* 1 if argv[i] is exactly --name. */
int cli_flag(char **argv, int i, const char *name);

/* 1 if arg is --help or -h. */
int cli_is_help(const char *arg);

/* Parsers; each prints a usage error naming the option and returns 0 when text is not valid. */
int cli_parse_i64(const char *option, const char *text, int64_t min, int64_t *out);
int cli_parse_u64(const char *option, const char *text, uint64_t *out);
/* Integers are read by number.h's one parser: 4096, 2^12 or 1<<12. A shape: up to max such integers, each >= min,
 * joined by 'x' ("64x128"; "10x" is malformed); *out_n is how many. */
int cli_parse_dims(const char *option, const char *text, int64_t min, int64_t *dims, int max, int *out_n);
int cli_parse_float(const char *option, const char *text, float *out);
int cli_parse_dtype(const char *option, const char *text, trr_dtype *out);
/* Every op of the op table, comma separated ("copy, add, ..."). */
void cli_op_names(char *buf, size_t cap);
/* An op by name; otherwise a usage error "<what>'<text>' is not an op (<every op>)" and 0. */
int cli_parse_op(const char *cmd, const char *what, const char *text, trr_op *out);
/* --config: "[OP:]CFG", CFG named fields (block_m=128,threads=256,variant=coop_khr; fields left out are the
 * backend's choice) or BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK. *out_op is the op named before ':', or -1. */
int cli_parse_config(const char *cmd, const char *text, int *out_op, trr_config *out_config);

/* Warns on stderr about each field of a --config for op that has no effect: not among the op table's
 * config_fields, or (with ctx, its device known) not read by the device's kernels (trr_config_fields_used): each
 * is ignored; and, with ran (the config the call ran with, trr_config_last), each field the backend replaced. */
void cli_warn_config_fields(const char *cmd, trr_context *ctx, trr_op op, const trr_config *requested,
                            const trr_config *ran);

/* Prints "trireme <cmd>: <message>" and a hint to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Opens a context on spec (NULL: TRIREME_DEVICE, else auto). On failure prints why and the devices that are
 * available, and returns the exit status to use (2 when the spec names no device here, else 1). */
int cli_open_context(const char *cmd, const char *spec, trr_context **out_ctx);
/* Expands a comma-separated device list into specs: "all" is every device of every available backend (the
 * unavailable ones are printed to stdout with their reason), "gpus" every GPU among them; other items are
 * kept as written. Returns the number of specs (at most max). */
int cli_expand_devices(const char *text, char specs[][32], int max);
/* Prints the specs of every available device, comma separated, to stderr. */
void cli_print_available_devices(void);

/* An exit status for a library failure: 2 for the argument band (the caller's fault), 1 otherwise. */
int cli_exit_for_status(trr_status status);

/* The default seed when none is given: different on each run, and printed so a run can be repeated. */
uint64_t cli_default_seed(void);

/* 1 when path can be written as an output of cmd's option: a writable file or a new file in a writable folder
 * (is_dir: a writable folder, or a new one in a writable parent). Else 0, with a usage error printed. */
int cli_output_writable(const char *cmd, const char *option, const char *path, int is_dir);

#endif
