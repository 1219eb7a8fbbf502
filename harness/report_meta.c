/* Report self-description (report_meta.h). */
#define _POSIX_C_SOURCE 200809L /* gethostname, gmtime_r */
#include "report_meta.h"

#ifdef TRR_NO_BUILD_INFO
#define TRR_BUILD_COMMIT "" /* the shared library's copy: the library stays the same across checkouts */
#else
#include "trr_build_info.h" /* generated at build time: TRR_BUILD_COMMIT */
#endif

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *trr_build_commit(void) { return TRR_BUILD_COMMIT; }

static int needs_quotes(const char *s) {
    if (!*s) return 1;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+^@%", *s)) return 1;
    return 0;
}

void trr_report_command_line(const char *prog, int argc, char *const *argv, char *out, size_t cap) {
    if (!cap) return;
    size_t len = (size_t)snprintf(out, cap, "%s", prog ? prog : "");
    for (int i = 0; i < argc && len < cap; i++) {
        const char *a = argv[i] ? argv[i] : "";
        if (len) out[len++] = ' ';
        if (needs_quotes(a)) {
            /* single quotes; an embedded ' becomes '\'' */
            if (len < cap) out[len++] = '\'';
            for (const char *p = a; *p && len < cap; p++) {
                if (*p == '\'') len += (size_t)snprintf(out + len, cap - len, "'\\''");
                else out[len++] = *p;
            }
            if (len < cap) out[len++] = '\'';
        } else {
            len += (size_t)snprintf(out + len, cap - len, "%s", a);
        }
    }
    if (len >= cap) {
        if (cap > 4) memcpy(out + cap - 4, "...", 4);
        else out[cap - 1] = '\0';
    } else {
        out[len] = '\0';
    }
}

void trr_report_date_now(char *out, size_t cap) {
    time_t now = time(NULL);
    struct tm tm_utc;
    gmtime_r(&now, &tm_utc);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
}

static void add_string_or_null(cJSON *obj, const char *key, const char *v) {
    if (v && *v) cJSON_AddStringToObject(obj, key, v);
    else cJSON_AddNullToObject(obj, key);
}

void trr_report_add_meta(cJSON *obj, const char *tool, const char *command_line, const char *date,
                         const trr_device_info *const *devices, int n_devices) {
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    cJSON_AddStringToObject(obj, "tool", tool);
    cJSON_AddStringToObject(obj, "version", TRR_VERSION_STRING);
    add_string_or_null(obj, "command_line", command_line);
    add_string_or_null(obj, "host", host);
    add_string_or_null(obj, "commit", trr_build_commit());
    add_string_or_null(obj, "date", date);
    cJSON *uuids = cJSON_AddArrayToObject(obj, "device_uuids");
    for (int i = 0; uuids && i < n_devices; i++)
        cJSON_AddItemToArray(uuids, devices[i]->uuid[0] ? cJSON_CreateString(devices[i]->uuid) : cJSON_CreateNull());
}
