/* Cache directory, key hashing and atomic file writes shared by the compiling backends (see cache.h). */
#define _POSIX_C_SOURCE 200809L
#include "cache.h"
#include "backend.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
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

/* Regular files only: a FIFO would block the open (or the read) forever and a directory cannot be read, so the
 * file is opened without blocking and its type checked before anything is read. */
static trr_status read_regular(const char *path, void **out_data, size_t *out_size, char *why, size_t cap,
                               int *out_irregular) {
    *out_irregular = 0;
    if (!path || !out_data || !out_size) {
        if (why && cap) snprintf(why, cap, "no path or output given");
        return TRR_ERR_IO;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (why && cap) snprintf(why, cap, "%s", strerror(errno));
        return TRR_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        if (why && cap) snprintf(why, cap, "fstat: %s", strerror(errno));
        close(fd);
        return TRR_ERR_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        *out_irregular = 1;
        if (why && cap)
            snprintf(why, cap, "%s", S_ISDIR(st.st_mode)    ? "is a directory"
                                     : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
                                                            : "not a regular file");
        close(fd);
        return TRR_ERR_IO;
    }
    size_t cap_bytes = st.st_size > 0 ? (size_t)st.st_size : 0;
    char *data = malloc(cap_bytes + 1);
    if (!data) {
        if (why && cap) snprintf(why, cap, "out of host memory for its %zu bytes", cap_bytes);
        close(fd);
        return TRR_ERR_IO;
    }
    size_t len = 0;
    for (;;) {
        if (len == cap_bytes) { /* the file grew since fstat: read on in larger steps */
            size_t more = cap_bytes < 4096 ? 4096 : cap_bytes;
            char *bigger = cap_bytes + more + 1 > cap_bytes ? realloc(data, cap_bytes + more + 1) : NULL;
            if (!bigger) {
                if (why && cap) snprintf(why, cap, "out of host memory after %zu bytes", len);
                free(data);
                close(fd);
                return TRR_ERR_IO;
            }
            data = bigger;
            cap_bytes += more;
        }
        ssize_t got = read(fd, data + len, cap_bytes - len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            if (why && cap) snprintf(why, cap, "read: %s", strerror(errno));
            free(data);
            close(fd);
            return TRR_ERR_IO;
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    close(fd);
    data[len] = '\0';
    *out_data = data;
    *out_size = len;
    return TRR_OK;
}

trr_status trr_file_read_why(const char *path, void **out_data, size_t *out_size, char *why, size_t cap) {
    int irregular;
    return read_regular(path, out_data, out_size, why, cap, &irregular);
}

trr_status trr_file_read(const char *path, void **out_data, size_t *out_size) {
    char why[128] = "";
    int irregular;
    trr_status st = read_regular(path, out_data, out_size, why, sizeof why, &irregular);
    /* a missing entry is a normal cache miss; something else in its place is worth a word, and then a miss */
    if (irregular) trr_log(TRR_LOG_WARNING, "ignoring the cache file %s: %s", path, why);
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
