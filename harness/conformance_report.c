/* Conformance reports for people (the ops x devices matrix) and for machines (JSON through cJSON). */
#include "op_table.h"
#include "conformance.h"
#include "backend.h"

#include "json_fields.h"
#include "report_meta.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the matrix ---- */

typedef struct row_key {
    trr_op op;
    trr_dtype in, out;
    int mixed;
    trr_dtype in2;
} row_key;

static row_key key_of(const trr_conf_summary *s) {
    return (row_key){s->op, s->in_dtype, s->out_dtype, s->mixed, s->mixed ? s->in2_dtype : s->in_dtype};
}

static int same_key(const row_key *a, const row_key *b) {
    return a->op == b->op && a->in == b->in && a->out == b->out && a->mixed == b->mixed && a->in2 == b->in2;
}

static const trr_conf_summary *find_summary(const trr_conf_report *rep, const row_key *k) {
    for (int i = 0; i < rep->n_summary; i++) {
        const row_key s = key_of(&rep->summary[i]);
        if (same_key(&s, k)) return &rep->summary[i];
    }
    return NULL;
}

static void row_name(const row_key *k, char *out, size_t cap) {
    const char *op = "?";
    trr_op_name(k->op, &op);
    const trr_case c = {.op = k->op, .in_dtype = k->in, .out_dtype = k->out, .mixed = k->mixed, .in2_dtype = k->in2};
    char dts[48];
    trr_case_dtypes_name(&c, dts, sizeof dts);
    snprintf(out, cap, "%s %s", op, dts);
}

static void cell_text(const trr_conf_summary *s, char *out, size_t cap) {
    if (!s) {
        snprintf(out, cap, "-");
    } else if (s->fail) {
        snprintf(out, cap, "FAIL %d/%d", s->fail, s->pass + s->fail + s->unsupported);
    } else if (!s->pass) {
        snprintf(out, cap, "unsupported");
    } else {
        /* the ratio of the worst case to its bound; "*" where some cases were unsupported */
        snprintf(out, cap, "ok %.2g%s", s->worst_ratio, s->unsupported ? "*" : "");
    }
}

trr_status trr_conformance_print_matrix(const trr_conf_report *const *reports, int n_reports, FILE *out) {
    if (!out || (n_reports > 0 && !reports))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "conformance matrix: %s is NULL", out ? "reports" : "out");
    row_key rows[128];
    int n_rows = 0;
    for (int r = 0; r < n_reports; r++)
        for (int i = 0; i < reports[r]->n_summary; i++) {
            const row_key k = key_of(&reports[r]->summary[i]);
            int seen = 0;
            for (int j = 0; j < n_rows; j++) seen |= same_key(&rows[j], &k);
            if (!seen && n_rows < (int)(sizeof rows / sizeof rows[0])) rows[n_rows++] = k;
        }

    fprintf(out, "%-27s", "op dtype");
    for (int r = 0; r < n_reports; r++) fprintf(out, " %-16s", reports[r]->device.spec);
    fprintf(out, "\n");
    for (int i = 0; i < n_rows; i++) {
        char name[64], cell[40];
        row_name(&rows[i], name, sizeof name);
        fprintf(out, "%-27s", name);
        for (int r = 0; r < n_reports; r++) {
            cell_text(find_summary(reports[r], &rows[i]), cell, sizeof cell);
            fprintf(out, " %-16s", cell);
        }
        fprintf(out, "\n");
    }
    fprintf(out, "(ok R: every case passed, R = worst error / bound; *: some cases unsupported)\n");
    for (int r = 0; r < n_reports; r++) {
        const trr_conf_report *rep = reports[r];
        fprintf(out, "%s (%s): %d passed, %d failed, %d unsupported in %.1f s, seed %llu%s\n", rep->device.spec,
                rep->device.name, rep->passed, rep->failed, rep->unsupported, rep->seconds,
                (unsigned long long)rep->seed, rep->quick ? ", quick subset" : "");
        for (int i = 0; i < rep->n_summary; i++) {
            const trr_conf_summary *s = &rep->summary[i];
            if (s->unsupported && !s->fail) {
                char name[64];
                const row_key k = key_of(s);
                row_name(&k, name, sizeof name);
                fprintf(out, "  unsupported %s (%d cases), e.g. %s\n", name, s->unsupported, s->first_problem);
            }
        }
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *res = &rep->results[i];
            if (res->outcome == TRR_CONF_FAIL) fprintf(out, "  FAIL %s: %s\n", res->name, res->message);
        }
    }
    return TRR_OK;
}

/* ---- JSON ---- */

static const char *dtype_str(trr_dtype d) {
    const char *n = "?";
    trr_dtype_name(d, &n);
    return n;
}

