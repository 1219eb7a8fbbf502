/* Reading the tuning database on every call (tune.h): the file is parsed once per process and kept; its
 * path and modification time are looked at again at most once a second, so a call costs a lock and a scan of
 * the entries, not a system call, and a file rewritten by `trireme tune` is picked up by running programs.
 * Behind it stand the tables shipped with the library (the JSON files of tuning/, embedded at build time): what `trireme
 * tune` found on the GPUs the project measures, so a fresh install runs tuned configs there. The user's own
 * database wins where it has an entry for the call's device; the shipped tables match any driver version (they
 * are a measured starting point, not a record of this machine) and only their own buckets: a shape no shipped
 * entry was tuned for keeps the backend's heuristic, which already knows those GPUs, rather than the config of
 * some other shape.
 *
 * The warnings below go to the program's log handler (trr_log_set): a database that is silently ignored would
 * leave a program mysteriously slower, and a lookup has no status to return (it must never fail the call).
 * Each is given once per version of the file. */
#define _POSIX_C_SOURCE 200809L
#include "tune.h"
#include "clock.h"
#include "embedded.h"
#include "log.h"
#include "op_table.h"

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
    int shipped_off; /* TRIREME_TUNE_SHIPPED=0: the heuristic where the user's database has nothing */
} db_cache;

static pthread_mutex_t db_lock = PTHREAD_MUTEX_INITIALIZER;
static db_cache db;

/* the JSON files of tuning/, as core/CMakeLists.txt embeds them */
extern const trr_embedded_file trr_shipped_tuning[];
extern const size_t trr_shipped_tuning_count;

/* The shipped tables' entries, parsed once (under db_lock); each remembers the file it came from. */
static struct {
    int parsed;
    trr_tune_entry *entries;
    const char **files;
    int count;
} shipped;


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
    const char *off = getenv("TRIREME_TUNE_SHIPPED");
    db.shipped_off = off && !strcmp(off, "0");
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
            trr_log(TRR_LOG_WARNING, "ignoring the tuning database %s: %s (run `trireme tune` to rebuild it)",
                    db.path, why);
        db.warned_corrupt = 1;
        return;
    }
    db.entries = entries;
    db.count = count;
}

/* Under db_lock. A shipped table that does not parse is a build defect the tests catch
 * (test_tune_shipped_table); at run time it is skipped rather than failing calls. */
static void parse_shipped(void) {
    if (shipped.parsed) return;
    shipped.parsed = 1;
    for (size_t f = 0; f < trr_shipped_tuning_count; f++) {
        trr_tune_entry *e = NULL;
        int n = 0;
        char why[320];
        if (trr_tune_db_parse((const char *)trr_shipped_tuning[f].data, &e, &n, why, sizeof why) != TRR_OK) continue;
        trr_tune_entry *grown = realloc(shipped.entries, (size_t)(shipped.count + n) * sizeof *grown);
        const char **names = realloc(shipped.files, (size_t)(shipped.count + n) * sizeof *names);
        if (grown) shipped.entries = grown;
        if (names) shipped.files = names;
        if (!grown || !names) {
            free(e);
            return;
        }
        memcpy(shipped.entries + shipped.count, e, (size_t)n * sizeof *e);
        for (int i = 0; i < n; i++) shipped.files[shipped.count + i] = trr_shipped_tuning[f].name;
        shipped.count += n;
        free(e);
    }
}

/* Everything of the key but the bucket: what an entry of another bucket must share to stand in. */
static int same_rest(const trr_tune_key *a, const trr_tune_key *b) {
    return a->op == b->op && a->in_dtype == b->in_dtype && a->out_dtype == b->out_dtype && a->trans_a == b->trans_a &&
           a->trans_b == b->trans_b && a->tf32 == b->tf32;
}

/* How far apart two buckets are: the sum over the dimensions of |log2 a - log2 b| (an octave is 1). */
static double bucket_distance(const int64_t a[3], const int64_t b[3]) {
    double d = 0;
    for (int i = 0; i < 3; i++) d += fabs(log2((double)a[i]) - log2((double)b[i]));
    return d;
}

/* Under db_lock: the index in entries of key's entry (of variant, when non-zero), else (unless exact) of the one
 * of the nearest bucket, or -1. Ties go to the entry listed first, so the choice does not depend on anything but
 * the table.
 * any_driver: the shipped tables, whose entries stand for every driver version; otherwise an entry of another
 * driver is stale, and *other_driver (when not NULL) names it if the device has entries only for other drivers. */
