/* The tuner: for one op call shape on one context, time every candidate config (tune_space.h) after checking
 * its output against the float64 reference, and return the fastest as a tuning database entry (tune.h).
 *
 * Library code: it never prints. Progress goes to a callback; the CLI (cli/cmd_tune.c) prints it.
 * Thread safety: one tuning run per context at a time, like every context call. */
#ifndef TRR_TUNER_H
#define TRR_TUNER_H

#include "cases.h"
#include "tune.h"

#include <stddef.h>
#include <stdint.h>

/* One shape to tune. Operands are packed (the output sits between guard bytes). */
typedef struct trr_tune_job {
    trr_op op;
    trr_dtype in_dtype, out_dtype;
    int64_t rows, cols;   /* copy/add/gelu: rows x cols (rows = 1: a flat vector); rgb_to_grey: H x W;
                             softmax, row_sum: M x N */
    int64_t m, n, k;      /* matmul */
    int trans_a, trans_b; /* matmul: A stored as [K,M], B stored as [N,K] */
    int allow_tf32;       /* matmul f32: TRR_MATMUL_ALLOW_TF32 */
} trr_tune_job;

typedef struct trr_tune_progress {
    const trr_tune_job *job;
    int index, total;          /* this candidate (1-based) of the candidates to time, the default first */
    int checking;              /* 1: the check pass (ms < 0; note empty when it passed), 0: the timing pass */
    const trr_config *config;  /* the config as run */
    double ms;                 /* its median; < 0 when it failed the check or could not run */
    const char *note;          /* why it failed, was cut short, or ""; never NULL */
    double best_ms;            /* best so far; < 0 while none */
    const trr_config *best;    /* NULL while none */
    double elapsed_s, left_s;  /* for this job; left_s is an estimate */
} trr_tune_progress;

typedef void (*trr_tune_progress_fn)(void *user, const trr_tune_progress *progress);

typedef struct trr_tune_options {
    int reps;                     /* timed runs per candidate (median); 0: 10 */
    int warmup;                   /* untimed runs before them, the checked run included; 0: 2 */
    const trr_config *only_config;/* time this config alone against the default, and keep it if it passes */
    trr_tune_progress_fn progress;/* optional */
    void *user;
    uint64_t seed;                /* inputs */
} trr_tune_options;

typedef struct trr_tune_outcome {
    trr_tune_entry entry;     /* what goes into the database (valid on TRR_OK) */
    int listed;               /* candidates in the space */
    int dropped;              /* dropped before running (device limits, shape, check_config) */
    int failed;               /* ran but failed the reference check, or failed to run */
    int timed;
    char first_failure[320];  /* the first check failure, for the report; "" when none */
} trr_tune_outcome;

/* Tunes one job on ctx. TRR_OK with out->entry filled when at least one config passed its check (the default
 * counts); TRR_ERR_UNSUPPORTED when the backend cannot run the op or dtype at all; TRR_ERR_MISMATCH when no
 * config passed the check; other statuses for failures of the device or of host memory. The context's config
 * override for the op is restored before returning. */
trr_status trr_tune_run(trr_context *ctx, const trr_tune_job *job, const trr_tune_options *options,
                        trr_tune_outcome *out);

/* Parses the named form "block_m=128,threads=256,variant=coop_khr" (config_fields.h; fields left out are 0, the
 * backend's choice), or the positional "BM,BN,BK,GM,THREADS,STAGES,VEC,SPLITK" (up to eight non-negative
 * integers, an empty one 0: "64,64,,,256"). TRR_ERR_INVALID_ARGUMENT (recorded on the thread) for anything
 * else. For the CLI's --config and --only-config. */
trr_status trr_config_parse(const char *text, trr_config *out_config);
/* The named form, zero fields left out: "block_m=64,block_n=64,threads=256,variant=simt" (TRR_CONFIG_TEXT_MAX
 * characters hold any config); "(backend's choice)" for an all-zero config. */
#define TRR_CONFIG_TEXT_MAX 160
void trr_config_format(const trr_config *config, char *out, size_t cap);

/* The job as a case (cases.h): packed operands, no epilogue. */
void trr_tune_job_case(const trr_tune_job *job, trr_case *out_case);

#endif
