/* Option parsing and device opening shared by the subcommands (cli.h). */
#include "cli.h"

#include "config_fields.h"
#include "number.h"
#include "op_table.h"
#include "tune.h"
#include "tuner.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "trireme %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'trireme %s --help')\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_flag(char **argv, int i, const char *name) {
    return argv[i][0] == '-' && argv[i][1] == '-' && !strcmp(argv[i] + 2, name);
}

int cli_is_help(const char *arg) { return !strcmp(arg, "--help") || !strcmp(arg, "-h"); }

int cli_option_value(int argc, char **argv, int *i, const char *name, const char **out_value) {
    const char *a = argv[*i];
    size_t len = strlen(name);
    if (strncmp(a, "--", 2) || strncmp(a + 2, name, len)) return 0;
    if (a[2 + len] == '=') {
        *out_value = a + 3 + len;
        return 1;
    }
    if (a[2 + len] != '\0') return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "trireme: option --%s needs a value\n", name);
        return -1;
    }
    *i += 1;
    *out_value = argv[*i];
    return 1;
}

int cli_parse_i64(const char *option, const char *text, int64_t min, int64_t *out) {
    int64_t v = 0;
    if (!trr_parse_number_all(text, &v) || v < min) {
        fprintf(stderr, "trireme: --%s wants an integer >= %lld (e.g. 4096 or 2^12), not '%s'\n", option,
                (long long)min, text);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_u64(const char *option, const char *text, uint64_t *out) {
    int64_t v = 0;
    if (trr_parse_number_all(text, &v) && v >= 0) { /* the shared forms: 123, 2^40, 1<<40 */
        *out = (uint64_t)v;
        return 1;
    }
    /* past INT64_MAX, or hex: a seed may be any 64-bit value */
    char *end = NULL;
    errno = 0;
    unsigned long long u = strtoull(text, &end, 0);
    if (errno || end == text || *end || text[0] == '-' || text[0] == '+' || text[0] == ' ') {
        fprintf(stderr, "trireme: --%s wants an unsigned integer, not '%s'\n", option, text);
        return 0;
    }
    *out = u;
    return 1;
}

int cli_parse_dims(const char *option, const char *text, int64_t min, int64_t *dims, int max, int *out_n) {
    const char *p = text;
    int n = 0;
    for (;;) {
        const char *end = NULL;
        int64_t v = 0;
        if (n == max || !trr_parse_number(p, &end, &v) || v < min) break;
        dims[n++] = v;
        p = end;
        if (*p == '\0') {
            *out_n = n;
            return 1;
        }
        if (*p != 'x' && *p != 'X' && *p != ',') break;
        p++; /* a dimension must follow: "10x" is malformed */
    }
    fprintf(stderr, "trireme: --%s wants up to %d integers >= %lld joined by 'x' or ',' (e.g. 64x128), not '%s'\n",
            option, max, (long long)min, text);
    return 0;
}

void cli_op_names(char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = '\0';
    int n_ops = TRR_OP_COUNT;
    trr_op_count(&n_ops);
    for (int o = 0; o < n_ops && at < cap; o++) {
        const char *name = "?";
        trr_op_name((trr_op)o, &name);
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", o ? ", " : "", name);
    }
}

int cli_parse_op(const char *cmd, const char *what, const char *text, trr_op *out) {
    if (trr_op_from_name(text, out) == TRR_OK) return 1;
    char names[1024];
    cli_op_names(names, sizeof names);
    cli_usage_error(cmd, "%s'%s' is not an op (%s)", what, text, names);
    return 0;
}

int cli_parse_float(const char *option, const char *text, float *out) {
    char *end = NULL;
    errno = 0;
    float v = strtof(text, &end);
    if (errno || end == text || *end || !isfinite(v)) {
        fprintf(stderr, "trireme: --%s wants a number, not '%s'\n", option, text);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_dtype(const char *option, const char *text, trr_dtype *out) {
    for (int d = 0; d < TRR_DTYPE_COUNT; d++) {
        const char *name = NULL;
        if (trr_dtype_name((trr_dtype)d, &name) == TRR_OK && name && !strcmp(name, text)) {
            *out = (trr_dtype)d;
            return 1;
        }
    }
    fprintf(stderr, "trireme: --%s wants f32, f16, bf16, u8, f8e4m3 or f8e5m2, not '%s'\n", option, text);
    return 0;
}

void cli_print_available_devices(void) {
    int n = 0, printed = 0;
    fprintf(stderr, "available devices:");
    if (trr_backend_count(&n) == TRR_OK) {
        for (int b = 0; b < n; b++) {
            trr_backend_info bi;
            if (trr_backend_get_info(b, &bi) != TRR_OK || !bi.available) continue;
            for (int d = 0; d < bi.device_count; d++) {
                trr_device_info di;
                if (trr_device_get_info(bi.name, d, &di) != TRR_OK) continue;
                fprintf(stderr, "%s %s (%s)", printed++ ? "," : "", di.spec, di.name);
            }
        }
    }
    fprintf(stderr, "%s\n", printed ? "" : " none");
}

int cli_exit_for_status(trr_status status) {
    return status >= 1 && status < 20 ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
}

int cli_open_context(const char *cmd, const char *spec, trr_context **out_ctx) {
    trr_status st = trr_context_create(spec, out_ctx);
    if (st == TRR_OK) return CLI_EXIT_OK;
    const char *env = getenv("TRIREME_DEVICE");
    char shown[160];
    if (spec) snprintf(shown, sizeof shown, "'%s'", spec);
    else if (env && *env) snprintf(shown, sizeof shown, "'%s' (from TRIREME_DEVICE)", env);
    else snprintf(shown, sizeof shown, "auto");
    fprintf(stderr, "trireme %s: cannot open device %s: %s\n", cmd, shown, trr_last_error(NULL));
    cli_print_available_devices();
    /* a spec that names nothing usable here is the caller's to fix; a device that fails to open is not */
    if (st == TRR_ERR_NO_DEVICE || st == TRR_ERR_UNAVAILABLE || st == TRR_ERR_INVALID_ARGUMENT)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_FAILURE;
}

uint64_t cli_default_seed(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
}

int cli_expand_devices(const char *text, char specs[][32], int max) {
    char buf[512];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *p = buf, *comma; p && *p; p = comma ? comma + 1 : NULL) {
        comma = strchr(p, ',');
        if (comma) *comma = '\0';
        int all = !strcmp(p, "all"), gpus = !strcmp(p, "gpus");
        if (!all && !gpus) {
            if (n < max) snprintf(specs[n++], 32, "%s", p);
            continue;
        }
        int nb = 0;
        trr_backend_count(&nb);
        for (int b = 0; b < nb; b++) {
            trr_backend_info bi;
            if (trr_backend_get_info(b, &bi) != TRR_OK) continue;
            if (!bi.available) {
                printf("%s: unavailable: %s\n", bi.name, bi.reason);
                continue;
            }
            for (int d = 0; d < bi.device_count && n < max; d++) {
                trr_device_info di;
                if (trr_device_get_info(bi.name, d, &di) != TRR_OK || (gpus && !di.is_gpu)) continue;
                snprintf(specs[n++], 32, "%s", di.spec);
            }
        }
    }
    return n;
}

int cli_output_writable(const char *cmd, const char *option, const char *path, int is_dir) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (is_dir ? !S_ISDIR(st.st_mode) : S_ISDIR(st.st_mode)) {
            cli_usage_error(cmd, "%s %s: %s", option, path, is_dir ? "is not a folder" : "is a folder");
            return 0;
        }
        if (access(path, W_OK) != 0) {
            cli_usage_error(cmd, "%s %s: cannot be written (%s)", option, path, strerror(errno));
            return 0;
        }
        return 1;
    }
    /* a new file or folder: its parent must be a writable folder */
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if (slash == parent) parent[1] = '\0';
    else *slash = '\0';
    if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode) || access(parent, W_OK) != 0) {
        cli_usage_error(cmd, "%s %s: the folder %s does not exist or cannot be written", option, path, parent);
        return 0;
    }
    return 1;
}

