/* The tuning database file (tune.h): keys, the JSON format, strict parsing, and merged atomic writes. Reading
 * it on every call, with its cache and warnings, is tune_lookup.c. */
#include "tune.h"

#include "cache.h"
#include "json_fields.h"
#include "op_table.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys ---- */

/* Truncating copy (cap > 0); a key is built on every call that can use the database, so no snprintf. */
static void copy_str(char *dst, size_t cap, const char *src) {
    size_t n = 0;
    while (src && n + 1 < cap && src[n]) n++;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

void trr_tune_shape_of(const trr_call *call, int64_t out_shape[3]) {
    out_shape[0] = call->rows;
    out_shape[1] = call->cols;
    out_shape[2] = trr_op_desc_get(call->op)->shape == TRR_SHAPE_MATMUL ? call->k : 1;
}

int64_t trr_tune_bucket_round(int64_t n) {
    if (n <= 8) return n < 1 ? 1 : n; /* 1 to 8 have three significant bits or fewer */
    int top = 0;
    while ((n >> top) > 1) top++;
    const int shift = top - 2; /* keep the top three bits, round the rest up */
    return ((n + ((int64_t)1 << shift) - 1) >> shift) << shift;
}

void trr_tune_bucket_of(const trr_call *call, int64_t out_bucket[3]) {
    int64_t s[3];
    trr_tune_shape_of(call, s);
    for (int i = 0; i < 3; i++) out_bucket[i] = trr_tune_bucket_round(s[i]);
}

void trr_tune_key_of(const trr_context *ctx, const trr_call *call, trr_tune_key *out_key) {
    memset(out_key, 0, sizeof *out_key);
    copy_str(out_key->backend, sizeof out_key->backend, ctx->backend->name);
    copy_str(out_key->device, sizeof out_key->device, ctx->info.name);
    copy_str(out_key->driver, sizeof out_key->driver, ctx->info.driver);
    out_key->op = call->op;
    const char *name = "?";
    trr_op_name(call->op, &name);
    snprintf(out_key->op_name, sizeof out_key->op_name, "%s", name);
    out_key->in_dtype = call->x.dtype;
    out_key->out_dtype = call->z.dtype;
    if (trr_op_desc_get(call->op)->shape == TRR_SHAPE_MATMUL) {
        out_key->trans_a = call->trans_a != 0;
        out_key->trans_b = call->trans_b != 0;
        out_key->tf32 = call->allow_tf32 != 0;
    }
    trr_tune_bucket_of(call, out_key->bucket);
}

/* The key's op by name: its op_name, else (a key filled by hand) the name of its op. */
static const char *key_op_name(const trr_tune_key *k) {
    const char *name = "?";
    if (k->op_name[0]) return k->op_name;
    trr_op_name(k->op, &name);
    return name;
}

static int same_key(const trr_tune_key *a, const trr_tune_key *b) {
    return strcmp(a->backend, b->backend) == 0 && strcmp(a->device, b->device) == 0 &&
           strcmp(a->driver, b->driver) == 0 && strcmp(key_op_name(a), key_op_name(b)) == 0 &&
           a->in_dtype == b->in_dtype && a->out_dtype == b->out_dtype && a->trans_a == b->trans_a &&
           a->trans_b == b->trans_b && a->tf32 == b->tf32 && a->bucket[0] == b->bucket[0] && a->bucket[1] == b->bucket[1] &&
           a->bucket[2] == b->bucket[2];
}

trr_status trr_tune_db_path(trr_context *ctx, char *out_path, size_t cap) {
    const char *env = getenv("TRIREME_TUNE_DB");
    if (env && *env) {
        if (strlen(env) >= cap) return trr_error(ctx, TRR_ERR_IO, "TRIREME_TUNE_DB is too long");
        copy_str(out_path, cap, env);
        return TRR_OK;
    }
    char dir[4096];
    TRR_TRY(trr_cache_dir(ctx, dir, sizeof dir));
    int n = snprintf(out_path, cap, "%s/tune.json", dir);
    if (n < 0 || (size_t)n >= cap) return trr_error(ctx, TRR_ERR_IO, "tuning database path too long");
    return TRR_OK;
}

/* ---- parsing: every field checked, so a damaged file is rejected whole rather than half-used ---- */

static int fail(char *why, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(char *why, size_t cap, const char *fmt, ...) {
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int get_int(const cJSON *obj, const char *name, int64_t lo, int64_t hi, int64_t *out, char *why,
                   size_t cap, int index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v)) return fail(why, cap, "entry %d: \"%s\" is missing or not a number", index, name);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi)
        return fail(why, cap, "entry %d: \"%s\" = %g is not an integer in [%lld, %lld]", index, name, d,
                    (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 1;
}

static int get_time(const cJSON *obj, const char *name, double *out, char *why, size_t cap, int index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
        return fail(why, cap, "entry %d: \"%s\" is missing or not a non-negative number", index, name);
    *out = v->valuedouble;
    return 1;
}

static int get_str(const cJSON *obj, const char *name, char *dst, size_t dst_cap, int required, char *why,
                   size_t cap, int index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!v && !required) {
        dst[0] = '\0';
        return 1;
    }
    if (!cJSON_IsString(v) || !v->valuestring)
        return fail(why, cap, "entry %d: \"%s\" is missing or not a string", index, name);
    if (strlen(v->valuestring) >= dst_cap)
        return fail(why, cap, "entry %d: \"%s\" is longer than %zu characters", index, name, dst_cap - 1);
    copy_str(dst, dst_cap, v->valuestring);
    return 1;
}

static int get_bool(const cJSON *obj, const char *name, int *out, char *why, size_t cap, int index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsBool(v)) return fail(why, cap, "entry %d: \"%s\" is missing or not true/false", index, name);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 1;
}

