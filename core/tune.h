/* The tuning database: the fastest checked config per (backend, device, driver, op, dtype, layout, shape
 * bucket), written by `trireme tune` and read by every call.
 *
 * One JSON file: TRIREME_TUNE_DB if set, else trr_cache_dir()/tune.json.
 *   {"format": "trireme-tune", "version": 2, "entries": [
 *     {"backend": "cuda", "device": "NVIDIA H100 80GB HBM3", "driver": "580.65", "op": "matmul",
 *      "in": "f16", "out": "f16", "trans_a": false, "trans_b": true, "tf32": false,
 *      "bucket": [4096, 4096, 4096], "shape": [4096, 4096, 4096],
 *      "config": {"block_m": 128, ..., "variant": "wgmma"}, "ms": 0.21,
 *      "default_config": {...}, "default_ms": 0.25, "candidates": 19, "tuned_at": "2025-01-01T00:00:00Z"}]}
 * A bucket is the call's shape (matmul M, N, K; other ops rows, cols, 1) with each dimension rounded up to a
 * number of at most three significant bits: four buckets an octave, ..., 1024, 1280, 1536, 1792, 2048, ... (no
 * cap: a row of 2^23 columns is a bucket of its own), so one entry serves every shape near the one tuned, and a
 * tile that wins at 1536 but loses at 1152 has a bucket to say so. (Version 1 of the file kept one bucket an
 * octave, a power of two; reading one keys each entry by the bucket of the shape it was timed at, and the next
 * write makes it version 2.) A call whose bucket was not tuned (by the user, nor by a shipped table) takes the
 * entry of the nearest tuned bucket (the smallest sum of log2 distances over the three dimensions) with the same
 * backend, device, driver, op, dtypes and layout flags; for a matmul, without its split_k (the backend splits K
 * for the call's own grid).
 * The config's variant (its kernel family) is part of the entry: an override that names a variant (and nothing
 * else) looks up only entries of that variant.
 *
 * Thread safety: every function here may be called from any thread; the loaded database is shared by all
 * contexts of the process behind one lock. */
#ifndef TRR_TUNE_H
#define TRR_TUNE_H

#include "backend.h"
#include "config_fields.h"

#include <stddef.h>
#include <stdint.h>

#define TRR_TUNE_DB_VERSION 2
/* Largest value a config field may hold in the file; anything above is a corrupt file, not a config. */
#define TRR_TUNE_FIELD_MAX TRR_CONFIG_FIELD_MAX

typedef struct trr_tune_key {
    char backend[16];
    char device[128];
    char driver[64];
    trr_op op;            /* TRR_OP_LIMIT for an op this process has not defined (a user op, docs/custom-ops.md,
                             whose library is not loaded): kept by op_name for the next write, matched by nothing */
    char op_name[48];
    trr_dtype in_dtype, out_dtype;
    int trans_a, trans_b; /* matmul operand layouts; 0 for other ops */
    int tf32;             /* matmul with TRR_MATMUL_ALLOW_TF32 */
    int64_t bucket[3];
} trr_tune_key;

typedef struct trr_tune_entry {
    trr_tune_key key;
    int64_t shape[3];           /* the shape that was timed */
    trr_config config;          /* the fastest checked config, every used field filled */
    double ms;                  /* its median time */
    trr_config default_config;  /* what the call runs with untuned (backend heuristic + op table) */
    double default_ms;          /* its median time, for the gain in reports */
    int candidates;             /* configs timed */
    char tuned_at[32];          /* UTC, ISO 8601; "" when unknown */
} trr_tune_entry;

/* The tuned config for call on ctx's device: the user's entry of the call's bucket, else the shipped tables' entry of
 * that bucket, else the user's entry of the nearest tuned bucket (see above); variant non-zero asks for entries
 * of that variant alone. Fills *out_config and returns 1, else
 * 0. The config is not judged here: trr_call_resolve_config asks the backend once, and on a rejection calls
 * trr_tune_rejected. where (may be NULL) receives "bucket [..]" of the entry, for that message. Never fails the
 * call: a missing, stale (other driver version) or corrupt database is ignored (with a one-time warning for the
 * last two). */
int trr_tune_lookup(trr_context *ctx, const trr_call *call, int variant, trr_config *out_config, char *where,
                    size_t where_cap);