static cJSON *case_json(const trr_conf_result *r) {
    const trr_case *c = &r->tcase;
    const char *op = "?", *epi = "?";
    trr_op_name(c->op, &op);
    trr_epilogue_name(c->epilogue, &epi);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "op", op);
    cJSON_AddStringToObject(o, "in_dtype", dtype_str(c->in_dtype));
    if (c->mixed) cJSON_AddStringToObject(o, "in2_dtype", dtype_str(c->in2_dtype));
    cJSON_AddStringToObject(o, "out_dtype", dtype_str(c->out_dtype));
    if (trr_op_desc_get(c->op)->shape == TRR_SHAPE_MATMUL) {
        cJSON_AddNumberToObject(o, "m", (double)c->m);
        cJSON_AddNumberToObject(o, "n", (double)c->n);
        cJSON_AddNumberToObject(o, "k", (double)c->k);
        cJSON_AddBoolToObject(o, "trans_a", c->trans_a);
        cJSON_AddBoolToObject(o, "trans_b", c->trans_b);
        cJSON_AddStringToObject(o, "epilogue", epi);
        cJSON_AddNumberToObject(o, "alpha", c->alpha);
    } else {
        cJSON_AddNumberToObject(o, "rows", (double)c->rows);
        cJSON_AddNumberToObject(o, "cols", (double)c->cols);
    }
    cJSON_AddStringToObject(o, "layout", trr_case_layout_name(c->layout));
    if (c->params.count > 0) { /* the named parameters the case sets (the norms' eps); the rest are defaults */
        cJSON *params = cJSON_AddObjectToObject(o, "params");
        for (int i = 0; i < c->params.count; i++)
            if (c->params.values[i].name) trr_json_add_number(params, c->params.values[i].name, c->params.values[i].value);
    }
    cJSON_AddStringToObject(o, "outcome", trr_conf_outcome_name(r->outcome));
    cJSON_AddStringToObject(o, "metric", r->metric ? r->metric : "");
    trr_json_add_number(o, "error", r->error);
    trr_json_add_number(o, "bound", r->bound);
    trr_json_add_number(o, "ratio", r->ratio);
    trr_json_add_number(o, "device_ms", r->device_ms);
    trr_json_add_number(o, "wall_ms", r->wall_ms);
    cJSON_AddStringToObject(o, "message", r->message);
    return o;
}

static cJSON *report_json(const trr_conf_report *rep) {
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)rep->seed);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "device", trr_json_device(&rep->device));
    cJSON_AddStringToObject(o, "seed", seed); /* a string: 64-bit seeds do not fit a JSON double */
    cJSON_AddBoolToObject(o, "quick", rep->quick);
    cJSON_AddStringToObject(o, "date", rep->date);
    cJSON_AddNumberToObject(o, "seconds", rep->seconds);
    cJSON_AddNumberToObject(o, "passed", rep->passed);
    cJSON_AddNumberToObject(o, "failed", rep->failed);
    cJSON_AddNumberToObject(o, "unsupported", rep->unsupported);
    cJSON *summary = cJSON_AddArrayToObject(o, "summary");
    for (int i = 0; i < rep->n_summary; i++) {
        const trr_conf_summary *s = &rep->summary[i];
        const char *op = "?";
        trr_op_name(s->op, &op);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "op", op);
        cJSON_AddStringToObject(e, "in_dtype", dtype_str(s->in_dtype));
        if (s->mixed) cJSON_AddStringToObject(e, "in2_dtype", dtype_str(s->in2_dtype));
        cJSON_AddStringToObject(e, "out_dtype", dtype_str(s->out_dtype));
        cJSON_AddNumberToObject(e, "pass", s->pass);
        cJSON_AddNumberToObject(e, "fail", s->fail);
        cJSON_AddNumberToObject(e, "unsupported", s->unsupported);
        trr_json_add_number(e, "worst_ratio", s->worst_ratio);
        cJSON_AddStringToObject(e, "first_problem", s->first_problem);
        cJSON_AddItemToArray(summary, e);
    }
    cJSON *cases = cJSON_AddArrayToObject(o, "cases");
    for (int i = 0; i < rep->n_results; i++) cJSON_AddItemToArray(cases, case_json(&rep->results[i]));
    return o;
}

trr_status trr_conformance_json(const trr_conf_report *const *reports, int n_reports, char **out_text) {
    if (!out_text || (n_reports > 0 && !reports))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "conformance JSON: %s is NULL", out_text ? "reports" : "out_text");
    cJSON *root = cJSON_CreateObject();
    if (!root) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "conformance JSON: out of host memory for the document");
    const trr_device_info *devs[64] = {0};
    const int n_devs = n_reports < 64 ? n_reports : 64;
    for (int r = 0; r < n_devs; r++) devs[r] = &reports[r]->device;
    trr_report_add_meta(root, "trireme conformance", n_reports > 0 ? reports[0]->command_line : "",
                        n_reports > 0 ? reports[0]->date : "", devs, n_devs);
    cJSON_AddStringToObject(root, "trireme_version", TRR_VERSION_STRING); /* kept for readers of older reports */
    cJSON *arr = cJSON_AddArrayToObject(root, "reports");
    for (int r = 0; r < n_reports; r++) cJSON_AddItemToArray(arr, report_json(reports[r]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "conformance JSON: out of host memory printing the document");
    /* cJSON allocates with malloc unless hooks are installed; the caller frees with free() as documented */
    *out_text = text;
    return TRR_OK;
}

trr_status trr_conformance_write_json(const trr_conf_report *const *reports, int n_reports, const char *path) {
    if (!path) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "conformance JSON: path is NULL");
    char *text = NULL;
    trr_status st = trr_conformance_json(reports, n_reports, &text);
    if (st != TRR_OK) return st;
    FILE *f = fopen(path, "w");
    if (!f) {
        int err = errno;
        free(text);
        return trr_error(NULL, TRR_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
    size_t len = strlen(text);
    int bad = fwrite(text, 1, len, f) != len || fputc('\n', f) == EOF;
    bad |= fclose(f) != 0;
    int err = errno;
    free(text);
    if (bad) return trr_error(NULL, TRR_ERR_IO, "writing %s failed: %s", path, strerror(err));
    return TRR_OK;
}