static int get_dims(const cJSON *obj, const char *name, int64_t out[3], char *why, size_t cap, int index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3)
        return fail(why, cap, "entry %d: \"%s\" is not an array of 3 numbers", index, name);
    for (int i = 0; i < 3; i++) {
        const cJSON *d = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(d) || d->valuedouble != floor(d->valuedouble) || d->valuedouble < 1 ||
            d->valuedouble > 9007199254740992.0) /* 2^53: exact in JSON's doubles; calls past 2^31 run in parts */
            return fail(why, cap, "entry %d: \"%s\"[%d] is not an integer in [1, 2^53]", index, name, i);
        out[i] = (int64_t)d->valuedouble;
    }
    return 1;
}

/* Every field of the config table by name; the variant by its name. A file written before configs carried a
 * variant has none: that reads as auto (the backend's heuristic picks the kernel family). */
static int get_config(const cJSON *obj, const char *name, trr_config *out, char *why, size_t cap, int index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsObject(v)) return fail(why, cap, "entry %d: \"%s\" is missing or not an object", index, name);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < TRR_CONFIG_FIELD_COUNT; i++) {
        const char *key = trr_config_fields[i].name;
        const cJSON *fv = cJSON_GetObjectItemCaseSensitive(v, key);
        if (i == TRR_CONFIG_FIELD_VARIANT) {
            trr_variant var = TRR_VARIANT_AUTO;
            if (fv && (!cJSON_IsString(fv) || trr_variant_from_name(fv->valuestring, &var) != TRR_OK))
                return fail(why, cap, "entry %d: \"%s.%s\" is not a variant name (auto, simt, mma, wgmma, coop_khr, "
                            "coop_nv, cm2, subgroup)", index, name, key);
            trr_config_set(out, i, (int)var);
            continue;
        }
        const int max = trr_config_fields[i].max;
        if (!cJSON_IsNumber(fv) || fv->valuedouble != floor(fv->valuedouble) || fv->valuedouble < 0 ||
            fv->valuedouble > max)
            return fail(why, cap, "entry %d: \"%s.%s\" is missing or not an integer in [0, %d]", index, name, key,
                        max);
        trr_config_set(out, i, (int)fv->valuedouble);
    }
    return 1;
}

