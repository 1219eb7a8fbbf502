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

#include "tune.h"

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

static int same_rest(const trr_tune_key *a, const trr_tune_key *b) {
    return a->op == b->op && a->in_dtype == b->in_dtype && a->out_dtype == b->out_dtype && a->trans_a == b->trans_a &&
           a->trans_b == b->trans_b && a->tf32 == b->tf32 && a->bucket[0] == b->bucket[0] &&
           a->bucket[1] == b->bucket[1] && a->bucket[2] == b->bucket[2];
}

/* Under db_lock: the entry for key, or -1. Warns once when the device has entries only for another driver. */
static int find(const trr_tune_key *key) {
    int same_driver = 0;
    const char *other_driver = NULL;
    for (int i = 0; i < db.count; i++) {
        const trr_tune_key *k = &db.entries[i].key;
        if (strcmp(k->backend, key->backend) != 0 || strcmp(k->device, key->device) != 0) continue;
        if (strcmp(k->driver, key->driver) != 0) {
            other_driver = k->driver;
            continue;
        }
        same_driver = 1;
        if (same_rest(k, key)) return i;
    }
    if (other_driver && !same_driver && !db.warned_stale) {
        fprintf(stderr,
                "trireme: the tuning database %s was made for %s %s with driver %s, and this driver is %s: its "
                "entries are ignored (run `trireme tune` again)\n",
                db.path, key->backend, key->device, other_driver, key->driver);
        db.warned_stale = 1;
    }
    return -1;
}

int trr_tune_lookup(trr_context *ctx, const trr_call *call, trr_config *out_config) {
    if (!ctx || !call || !out_config || !ctx->backend) return 0;
    trr_tune_key key;
    trr_tune_key_of(ctx, call, &key);
    trr_config tuned;
    pthread_mutex_lock(&db_lock);
    refresh();
    int i = find(&key);
    if (i >= 0) tuned = db.entries[i].config;
    pthread_mutex_unlock(&db_lock);
    if (i < 0) return 0;

    /* An entry written by an older backend may name a config this one no longer runs: use the heuristic then,
     * and leave the context's last error as it was (the check records its reason there). */
    trr_config full;
    trr_tune_complete_config(ctx, call, &tuned, &full);
    const trr_status saved_status = ctx->last_status;
    const size_t saved_len = strlen(ctx->last_error);
    char small[512]; /* the usual case: no error or a short one, so a hit costs no allocation */
    char *saved = saved_len < sizeof small ? small : malloc(saved_len + 1);
    if (saved) memcpy(saved, ctx->last_error, saved_len + 1);
    char why[256] = "";
    const int runs = trr_tune_config_runs(ctx, call, &full, why, sizeof why);
    if (!runs) {
        ctx->last_status = saved_status;
        if (saved) memcpy(ctx->last_error, saved, saved_len + 1);
        else ctx->last_error[0] = '\0';
        pthread_mutex_lock(&db_lock);
        if (!db.warned_rejected)
            fprintf(stderr, "trireme: the tuning database %s has a config for this call that the backend rejects "
                            "(%s); using the default instead (run `trireme tune` again)\n", db.path, why);
        db.warned_rejected = 1;
        pthread_mutex_unlock(&db_lock);
    }
    if (saved != small) free(saved);
    if (!runs) return 0;
    *out_config = tuned;
    return 1;
}