static int nearest(const trr_tune_entry *entries, int count, const trr_tune_key *key, int variant, int any_driver,
                   int exact, const char **other_driver) {
    int same_driver = 0, best = -1;
    double best_d = INFINITY;
    const char *other = NULL;
    for (int i = 0; i < count; i++) {
        const trr_tune_key *k = &entries[i].key;
        if (strcmp(k->backend, key->backend) != 0 || strcmp(k->device, key->device) != 0) continue;
        if (!any_driver && strcmp(k->driver, key->driver) != 0) {
            other = k->driver;
            continue;
        }
        same_driver = 1;
        if (!same_rest(k, key)) continue;
        if (variant && entries[i].config.variant != variant) continue;
        double d = bucket_distance(k->bucket, key->bucket);
        if (exact && d > 0) continue;
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    if (other_driver) *other_driver = same_driver ? NULL : other;
    return best;
}

/* Under db_lock: nearest() over the user's database (its entry of key's own bucket alone when exact), with its
 * one-time warning for a database of another driver. */
static int find(const trr_tune_key *key, int variant, int exact) {
    const char *other_driver = NULL;
    const int best = nearest(db.entries, db.count, key, variant, 0, exact, &other_driver);
    if (other_driver && !db.warned_stale) {
        trr_log(TRR_LOG_WARNING,
                "the tuning database %s was made for %s %s with driver %s, and this driver is %s: its "
                "entries are ignored (run `trireme tune` again)",
                db.path, key->backend, key->device, other_driver, key->driver);
        db.warned_stale = 1;
    }
    return best;
}

/* Under db_lock: whether a shipped table has any entry for the context's backend and device (most devices have
 * none, and then no key is built). */
static int shipped_has_device(const trr_context *ctx) {
    parse_shipped();
    for (int i = 0; i < shipped.count; i++)
        if (strcmp(shipped.entries[i].key.backend, ctx->backend->name) == 0 &&
            strcmp(shipped.entries[i].key.device, ctx->info.name) == 0)
            return 1;
    return 0;
}

static void describe(char *where, size_t where_cap, const char *source, const trr_tune_entry *e,
                     const trr_tune_key *key) {
    if (!where || !where_cap) return;
    const int64_t *b = e->key.bucket;
    snprintf(where, where_cap, "%s: the entry of bucket [%lld, %lld, %lld] for a call of bucket [%lld, %lld, %lld]",
             source, (long long)b[0], (long long)b[1], (long long)b[2], (long long)key->bucket[0],
             (long long)key->bucket[1], (long long)key->bucket[2]);
}

int trr_tune_shipped_find(const trr_tune_key *key, int variant, trr_config *out_config, char *where,
                          size_t where_cap) {
    pthread_mutex_lock(&db_lock);
    parse_shipped();
    const int i = nearest(shipped.entries, shipped.count, key, variant, 1, 1, NULL);
    if (i >= 0) {
        *out_config = shipped.entries[i].config;
        char source[160];
        snprintf(source, sizeof source, "the shipped tuning table tuning/%s", shipped.files[i]);
        describe(where, where_cap, source, &shipped.entries[i], key);
    }
    pthread_mutex_unlock(&db_lock);
    return i >= 0;
}

const trr_tune_entry *trr_tune_shipped_entries(int *out_count) {
    pthread_mutex_lock(&db_lock);
    parse_shipped();
    const trr_tune_entry *e = shipped.entries; /* parsed once and never changed after */
    *out_count = shipped.count;
    pthread_mutex_unlock(&db_lock);
    return e;
}

int trr_tune_shipped_count(void) {
    int n = 0;
    trr_tune_shipped_entries(&n);
    return n;
}

int trr_tune_lookup(trr_context *ctx, const trr_call *call, int variant, trr_config *out_config, char *where,
                    size_t where_cap) {
    if (!ctx || !call || !out_config || !ctx->backend) return 0;
    pthread_mutex_lock(&db_lock);
    refresh();
    const int use_shipped = !db.shipped_off;
    const int any = db.count > 0 || (use_shipped && shipped_has_device(ctx));
    pthread_mutex_unlock(&db_lock);
    /* neither the user's database nor a shipped table knows this device (the common case): no key to build,
     * which was half of a small op's host time */
    if (!any) return 0;
    trr_tune_key key;
    trr_tune_key_of(ctx, call, &key);
    /* The user's entry of the call's bucket, else the shipped table's, else the user's nearest bucket: a stand-in
     * carries another shape's tile and splits, which must not displace a config measured at this bucket (tuning
     * 16 x 14336 x 4096 alone would otherwise run 16 x 4096 x 4096 unsplit, a third slower than its shipped entry). */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && use_shipped && trr_tune_shipped_find(&key, variant, out_config, where, where_cap)) return 1;
        pthread_mutex_lock(&db_lock);
        const int i = find(&key, variant, pass == 0);
        if (i >= 0) {
            *out_config = db.entries[i].config;
            describe(where, where_cap, db.path, &db.entries[i], &key);
            /* a stand-in's tile serves a neighbouring shape, its K split does not: the split follows how many
             * tiles the shape makes of the device (tuned at 16 x 14336 x 4096, split 1 would leave 16 x 4096 x
             * 4096's 32 tiles on a quarter of an H200), so the backend chooses it for this call */
            if (pass == 1 && trr_op_desc_get(call->op)->shape == TRR_SHAPE_MATMUL) out_config->split_k = 0;
        }
        pthread_mutex_unlock(&db_lock);
        if (i >= 0) return 1;
    }
    return 0;
}

void trr_tune_rejected(const char *where, const char *why) {
    pthread_mutex_lock(&db_lock);
    if (!db.warned_rejected)
        trr_log(TRR_LOG_WARNING, "tuning database %s: the backend rejects that config (%s); using its heuristic "
                        "instead (run `trireme tune` again)", where ? where : "?", why ? why : "");
    db.warned_rejected = 1;
    pthread_mutex_unlock(&db_lock);
}