static int dtype_of(const char *name, trr_dtype *out) {
    for (int d = 0; d < TRR_DTYPE_COUNT; d++) {
        const char *n = NULL;
        if (trr_dtype_name((trr_dtype)d, &n) == TRR_OK && n && strcmp(n, name) == 0) {
            *out = (trr_dtype)d;
            return 1;
        }
    }
    return 0;
}

static int parse_entry(const cJSON *e, int index, int version, trr_tune_entry *out, char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(e)) return fail(why, cap, "entry %d is not an object", index);
    trr_tune_key *k = &out->key;
    char op[sizeof k->op_name], in[16], outd[16];
    int64_t cand = 0;
    if (!get_str(e, "backend", k->backend, sizeof k->backend, 1, why, cap, index) ||
        !get_str(e, "device", k->device, sizeof k->device, 1, why, cap, index) ||
        !get_str(e, "driver", k->driver, sizeof k->driver, 1, why, cap, index) ||
        !get_str(e, "op", op, sizeof op, 1, why, cap, index) || !get_str(e, "in", in, sizeof in, 1, why, cap, index) ||
        !get_str(e, "out", outd, sizeof outd, 1, why, cap, index) ||
        !get_bool(e, "trans_a", &k->trans_a, why, cap, index) || !get_bool(e, "trans_b", &k->trans_b, why, cap, index) ||
        !get_bool(e, "tf32", &k->tf32, why, cap, index) || !get_dims(e, "bucket", k->bucket, why, cap, index) ||
        !get_dims(e, "shape", out->shape, why, cap, index) ||
        !get_config(e, "config", &out->config, why, cap, index) || !get_time(e, "ms", &out->ms, why, cap, index) ||
        !get_config(e, "default_config", &out->default_config, why, cap, index) ||
        !get_time(e, "default_ms", &out->default_ms, why, cap, index) ||
        !get_int(e, "candidates", 0, 1 << 20, &cand, why, cap, index) ||
        !get_str(e, "tuned_at", out->tuned_at, sizeof out->tuned_at, 0, why, cap, index))
        return 0;
    out->candidates = (int)cand;
    if (!k->backend[0] || !k->device[0]) return fail(why, cap, "entry %d: empty backend or device name", index);
    snprintf(k->op_name, sizeof k->op_name, "%s", op);
    /* a name no op of this process has is a user op whose library is not loaded: kept, matched by no call */
    if (trr_op_from_name(op, &k->op) != TRR_OK) k->op = (trr_op)TRR_OP_LIMIT;
    if (!dtype_of(in, &k->in_dtype) || !dtype_of(outd, &k->out_dtype))
        return fail(why, cap, "entry %d: unknown dtype \"%s\" or \"%s\"", index, in, outd);
    if (k->op != (trr_op)TRR_OP_LIMIT && !trr_op_allows(k->op, k->in_dtype, k->out_dtype))
        return fail(why, cap, "entry %d: %s does not take %s -> %s", index, op, in, outd);
    for (int i = 0; i < 3; i++) {
        if (version == 1) {
            /* a version-1 bucket was a whole octave (a power of two); the entry now keys the finer bucket of the
             * shape it was timed at, which lies inside that octave, so no two entries of one file collide (an
             * entry whose shape lies outside its octave, made by hand, keeps its bucket: a power of two is one) */
            if (k->bucket[i] & (k->bucket[i] - 1))
                return fail(why, cap, "entry %d: bucket[%d] = %lld is not a power of two (a version-1 file)",
                            index, i, (long long)k->bucket[i]);
            if (out->shape[i] <= k->bucket[i] && 2 * out->shape[i] > k->bucket[i])
                k->bucket[i] = trr_tune_bucket_round(out->shape[i]);
        } else if (trr_tune_bucket_round(k->bucket[i]) != k->bucket[i]) {
            return fail(why, cap, "entry %d: bucket[%d] = %lld is not a bucket (at most three significant bits: "
                        "..., 1024, 1280, 1536, 1792, 2048, ...)", index, i, (long long)k->bucket[i]);
        }
    }
    return 1;
}