/* The shipped tables alone (the JSON files of tuning/, embedded in the library): the entry of key's own bucket, any
 * driver version. Returns 1 and fills *out_config (and where: "the shipped tuning table tuning/FILE: ...") or 0.
 * trr_tune_lookup falls back to it when the user's database has no entry for the call. */
int trr_tune_shipped_find(const trr_tune_key *key, int variant, trr_config *out_config, char *where, size_t where_cap);
/* How many entries the shipped tables hold. */
int trr_tune_shipped_count(void);
/* The shipped tables' entries, *out_count of them (NULL and 0 when none parse): fixed for the life of the process,
 * so a backend's compile check can compile every kernel they name. */
const trr_tune_entry *trr_tune_shipped_entries(int *out_count);
/* Reports once per version of the database file (stderr) that the backend rejected the entry at where, and
 * why; the call then runs on the heuristic's config. */
void trr_tune_rejected(const char *where, const char *why);

/* The key a call on ctx looks up. */
void trr_tune_key_of(const trr_context *ctx, const trr_call *call, trr_tune_key *out_key);
/* The shape bucket of a call (matmul M, N, K; other ops rows, cols, 1) and the unbucketed shape. */
void trr_tune_shape_of(const trr_call *call, int64_t out_shape[3]);
void trr_tune_bucket_of(const trr_call *call, int64_t out_bucket[3]);
/* The bucket of one dimension n >= 1: the smallest number >= n with at most three significant bits. */
int64_t trr_tune_bucket_round(int64_t n);

/* TRIREME_TUNE_DB, else trr_cache_dir()/tune.json. TRR_ERR_IO (recorded on ctx) when neither can be had. */
trr_status trr_tune_db_path(trr_context *ctx, char *out_path, size_t cap);

/* Merges entries into the database at path (NULL: trr_tune_db_path) and writes it atomically: an entry
 * replaces the one with the same key, every other existing entry is kept. An existing file that does not
 * parse is moved aside to "<path>.corrupt" first (its name goes into *out_note when out_note is not NULL)
 * rather than lost. The process's cached database is dropped, so the next lookup reads the new file. */
trr_status trr_tune_db_store(trr_context *ctx, const char *path, const trr_tune_entry *entries, int n,
                             char *out_note, size_t note_cap);

/* Reads and checks a database file. TRR_ERR_IO when it cannot be read; TRR_ERR_INVALID_ARGUMENT when it is not
 * a valid database (why says where). *out_entries is malloc'd (free() it). */
trr_status trr_tune_db_load(const char *path, trr_tune_entry **out_entries, int *out_count, char *why,
                            size_t why_cap);
/* The same from a string already in memory. */
trr_status trr_tune_db_parse(const char *text, trr_tune_entry **out_entries, int *out_count, char *why,
                             size_t why_cap);
/* The JSON document for entries, malloc'd (free() it). */
trr_status trr_tune_db_format(const trr_tune_entry *entries, int n, char **out_text);

/* Drops the process's cached database and its warnings: the next lookup resolves the path and reads the file
 * again. For tests and for tools that change TRIREME_TUNE_DB. */
void trr_tune_reset(void);

/* ---- completing and judging configs (config_resolve.c) ---- */

/* The config call runs with when nothing overrides it and no tuning database is read: the backend's
 * heuristic, then the op table's defaults. The baseline a tuned config is compared with. */
/* The config fields a call of op on ctx's backend reads: the op table's config_fields, less those the backend's
 * kernels ignore (trr_backend.config_fields_used). A field outside them is a no-op on this device: the tuner does
 * not sweep it and the CLI says an override of it is ignored. */
unsigned trr_config_fields_used(const trr_context *ctx, trr_op op);
void trr_tune_default_config(trr_context *ctx, const trr_call *call, trr_config *out_config);

/* Completes listed the way the call path completes an override (backend heuristic, then op table). */
void trr_tune_complete_config(trr_context *ctx, const trr_call *call, const trr_config *listed,
                              trr_config *out_config);

/* 1 when the call's backend accepts config for it (supports and check_config); else 0 with the backend's
 * reason in why. Leaves the reason as the last error on ctx as well. */
int trr_tune_config_runs(trr_context *ctx, const trr_call *call, const trr_config *config, char *why, size_t cap);

#endif