int cli_parse_config(const char *cmd, const char *text, int *out_op, trr_config *out_config) {
    *out_op = -1;
    const char *colon = strchr(text, ':');
    if (colon) {
        char name[32];
        size_t len = (size_t)(colon - text);
        trr_op op;
        if (len >= sizeof name) {
            cli_usage_error(cmd, "--config: '%.*s' is not an op", (int)len, text);
            return 0;
        }
        memcpy(name, text, len);
        name[len] = '\0';
        if (!cli_parse_op(cmd, "--config: ", name, &op)) return 0;
        *out_op = (int)op;
        text = colon + 1;
    }
    if (trr_config_parse(text, out_config) != TRR_OK) {
        cli_usage_error(cmd, "--config: %s", trr_last_error(NULL));
        return 0;
    }
    return 1;
}

/* "block_n, threads, vector_width": the names of the fields in bits */
static void field_names(unsigned bits, char *out, size_t cap) {
    size_t at = 0;
    out[0] = '\0';
    for (int g = 0; g < TRR_CONFIG_FIELD_COUNT && at < cap; g++)
        if (bits & trr_config_fields[g].bit)
            at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? ", " : "", trr_config_fields[g].name);
    if (!out[0]) snprintf(out, cap, "none");
}

void cli_warn_config_fields(const char *cmd, trr_context *ctx, trr_op op, const trr_config *requested,
                            const trr_config *ran) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d || !requested) return;
    trr_device_info info;
    if (ctx && trr_context_device(ctx, &info) != TRR_OK) ctx = NULL;
    const unsigned used = ctx ? trr_config_fields_used(ctx, op) : d->config_fields;
    for (int f = 0; f < TRR_CONFIG_FIELD_COUNT; f++) {
        const int want = trr_config_get(requested, f);
        if (!want) continue;
        const trr_config_field *field = &trr_config_fields[f];
        char names[160];
        if (!(d->config_fields & field->bit)) {
            field_names(d->config_fields, names, sizeof names);
            fprintf(stderr, "trireme %s: warning: --config %s: %s has no such parameter (it takes %s); ignored\n",
                    cmd, field->name, d->name, names);
        } else if (!(used & field->bit)) {
            field_names(used, names, sizeof names);
            fprintf(stderr, "trireme %s: warning: --config %s: %s's %s kernel does not read it (it reads %s); "
                    "ignored\n", cmd, field->name, info.spec, d->name, names);
        } else if (ran && trr_config_get(ran, f) != want) {
            fprintf(stderr, "trireme %s: warning: --config %s=%d: %s ran %s with %s=%d instead\n", cmd, field->name,
                    want, ctx ? info.spec : "the device", d->name, field->name, trr_config_get(ran, f));
        }
    }
}