trr_status trr_tune_db_parse(const char *text, trr_tune_entry **out_entries, int *out_count, char *why,
                             size_t why_cap) {
    if (!text || !out_entries || !out_count) {
        fail(why, why_cap, "no text or output given");
        return TRR_ERR_INVALID_ARGUMENT;
    }
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        fail(why, why_cap, "not valid JSON");
        return TRR_ERR_INVALID_ARGUMENT;
    }
    trr_status st = TRR_ERR_INVALID_ARGUMENT;
    trr_tune_entry *entries = NULL;
    int n = 0;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!cJSON_IsObject(root)) {
        fail(why, why_cap, "the document is not a JSON object");
    } else if (format && !(cJSON_IsString(format) && strcmp(format->valuestring, "trireme-tune") == 0)) {
        fail(why, why_cap, "\"format\" is not \"trireme-tune\"");
    } else if (!cJSON_IsNumber(version) || (version->valuedouble != TRR_TUNE_DB_VERSION && version->valuedouble != 1)) {
        fail(why, why_cap, "\"version\" is missing or not 1 or %d", TRR_TUNE_DB_VERSION);
    } else if (!cJSON_IsArray(list)) {
        fail(why, why_cap, "\"entries\" is missing or not an array");
    } else {
        int count = cJSON_GetArraySize(list);
        entries = calloc((size_t)(count > 0 ? count : 1), sizeof *entries);
        if (!entries) {
            st = TRR_ERR_OUT_OF_MEMORY;
            fail(why, why_cap, "out of host memory");
        } else {
            st = TRR_OK;
            const cJSON *e;
            cJSON_ArrayForEach(e, list) {
                if (!parse_entry(e, n, (int)version->valuedouble, &entries[n], why, why_cap)) {
                    st = TRR_ERR_INVALID_ARGUMENT;
                    break;
                }
                n++;
            }
        }
    }
    cJSON_Delete(root);
    if (st != TRR_OK) {
        free(entries);
        return st;
    }
    *out_entries = entries;
    *out_count = n;
    return TRR_OK;
}

trr_status trr_tune_db_load(const char *path, trr_tune_entry **out_entries, int *out_count, char *why,
                            size_t why_cap) {
    void *data = NULL;
    size_t size = 0;
    char reason[128] = "";
    if (trr_file_read_why(path, &data, &size, reason, sizeof reason) != TRR_OK) {
        fail(why, why_cap, "cannot read %s: %s", path, reason);
        return TRR_ERR_IO;
    }
    trr_status st = trr_tune_db_parse(data, out_entries, out_count, why, why_cap);
    free(data);
    return st;
}

/* ---- writing ---- */

static cJSON *dims_json(const int64_t d[3]) {
    double v[3] = {(double)d[0], (double)d[1], (double)d[2]};
    return cJSON_CreateDoubleArray(v, 3);
}

