/* Cache directory, key hashing and atomic file writes shared by the compiling backends (see cache.h). */
#define _POSIX_C_SOURCE 200809L
#include "cache.h"
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* mkdir -p: each missing level is created; an existing one is fine. */
static int make_dirs(const char *path) {
    char tmp[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp) return -1;
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

trr_status trr_cache_dir(trr_context *ctx, char *out_path, size_t cap) {
    const char *env = getenv("TRIREME_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (env && *env)
        n = snprintf(out_path, cap, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(out_path, cap, "%s/trireme", xdg);
    else if (home && *home)
        n = snprintf(out_path, cap, "%s/.cache/trireme", home);
    else
        return trr_error(ctx, TRR_ERR_IO, "no cache directory: set TRIREME_CACHE_DIR (HOME is not set)");
    if (n < 0 || (size_t)n >= cap) return trr_error(ctx, TRR_ERR_IO, "cache directory path too long");
    if (make_dirs(out_path) != 0)
        return trr_error(ctx, TRR_ERR_IO, "cannot create cache directory %s: %s", out_path, strerror(errno));
    return TRR_OK;
}

uint64_t trr_hash_parts(const void *const *parts, const size_t *sizes, int n) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return 0;
    XXH3_64bits_reset(st);
    for (int i = 0; i < n; i++) {
        uint64_t len = sizes[i];
        XXH3_64bits_update(st, &len, sizeof len);
        if (sizes[i]) XXH3_64bits_update(st, parts[i], sizes[i]);
    }
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

trr_status trr_file_read(const char *path, void **out_data, size_t *out_size) {
    FILE *f = fopen(path, "rb");
    if (!f) return TRR_ERR_IO;
    trr_status st = TRR_ERR_IO;
    char *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        if (len >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            data = malloc((size_t)len + 1);
            if (data && fread(data, 1, (size_t)len, f) == (size_t)len) {
                data[len] = '\0';
                *out_data = data;
                *out_size = (size_t)len;
                data = NULL;
                st = TRR_OK;
            }
        }
    }
    free(data);
    fclose(f);
    return st;
}

trr_status trr_file_write_atomic(trr_context *ctx, const char *path, const void *data, size_t size) {
    char tmp[4200];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) return trr_error(ctx, TRR_ERR_IO, "path too long: %s", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return trr_error(ctx, TRR_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    int ok = fwrite(data, 1, size, f) == size;
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        remove(tmp);
        return trr_error(ctx, TRR_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
    return TRR_OK;
}

trr_status trr_dump_file(trr_context *ctx, const char *name, const void *data, size_t size) {
    const char *dir = getenv("TRIREME_DUMP_DIR");
    if (!dir || !*dir) return TRR_OK;
    if (make_dirs(dir) != 0)
        return trr_error(ctx, TRR_ERR_IO, "cannot create TRIREME_DUMP_DIR %s: %s", dir, strerror(errno));
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path) return trr_error(ctx, TRR_ERR_IO, "dump path too long");
    return trr_file_write_atomic(ctx, path, data, size);
}
