/* The op-call trace (trace.h). */
#define _POSIX_C_SOURCE 200809L
#include "trace.h"

#include "backend.h"
#include "clock.h"
#include "log.h"
#include "json_fields.h"
#include "op_table.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_EVENTS 1000000

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int enabled;          /* TRIREME_TRACE was set and the file can be written */
static int device_time;      /* TRIREME_TRACE_DEVICE_TIME=1 */
static int opened;           /* the file was opened once (lazily, on the first event) */
static char path[4096];
static double origin_s;      /* timestamps are microseconds since tracing started */
static char *events;         /* the events so far, comma separated */
static size_t len, cap;
static long n_events, dropped;
static int unwritten;         /* events (or drops) since the file was last written */
static int next_tid = 1;
static _Thread_local int tid;

static void at_exit(void) { trr_trace_flush(); }

static void init(void) {
    const char *env = getenv("TRIREME_TRACE");
    if (!env || !*env) return;
    snprintf(path, sizeof path, "%s", env);
    origin_s = trr_now_s();
    enabled = 1;
    const char *dt = getenv("TRIREME_TRACE_DEVICE_TIME");
    device_time = dt && !strcmp(dt, "1");
    atexit(at_exit);
}

/* Under lock. The one warning through which a bad path is reported, then tracing stops. */
static void give_up(const char *what) {
    trr_log(TRR_LOG_WARNING, "TRIREME_TRACE: cannot write %s (%s: %s); no trace is recorded", path, what,
            strerror(errno));
    enabled = 0;
    free(events);
    events = NULL;
    len = cap = 0;
}

double trr_trace_begin(void) {
    pthread_once(&once, init);
    return enabled ? trr_now_s() : -1.0;
}

int trr_trace_device_time(void) {
    pthread_once(&once, init);
    return enabled && device_time;
}

static cJSON *int_array(const int64_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static cJSON *operand_json(const trr_tensor *t) {
    cJSON *o = cJSON_CreateObject();
    if (!t) return o;
    const char *dt = "?";
    trr_dtype_name(t->dtype, &dt);
    const int nd = t->ndim >= 0 && t->ndim <= TRR_MAX_DIMS ? t->ndim : 0;
    cJSON_AddStringToObject(o, "dtype", dt);
    cJSON_AddItemToObject(o, "shape", int_array(t->shape, nd));
    cJSON_AddItemToObject(o, "strides", int_array(t->strides, nd));
    cJSON_AddNumberToObject(o, "offset", (double)t->offset);
    return o;
}

static void append(const char *text) {
    const size_t n = strlen(text) + 2;
    if (len + n + 1 > cap) {
        size_t c = cap ? cap * 2 : 1 << 16;
        while (c < len + n + 1) c *= 2;
        char *p = realloc(events, c);
        if (!p) {
            dropped++;
            return;
        }
        events = p, cap = c;
    }
    len += (size_t)snprintf(events + len, cap - len, "%s%s", n_events ? ",\n" : "", text);
    n_events++;
}

trr_status trr_trace_end(trr_context *ctx, trr_op op, const trr_tensor *const *operands, const double *params,
                         double t0, double device_ms, trr_status st) {
    if (t0 < 0 || !enabled) return st;
    const double t1 = trr_now_s();
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!tid) {
        pthread_mutex_lock(&lock);
        tid = next_tid++;
        pthread_mutex_unlock(&lock);
    }
    cJSON *e = cJSON_CreateObject();
    if (!e) return st;
    cJSON_AddStringToObject(e, "name", d ? d->name : "?");
    cJSON_AddStringToObject(e, "cat", "op");
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddNumberToObject(e, "ts", (t0 - origin_s) * 1e6);
    cJSON_AddNumberToObject(e, "dur", (t1 - t0) * 1e6);
    cJSON_AddNumberToObject(e, "pid", (double)getpid());
    cJSON_AddNumberToObject(e, "tid", tid);
    cJSON *args = cJSON_AddObjectToObject(e, "args");
    cJSON_AddStringToObject(args, "device", ctx ? ctx->info.spec : "");
    cJSON_AddStringToObject(args, "status", trr_status_name(st));
    if (device_ms >= 0 && st == TRR_OK) cJSON_AddNumberToObject(args, "device_us", device_ms * 1e3);
    cJSON *ops = cJSON_AddArrayToObject(args, "operands");
    const int n = d ? d->n_inputs + trr_op_outputs(d) : 0;
    for (int i = 0; operands && i < n; i++) cJSON_AddItemToArray(ops, operand_json(operands[i]));
    /* every declared parameter by name; an enum by its choice's name */
    for (int i = 0; d && params && i < d->n_params; i++) {
        const trr_param_info *p = &d->params[i];
        if (p->type == TRR_PARAM_ENUM) {
            const char *c = p->choices;
            for (int k = 0; c && k < (int)params[i]; k++) c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL;
            char name[64] = "?";
            if (c) snprintf(name, sizeof name, "%.*s", (int)strcspn(c, ","), c);
            cJSON_AddStringToObject(args, p->name, name);
        } else if (p->type == TRR_PARAM_BOOL) {
            cJSON_AddBoolToObject(args, p->name, params[i] != 0.0);
        } else {
            cJSON_AddNumberToObject(args, p->name, params[i]);
        }
    }
    /* the config this call ran with; a call rejected before it ran has none */
    if (st == TRR_OK && ctx) {
        cJSON_AddItemToObject(args, "config", trr_json_config(&ctx->last_config));
    }
    char *text = cJSON_PrintUnformatted(e);
    cJSON_Delete(e);
    if (!text) return st;
    pthread_mutex_lock(&lock);
    if (enabled && !opened) {
        /* the path is tried on the first event, so a bad one is reported while the program runs */
        FILE *f = fopen(path, "w");
        if (!f) give_up("opening it");
        else fclose(f), opened = 1;
    }
    if (enabled) {
        if (n_events >= MAX_EVENTS) dropped++;
        else append(text);
        unwritten = 1;
    }
    pthread_mutex_unlock(&lock);
    free(text);
    return st;
}

void trr_trace_flush(void) {
    pthread_mutex_lock(&lock);
    /* nothing new since the last write (a context destroyed, then the exit): the file stands as written, and one
     * the program has moved or removed since is not made again */
    if (enabled && opened && unwritten) {
        unwritten = 0;
        FILE *f = fopen(path, "w");
        if (!f) {
            give_up("opening it");
        } else {
            int ok = fprintf(f, "{\"traceEvents\":[\n%s\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"tool\":"
                                "\"trireme\",\"version\":\"%s\",\"events\":%ld,\"dropped\":%ld,\"device_time\":"
                                "\"%s\"}}\n",
                         events ? events : "", TRR_VERSION_STRING, n_events, dropped,
                         device_time ? "args.device_us: each call timed by the backend's timer (synchronized)"
                                     : "not recorded (dur is host time; TRIREME_TRACE_DEVICE_TIME=1 records it)") > 0;
            if (fclose(f) != 0 || !ok) give_up("writing it");
        }
    }
    pthread_mutex_unlock(&lock);
}