static cJSON *entry_json(const trr_tune_entry *e) {
    const trr_tune_key *k = &e->key;
    const char *op = key_op_name(k), *in = "?", *out = "?";
    trr_dtype_name(k->in_dtype, &in);
    trr_dtype_name(k->out_dtype, &out);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = cJSON_AddStringToObject(o, "backend", k->backend) && cJSON_AddStringToObject(o, "device", k->device) &&
             cJSON_AddStringToObject(o, "driver", k->driver) && cJSON_AddStringToObject(o, "op", op) &&
             cJSON_AddStringToObject(o, "in", in) && cJSON_AddStringToObject(o, "out", out) &&
             cJSON_AddBoolToObject(o, "trans_a", k->trans_a) && cJSON_AddBoolToObject(o, "trans_b", k->trans_b) &&
             cJSON_AddBoolToObject(o, "tf32", k->tf32);
    cJSON *parts[4] = {dims_json(k->bucket), dims_json(e->shape), trr_json_config(&e->config),
                       trr_json_config(&e->default_config)};
    const char *names[4] = {"bucket", "shape", "config", "default_config"};
    for (int i = 0; i < 4; i++) {
        if (ok && parts[i] && cJSON_AddItemToObject(o, names[i], parts[i])) continue;
        cJSON_Delete(parts[i]);
        ok = 0;
    }
    ok = ok && cJSON_AddNumberToObject(o, "ms", e->ms) && cJSON_AddNumberToObject(o, "default_ms", e->default_ms) &&
         cJSON_AddNumberToObject(o, "candidates", e->candidates) &&
         cJSON_AddStringToObject(o, "tuned_at", e->tuned_at);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

trr_status trr_tune_db_format(const trr_tune_entry *entries, int n, char **out_text) {
    cJSON *root = cJSON_CreateObject();
    cJSON *list = root ? cJSON_AddArrayToObject(root, "entries") : NULL;
    int ok = list && cJSON_AddStringToObject(root, "format", "trireme-tune") &&
             cJSON_AddNumberToObject(root, "version", TRR_TUNE_DB_VERSION);
    for (int i = 0; ok && i < n; i++) {
        cJSON *e = entry_json(&entries[i]);
        ok = e && cJSON_AddItemToArray(list, e);
        if (!ok) cJSON_Delete(e);
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return TRR_ERR_OUT_OF_MEMORY;
    *out_text = text;
    return TRR_OK;
}

trr_status trr_tune_db_store(trr_context *ctx, const char *path, const trr_tune_entry *entries, int n,
                             char *out_note, size_t note_cap) {
    if (!entries && n > 0) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "trr_tune_db_store: entries is NULL");
    if (out_note && note_cap) out_note[0] = '\0';
    char own_path[4096];
    if (!path) {
        TRR_TRY(trr_tune_db_path(ctx, own_path, sizeof own_path));
        path = own_path;
    }
    trr_tune_entry *all = NULL;
    int count = 0;
    char why[256] = "";
    trr_status st = trr_tune_db_load(path, &all, &count, why, sizeof why);
    if (st == TRR_ERR_INVALID_ARGUMENT) {
        /* keep a damaged file for a person to look at instead of writing over it */
        char aside[4200];
        snprintf(aside, sizeof aside, "%s.corrupt", path);
        if (rename(path, aside) != 0)
            return trr_error(ctx, TRR_ERR_IO, "%s is not a valid tuning database (%s) and cannot be moved aside: %s",
                             path, why, strerror(errno));
        if (out_note && note_cap)
            snprintf(out_note, note_cap, "%s was not a valid tuning database (%s); moved to %s", path, why, aside);
        all = NULL;
        count = 0;
    } else if (st != TRR_OK) {
        all = NULL; /* no file yet */
        count = 0;
    }
    trr_tune_entry *merged = realloc(all, (size_t)(count + n > 0 ? count + n : 1) * sizeof *merged);
    if (!merged) {
        free(all);
        return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "tuning database: out of host memory");
    }
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < count && !same_key(&merged[j].key, &entries[i].key)) j++;
        merged[j] = entries[i];
        if (j == count) count++;
    }
    char *text = NULL;
    st = trr_tune_db_format(merged, count, &text);
    free(merged);
    if (st != TRR_OK) return trr_error(ctx, st, "tuning database: out of host memory while formatting");
    st = trr_file_write_atomic(ctx, path, text, strlen(text));
    free(text);
    trr_tune_reset();
    return st;
}
