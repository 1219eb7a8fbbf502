/* Reading the tuning database on every call (tune.h): the file is parsed once per process and kept; its
 * path and modification time are looked at again at most once a second, so a call costs a lock and a scan of
 * the entries, not a system call, and a file rewritten by `trireme tune` is picked up by running programs.
 *
 * The warnings below are the only output library code writes to stderr: a database that is silently ignored
 * would leave a program mysteriously slower, and a lookup has no status to return (it must never fail the
 * call). Each is printed once per version of the file. */
#define _POSIX_C_SOURCE 200809L
#include "tune.h"
#include "clock.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define RECHECK_SECONDS 1.0

typedef struct db_cache {
    int resolved;          /* path below is set */
    char env[4096];        /* TRIREME_TUNE_DB when the path was resolved */
    char path[4096];
    int exists;
    struct timespec mtime; /* of the version loaded */
    off_t size;
    ino_t ino;
    trr_tune_entry *entries;
    int count;
    double next_check;
    int warned_corrupt, warned_stale, warned_rejected;
} db_cache;

static pthread_mutex_t db_lock = PTHREAD_MUTEX_INITIALIZER;
static db_cache db;


static void drop_entries(void) {
    free(db.entries);
    db.entries = NULL;
    db.count = 0;
    db.warned_corrupt = db.warned_stale = db.warned_rejected = 0;
}

void trr_tune_reset(void) {
    pthread_mutex_lock(&db_lock);
    drop_entries();
    memset(&db, 0, sizeof db);
    pthread_mutex_unlock(&db_lock);
}

/* Under db_lock. Brings the cache up to date with the file when the recheck interval has passed. */
static void refresh(void) {
    double now = trr_now_s();
    if (db.resolved && now < db.next_check) return;
    db.next_check = now + RECHECK_SECONDS;
    const char *env = getenv("TRIREME_TUNE_DB");
    if (!env) env = "";
    if (!db.resolved || strcmp(env, db.env) != 0) {
        drop_entries();
        db.exists = 0;
        snprintf(db.env, sizeof db.env, "%s", env);
        /* no context here: a missing cache directory just means no database */
        if (trr_tune_db_path(NULL, db.path, sizeof db.path) != TRR_OK) db.path[0] = '\0';
        db.resolved = 1;
    }
    struct stat st;
    if (!db.path[0] || stat(db.path, &st) != 0) { /* a missing database is normal and silent */
        if (db.exists) drop_entries();
        db.exists = 0;
        return;
    }
    if (db.exists && st.st_mtim.tv_sec == db.mtime.tv_sec && st.st_mtim.tv_nsec == db.mtime.tv_nsec &&
        st.st_size == db.size && st.st_ino == db.ino)
        return;
    drop_entries();
    db.exists = 1;
    db.mtime = st.st_mtim;
    db.size = st.st_size;
    db.ino = st.st_ino;
    char why[320] = "";
    trr_tune_entry *entries = NULL;
    int count = 0;
    trr_status s = trr_tune_db_load(db.path, &entries, &count, why, sizeof why);
    if (s != TRR_OK) {
        if (!db.warned_corrupt)
            fprintf(stderr, "trireme: ignoring the tuning database %s: %s (run `trireme tune` to rebuild it)\n",
                    db.path, why);
        db.warned_corrupt = 1;
        return;
    }
    db.entries = entries;
    db.count = count;
}

/* Everything of the key but the bucket: what an entry of another bucket must share to stand in. */
static int same_rest(const trr_tune_key *a, const trr_tune_key *b) {
    return a->op == b->op && a->in_dtype == b->in_dtype && a->out_dtype == b->out_dtype && a->trans_a == b->trans_a &&
           a->trans_b == b->trans_b && a->tf32 == b->tf32;
}

/* How far apart two buckets are: the sum over the dimensions of |log2 a - log2 b| (buckets are powers of two). */
static double bucket_distance(const int64_t a[3], const int64_t b[3]) {
    double d = 0;
    for (int i = 0; i < 3; i++) d += fabs(log2((double)a[i]) - log2((double)b[i]));
    return d;
}

/* Under db_lock: the entry for key (of variant, when non-zero), else the one of the nearest bucket, or -1. Ties
 * go to the entry listed first, so the choice does not depend on anything but the file. Warns once when the
 * device has entries only for another driver. */
static int find(const trr_tune_key *key, int variant) {
    int same_driver = 0, best = -1;
    double best_d = INFINITY;
    const char *other_driver = NULL;
    for (int i = 0; i < db.count; i++) {
        const trr_tune_key *k = &db.entries[i].key;
        if (strcmp(k->backend, key->backend) != 0 || strcmp(k->device, key->device) != 0) continue;
        if (strcmp(k->driver, key->driver) != 0) {
            other_driver = k->driver;
            continue;
        }
        same_driver = 1;
        if (!same_rest(k, key)) continue;
        if (variant && db.entries[i].config.variant != variant) continue;
        double d = bucket_distance(k->bucket, key->bucket);
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    if (other_driver && !same_driver && !db.warned_stale) {
        fprintf(stderr,
                "trireme: the tuning database %s was made for %s %s with driver %s, and this driver is %s: its "
                "entries are ignored (run `trireme tune` again)\n",
                db.path, key->backend, key->device, other_driver, key->driver);
        db.warned_stale = 1;
    }
    return best;
}

int trr_tune_lookup(trr_context *ctx, const trr_call *call, int variant, trr_config *out_config, char *where,
                    size_t where_cap) {
    if (!ctx || !call || !out_config || !ctx->backend) return 0;
    pthread_mutex_lock(&db_lock);
    refresh();
    const int any = db.count > 0;
    pthread_mutex_unlock(&db_lock);
    /* no database (the common case): no key to build, which was half of a small op's host time */
    if (!any) return 0;
    trr_tune_key key;
    trr_tune_key_of(ctx, call, &key);
    pthread_mutex_lock(&db_lock);
    int i = find(&key, variant);
    if (i >= 0) {
        *out_config = db.entries[i].config;
        if (where && where_cap) {
            const int64_t *b = db.entries[i].key.bucket;
            snprintf(where, where_cap, "%s: the entry of bucket [%lld, %lld, %lld] for a call of bucket [%lld, %lld, %lld]",
                     db.path, (long long)b[0], (long long)b[1], (long long)b[2], (long long)key.bucket[0],
                     (long long)key.bucket[1], (long long)key.bucket[2]);
        }
    }
    pthread_mutex_unlock(&db_lock);
    return i >= 0;
}

void trr_tune_rejected(const char *where, const char *why) {
    pthread_mutex_lock(&db_lock);
    if (!db.warned_rejected)
        fprintf(stderr, "trireme: tuning database %s: the backend rejects that config (%s); using its heuristic "
                        "instead (run `trireme tune` again)\n", where ? where : "?", why ? why : "");
    db.warned_rejected = 1;
    pthread_mutex_unlock(&db_lock);
}
