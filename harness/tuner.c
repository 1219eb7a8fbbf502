/* The tuner (tuner.h). For one job: lay the operands out on the device, compute the float64 reference once,
 * then for the default config and every candidate of the space: run it on a poisoned output and check the
 * result with the conformance engine's rules (conformance_check.h), and only then time it (median of reps
 * after warm-up, trr_timer_start/stop around each call). The fastest checked config wins. */
#define _POSIX_C_SOURCE 200809L
#include "tuner.h"

#include "config_fields.h"
#include "clock.h"

#include "cache_flush.h"
#include "cases.h"
#include "conformance_check.h"
#include "half.h"
#include "layout.h"
#include "random.h"
#include "reference.h"
#include "tune_space.h"
#include "validate.h"
#include "warmup.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GUARD_ELEMS 16
/* Above this many multiply-adds the float64 reference is computed for sampled row blocks only: a full
 * reference of a 4096^3 matmul takes minutes on the host, and a tile bug shows in any block of rows. */
#define FULL_REFERENCE_MACS ((double)(1u << 30))
#define SAMPLE_ROWS 16
/* A candidate whose first timed runs are this much slower than the best is not timed further. */
#define ABANDON_FACTOR 2.0
/* A candidate replaces the default only when it is at least this much faster. Two runs of the same small kernel
 * differ by several percent between runs (the tuning data), so a smaller win is noise and a database entry
 * built on it can only make things worse. */
#define MIN_GAIN 1.03

/* ---- inputs ---- */

typedef struct operand {
    trr_stored_view v;
    trr_dtype dtype;
    size_t elems;   /* in the buffer */
    size_t esz;
    uint8_t *host;
    trr_buffer *buf;
} operand;

/* The operands are packed, so every element of the buffer is an input (random.h says what is drawn). */
static trr_status operand_make(trr_context *ctx, operand *o, trr_dtype dt, size_t elems) {
    o->dtype = dt;
    o->elems = elems;
    TRR_TRY(trr_dtype_size(dt, &o->esz));
    o->host = malloc(elems * o->esz);
    if (!o->host) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "tune: %zu bytes of host memory", elems * o->esz);
    return trr_buffer_create(ctx, elems * o->esz, &o->buf);
}

static void operand_free(operand *o) {
    if (o->buf) trr_buffer_destroy(o->buf);
    free(o->host);
    memset(o, 0, sizeof *o);
}

/* ---- one job's state ---- */

typedef struct tune_run {
    trr_context *ctx;
    const trr_tune_job *job;
    trr_case tc; /* the job in the conformance engine's terms, for its checks */
    operand op[TRR_CASE_SLOTS]; /* x, y, z, u (layout.h); only the slots the op has (has[]) are used */
    unsigned char has[TRR_CASE_SLOTS];
    trr_tensor t[TRR_CASE_SLOTS];
    trr_call call; /* normalised, on the device buffers */
    size_t out_bytes;
    int64_t out_count, out_offset; /* the output view: packed, out_count elements at out_offset */
    uint32_t poison;
    uint8_t *before, *after, *before2, *after2, *scratch;
    double *ref;          /* per checked row block, packed */
    int64_t blocks[3][2]; /* checked row blocks [first, count); one block of every row when not sampling */
    int n_blocks;
    trr_cache_flush flush;
    int warmup_flushes; /* fills so far in warm-ups (each fill writes a different byte) */
} tune_run;

#define HAS(r, i) ((r)->has[i])

/* Packed operands (layout.c); the output sits GUARD_ELEMS elements into its buffer with as many after it. */
static trr_status make_operands(tune_run *r) {
    trr_context *ctx = r->ctx;
    trr_case_views views;
    TRR_TRY(trr_case_views_make(&r->tc, &views));
    TRR_TRY(trr_case_views_check_size(ctx, &views)); /* before any host or device memory is taken */
    for (int i = 0; i < TRR_CASE_SLOTS; i++) {
        r->has[i] = views.has[i];
        if (!HAS(r, i)) continue;
        trr_stored_view *v = &views.v[i];
        if (v->rows < 1 || v->cols < 1) return trr_error(ctx, TRR_ERR_SHAPE, "tune: every dimension must be at least 1");
        const int out = i == TRR_OUT;
        if (out) v->offset = GUARD_ELEMS;
        r->op[i].v = *v;
        TRR_TRY(operand_make(ctx, &r->op[i], v->dtype, (size_t)(trr_stored_extent(v) + (out ? GUARD_ELEMS : 0))));
        TRR_TRY(trr_stored_tensor(v, r->op[i].buf, &r->t[i]));
    }
    const operand *z = &r->op[TRR_OUT];
    r->out_offset = z->v.offset;
    r->out_count = z->v.planes * z->v.rows * z->v.cols;
    r->out_bytes = z->elems * z->esz;
    return TRR_OK;
}

/* Points call's inputs at their host copies (the output's stays as it is). */
static void host_inputs(const tune_run *r, trr_call *call) {
    void *hosts[TRR_CASE_SLOTS];
    for (int i = 0; i < TRR_CASE_SLOTS; i++) hosts[i] = HAS(r, i) && i != TRR_OUT ? r->op[i].host : NULL;
    hosts[TRR_OUT] = (void *)call->z.mem;
    trr_case_call_host(call, hosts);
}

static trr_status call_op(tune_run *r) {
    return trr_case_call(r->ctx, &r->tc, r->t, r->job->allow_tf32 ? TRR_MATMUL_ALLOW_TF32 : 0u);
}

/* The reference, once per job: for every row when affordable, else for three blocks of rows (first, middle,
 * last) of a matmul. The reference reads the same normalised call the backend gets, on host copies. */
static trr_status make_reference(tune_run *r) {
    const trr_call *c = &r->call;
    int64_t out_rows, cols;
    trr_case_out_shape(&r->tc, &out_rows, &cols);
    const double macs = trr_case_flops(&r->tc);
    /* sampled rows are rows of one matrix: a batched call gets the whole reference */
    if (c->k > 0 && macs > FULL_REFERENCE_MACS && c->rows > 3 * SAMPLE_ROWS && c->batch <= 1) {
        int64_t mid = (c->rows / 2 / SAMPLE_ROWS) * SAMPLE_ROWS;
        int64_t last = c->rows - SAMPLE_ROWS;
        r->blocks[0][0] = 0, r->blocks[1][0] = mid, r->blocks[2][0] = last;
        for (int b = 0; b < 3; b++) r->blocks[b][1] = SAMPLE_ROWS;
        r->n_blocks = 3;
    } else {
        r->blocks[0][0] = 0, r->blocks[0][1] = c->rows;
        r->n_blocks = 1;
    }
    int64_t total = 0;
    for (int b = 0; b < r->n_blocks; b++) total += r->blocks[b][1] * cols;
    /* unsampled, the reference writes the whole output: a packed element-wise call folds the case's rows into one
     * row of rows x cols elements, which the call's rows (1) times the case's cols would not hold */
    if (r->n_blocks == 1 && out_rows > c->rows) total = out_rows * cols;
    if (c->batch > 1) total *= c->batch; /* unsampled: every matrix of the batch, one after another */
    r->ref = malloc((size_t)total * sizeof *r->ref);
    if (!r->ref) return trr_error(r->ctx, TRR_ERR_OUT_OF_MEMORY, "tune: host memory for the reference");
    int64_t at = 0;
    for (int b = 0; b < r->n_blocks; b++) {
        trr_call sub = *c;
        host_inputs(r, &sub);
        sub.rows = r->blocks[b][1];
        sub.x.offset += r->blocks[b][0] * (c->trans_a ? 1 : c->x.stride0);
        trr_status st = trr_reference_run(&sub, r->ref + at);
        if (st != TRR_OK) return trr_error(r->ctx, st, "tune: the reference failed (%s)", trr_status_name(st));
        at += r->blocks[b][1] * cols;
    }
    return TRR_OK;
}

static void poison_output(tune_run *r, uint8_t *host, uint32_t poison) {
    for (size_t i = 0; i < r->out_bytes; i++) host[i] = (uint8_t)(0x3Cu ^ (uint32_t)(i * 37u));
    const operand *z = &r->op[TRR_OUT];
    for (int64_t e = 0; e < r->out_count; e++) {
        uint8_t *p = host + (size_t)(r->out_offset + e) * z->esz;
        if (z->dtype == TRR_F32) memcpy(p, &poison, 4);
        else if (z->dtype == TRR_F16 || z->dtype == TRR_BF16) {
            uint16_t h = (uint16_t)poison;
            memcpy(p, &h, 2);
        } else *p = (uint8_t)poison;
    }
}

static trr_status run_poisoned(tune_run *r, uint32_t poison, uint8_t *before, uint8_t *after) {
    poison_output(r, before, poison);
    TRR_TRY(trr_buffer_write(r->ctx, r->op[TRR_OUT].buf, 0, before, r->out_bytes));
    TRR_TRY(call_op(r));
    return trr_buffer_read(r->ctx, r->op[TRR_OUT].buf, 0, after, r->out_bytes);
}

/* Runs the current config once on a poisoned output and checks it. *out_pass, and why in msg on a failure. */
static trr_status check_config_output(tune_run *r, int *out_pass, char *msg, size_t cap) {
    *out_pass = 0;
    TRR_TRY(run_poisoned(r, r->poison, r->before, r->after));
    const operand *z = &r->op[TRR_OUT];
    const int u8 = z->dtype == TRR_U8;
    if (u8) TRR_TRY(run_poisoned(r, TRR_CONF_POISON_U8_B, r->before2, r->after2));
    int64_t out_rows, cols;
    trr_case_out_shape(&r->tc, &out_rows, &cols);
    int64_t at = 0;
    for (int b = 0; b < r->n_blocks; b++) {
        trr_call sub = r->call;
        host_inputs(r, &sub);
        sub.rows = r->blocks[b][1];
        sub.x.offset += r->blocks[b][0] * (sub.trans_a ? 1 : sub.x.stride0);
        const uint8_t *before = r->before;
        if (r->n_blocks > 1) {
            /* The check compares every byte outside its view with "before"; outside this block that must be
             * the output as written, and the whole output is checked for poison and guard bytes below. */
            sub.z.offset += r->blocks[b][0] * sub.z.stride0;
            memcpy(r->scratch, r->after, r->out_bytes);
            size_t lo = (size_t)sub.z.offset * z->esz, len = (size_t)(sub.rows * sub.z.stride0) * z->esz;
            memcpy(r->scratch + lo, r->before + lo, len);
            before = r->scratch;
        }
        trr_conf_result res;
        memset(&res, 0, sizeof res);
        trr_conf_check_input in = {.tcase = &r->tc, .call = &sub, .before = before, .after = r->after,
                                   .after2 = u8 ? r->after2 : NULL, .before2 = u8 ? r->before2 : NULL,
                                   .bytes = r->out_bytes, .ref = r->ref + at};
        TRR_TRY(trr_conf_check(&in, &res));
        if (res.outcome != TRR_CONF_PASS) {
            snprintf(msg, cap, "%s", res.message);
            return TRR_OK;
        }
        at += r->blocks[b][1] * cols;
    }
    if (r->n_blocks > 1) { /* sampled: the rows not compared must still all be written, the guards untouched */
        const size_t lo = (size_t)r->out_offset * z->esz, hi = lo + (size_t)r->out_count * z->esz;
        for (size_t i = 0; i < r->out_bytes; i++)
            if ((i < lo || i >= hi) && r->after[i] != r->before[i]) {
                snprintf(msg, cap, "guard byte %zu around the output changed", i);
                return TRR_OK;
            }
        for (size_t i = lo; i < hi; i += z->esz)
            if (memcmp(r->after + i, r->before + i, z->esz) == 0) {
                snprintf(msg, cap, "output element %zu was not written", (i - lo) / z->esz);
                return TRR_OK;
            }
    }
    *out_pass = 1;
    return TRR_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times the current config: warm-up, then reps runs each between trr_timer_start/stop; the median. Stops early
 * (*out_cut) once the median of the first three is over ABANDON_FACTOR times best_ms. warm_s: seconds of
 * back-to-back calls first (warmup.h): the whole warm-up after the host has kept the device idle, a short one
 * between candidates timed one after the other. */
#define BETWEEN_CANDIDATES_WARMUP_S 0.05
/* A warm-up round runs what a timed run does, flush included, so the warm-up's power draw is the timed runs'
 * (bench/timing.c says why bare-op bursts are avoided). */
static trr_status warmup_call(trr_context *ctx, void *user) {
    tune_run *r = user;
    TRR_TRY(trr_cache_flush_run(ctx, &r->flush, r->warmup_flushes++));
    return call_op(r);
}
static trr_status time_config(tune_run *r, int warmup, int reps, double warm_s, double best_ms, double *out_ms,
                              int *out_cut) {
    *out_cut = 0;
    TRR_TRY(trr_warmup_run(r->ctx, warmup_call, r, 0, warm_s, warmup - 1));
    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms) return trr_error(r->ctx, TRR_ERR_OUT_OF_MEMORY, "tune: host memory");
    int n = 0;
    trr_status st = TRR_OK;
    for (; n < reps; n++) {
        st = trr_cache_flush_run(r->ctx, &r->flush, n); /* as the benchmarks do: no timing from a warm L2 */
        if (st == TRR_OK) st = trr_timer_start(r->ctx);
        if (st == TRR_OK) st = call_op(r);
        double t = 0;
        trr_status st2 = trr_timer_stop(r->ctx, &t);
        if (st == TRR_OK) st = st2;
        if (st != TRR_OK) break;
        ms[n] = t;
        if (n == 2 && best_ms > 0) {
            double first[3] = {ms[0], ms[1], ms[2]};
            qsort(first, 3, sizeof first[0], cmp_double);
            if (first[1] > ABANDON_FACTOR * best_ms) {
                *out_cut = 1;
                n++;
                break;
            }
        }
    }
    if (st == TRR_OK) {
        qsort(ms, (size_t)n, sizeof *ms, cmp_double);
        *out_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    }
    free(ms);
    return st;
}

/* ---- the job ---- */

void trr_tune_job_case(const trr_tune_job *j, trr_case *tc) {
    memset(tc, 0, sizeof *tc);
    tc->op = j->op;
    tc->in_dtype = j->in_dtype;
    tc->out_dtype = j->out_dtype;
    tc->rows = j->rows, tc->cols = j->cols;
    tc->m = j->m, tc->n = j->n, tc->k = j->k;
    tc->trans_a = j->trans_a, tc->trans_b = j->trans_b;
    tc->layout = TRR_LAYOUT_PACKED;
    tc->epilogue = TRR_EPI_NONE;
}

static void free_run(tune_run *r) {
    for (int i = 0; i < TRR_CASE_SLOTS; i++) operand_free(&r->op[i]);
    free(r->before);
    free(r->after);
    free(r->before2);
    free(r->after2);
    free(r->scratch);
    free(r->ref);
    trr_cache_flush_destroy(&r->flush);
}

static trr_status prepare(tune_run *r, uint64_t seed) {
    TRR_TRY(make_operands(r));
    /* without a flush buffer (device memory is tight) timing goes on from a warm cache, as before */
    if (trr_cache_flush_create(r->ctx, &r->flush) != TRR_OK) r->flush.buf = NULL;
    uint64_t rng = seed ^ 0x74726972656D65ull;
    for (int i = 0; i < TRR_CASE_SLOTS; i++) {
        if (!HAS(r, i) || i == TRR_OUT) continue;
        trr_rng_fill(&rng, r->job->op, r->op[i].dtype, r->op[i].host, (int64_t)r->op[i].elems);
        TRR_TRY(trr_buffer_write(r->ctx, r->op[i].buf, 0, r->op[i].host, r->op[i].elems * r->op[i].esz));
    }
    int empty = 0;
    TRR_TRY(trr_case_call_build(r->ctx, &r->tc, r->t, r->job->allow_tf32 ? TRR_MATMUL_ALLOW_TF32 : 0u, &r->call,
                                &empty));
    if (r->call.slices != 1) return trr_error(r->ctx, TRR_ERR_INTERNAL, "tune: packed operands did not fold");
    const trr_dtype zdt = r->op[TRR_OUT].dtype;
    r->poison = trr_conf_poison(zdt);
    r->before = malloc(r->out_bytes);
    r->after = malloc(r->out_bytes);
    r->before2 = malloc(r->out_bytes);
    r->after2 = malloc(r->out_bytes);
    r->scratch = malloc(r->out_bytes);
    if (!r->before || !r->after || !r->before2 || !r->after2 || !r->scratch)
        return trr_error(r->ctx, TRR_ERR_OUT_OF_MEMORY, "tune: host memory for the output");
    return make_reference(r);
}

typedef struct search {
    trr_tune_candidate *cand;
    int n;            /* candidates, the default first */
    int to_time;      /* not dropped */
    double *ms;       /* per candidate: median, or -1 when not timed */
    unsigned char *passed; /* per candidate: 1 once its output passed the check */
    int *ordinal;          /* per candidate: its place among those not dropped, for progress */
    int best;         /* fastest so far, or -1 */
    double best_ms;
    double default_ms;
    int default_ok;
} search;

/* One progress line: index is the candidate's place among those not dropped (the default first), the same in
 * the check pass (checking = 1) and in the timing pass. */
static void report(const trr_tune_options *o, tune_run *r, const search *s, int index, int checking,
                   const trr_config *cfg, double ms, const char *note, double t0) {
    if (!o->progress) return;
    double elapsed = trr_now_s() - t0;
    trr_tune_progress p = {.job = r->job, .index = index, .total = s->to_time, .checking = checking, .config = cfg,
                           .ms = ms, .note = note ? note : "", .best_ms = s->best >= 0 ? s->best_ms : -1.0,
                           .best = s->best >= 0 ? &s->cand[s->best].resolved : NULL, .elapsed_s = elapsed,
                           .left_s = index > 0 ? elapsed / index * (s->to_time - index) : 0};
    o->progress(o->user, &p);
}

/* Every candidate is checked first and the ones that pass are then timed one after the other: a check keeps the
 * device idle while the host compares the output, and its clocks fall within 100 ms of that (warmup.h), so
 * timing straight after each check would need the full warm-up for every candidate. */
static trr_status run_search(tune_run *r, const trr_tune_options *o, search *s, trr_tune_outcome *out) {
    const int reps = o->reps > 0 ? o->reps : 10, warmup = o->warmup > 0 ? o->warmup : 2;
    double t0 = trr_now_s();
    int ordinal = 0;
    for (int i = 0; i < s->n; i++) {
        trr_tune_candidate *c = &s->cand[i];
        if (c->dropped) continue;
        s->ordinal[i] = ++ordinal;
        TRR_TRY(trr_config_override(r->ctx, r->job->op, &c->resolved));
        int pass = 0;
        char msg[320] = "";
        trr_status st = check_config_output(r, &pass, msg, sizeof msg);
        if (st == TRR_ERR_UNSUPPORTED || st == TRR_ERR_COMPILE || st == TRR_ERR_DEVICE ||
            st == TRR_ERR_OUT_OF_MEMORY) {
            /* the config cannot run here (a compile or launch limit check_config does not know): drop it */
            snprintf(msg, sizeof msg, "could not run: %s", trr_last_error(r->ctx));
            if (st == TRR_ERR_DEVICE) { /* a device error may leave the context unusable: stop here */
                report(o, r, s, ordinal, 1, &c->resolved, -1, msg, t0);
                return st;
            }
            pass = 0;
        } else if (st != TRR_OK) {
            return st;
        }
        if (pass) {
            s->passed[i] = 1;
            report(o, r, s, ordinal, 1, &c->resolved, -1, "", t0);
            continue;
        }
        out->failed++;
        if (!out->first_failure[0]) {
            char cfg[TRR_CONFIG_TEXT_MAX];
            trr_config_format(&c->resolved, cfg, sizeof cfg);
            snprintf(out->first_failure, sizeof out->first_failure, "%s: %s", cfg, msg);
        }
        report(o, r, s, ordinal, 1, &c->resolved, -1, msg, t0);
    }
    double warm_s = trr_warmup_seconds(r->ctx);
    t0 = trr_now_s(); /* the timing pass's own estimate of what is left */
    for (int i = 0; i < s->n; i++) {
        if (!s->passed[i]) continue;
        trr_tune_candidate *c = &s->cand[i];
        TRR_TRY(trr_config_override(r->ctx, r->job->op, &c->resolved));
        double ms = 0;
        int cut = 0;
        TRR_TRY(time_config(r, warmup, reps, warm_s, s->best >= 0 ? s->best_ms : -1, &ms, &cut));
        warm_s = BETWEEN_CANDIDATES_WARMUP_S;
        out->timed++;
        s->ms[i] = ms;
        if (i == 0) s->default_ms = ms, s->default_ok = 1;
        if (s->best < 0 || ms < s->best_ms) s->best = i, s->best_ms = ms;
        report(o, r, s, s->ordinal[i], 0, &c->resolved, ms, cut ? "cut short: over twice the best" : "", t0);
    }
    return TRR_OK;
}

/* A winner found in one pass can owe its place to a quiet moment (on a shared CPU above all): the default and
 * the winner are timed once more, one after the other, and each keeps its better median. */
static trr_status confirm(tune_run *r, const trr_tune_options *o, search *s) {
    if (s->best <= 0 || !s->default_ok) return TRR_OK;
    const int reps = o->reps > 0 ? o->reps : 10, warmup = o->warmup > 0 ? o->warmup : 2;
    const int which[2] = {0, s->best};
    for (int w = 0; w < 2; w++) {
        double ms = 0;
        int cut = 0;
        TRR_TRY(trr_config_override(r->ctx, r->job->op, &s->cand[which[w]].resolved));
        TRR_TRY(time_config(r, warmup, reps, BETWEEN_CANDIDATES_WARMUP_S, -1, &ms, &cut));
        if (ms < s->ms[which[w]]) s->ms[which[w]] = ms;
    }
    s->default_ms = s->ms[0];
    if (s->ms[0] <= s->ms[s->best] * MIN_GAIN) s->best = 0;
    s->best_ms = s->ms[s->best];
    return TRR_OK;
}

trr_status trr_tune_run(trr_context *ctx, const trr_tune_job *job, const trr_tune_options *options,
                        trr_tune_outcome *out) {
    if (!ctx || !job || !out) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "trr_tune_run: NULL argument");
    if (!trr_op_desc_get(job->op)) return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "tune: unknown op");
    trr_tune_options opt;
    memset(&opt, 0, sizeof opt);
    if (options) opt = *options;
    memset(out, 0, sizeof *out);

    const int had_override = ctx->has_override[job->op];
    const trr_config saved_override = ctx->override[job->op];
    tune_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.job = job;
    trr_tune_job_case(job, &r.tc);
    search s = {.best = -1};
    s.cand = calloc(TRR_TUNE_MAX_CANDIDATES + 1, sizeof *s.cand);
    s.ms = malloc((TRR_TUNE_MAX_CANDIDATES + 1) * sizeof *s.ms);
    s.passed = calloc(TRR_TUNE_MAX_CANDIDATES + 1, 1);
    s.ordinal = calloc(TRR_TUNE_MAX_CANDIDATES + 1, sizeof *s.ordinal);
    for (int i = 0; s.ms && i <= TRR_TUNE_MAX_CANDIDATES; i++) s.ms[i] = -1;
    trr_status st = s.cand && s.ms && s.passed && s.ordinal ? prepare(&r, opt.seed) : trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "tune: host memory");
    if (st != TRR_OK) goto done;

    /* the default first: the baseline, and the winner unless a candidate beats it */
    trr_tune_default_config(ctx, &r.call, &s.cand[0].resolved);
    s.cand[0].listed = s.cand[0].resolved;
    if (!trr_tune_config_runs(ctx, &r.call, &s.cand[0].resolved, s.cand[0].reason, sizeof s.cand[0].reason)) {
        st = TRR_ERR_UNSUPPORTED; /* the backend's reason is the context's last error */
        goto done;
    }
    int n = 0;
    if (opt.only_config) {
        trr_tune_candidate *c = &s.cand[1];
        c->listed = *opt.only_config;
        trr_tune_complete_config(ctx, &r.call, &c->listed, &c->resolved);
        if (!trr_tune_config_runs(ctx, &r.call, &c->resolved, c->reason, sizeof c->reason)) {
            st = trr_error(ctx, TRR_ERR_UNSUPPORTED, "tune: the backend rejects --only-config: %s", c->reason);
            goto done;
        }
        n = 1;
    } else {
        st = trr_tune_space(ctx, &r.call, &s.cand[1], TRR_TUNE_MAX_CANDIDATES, &n);
        if (st != TRR_OK) goto done;
        for (int i = 1; i <= n; i++) /* the default is timed already */
            if (!s.cand[i].dropped && trr_config_equal(&s.cand[i].resolved, &s.cand[0].resolved)) {
                s.cand[i].dropped = 1;
                snprintf(s.cand[i].reason, sizeof s.cand[i].reason, "the default config");
            }
    }
    s.n = n + 1;
    out->listed = n;
    for (int i = 0; i < s.n; i++) {
        if (s.cand[i].dropped) out->dropped++;
        else s.to_time++;
    }
    st = run_search(&r, &opt, &s, out);
    if (st == TRR_OK && !opt.only_config) st = confirm(&r, &opt, &s);
    if (st != TRR_OK) goto done;
    if (opt.only_config) /* the caller named the config: keep it when it passes, even if the default is faster */
        s.best = s.ms[1] >= 0 ? 1 : -1;
    if (s.best < 0) {
        st = trr_error(ctx, TRR_ERR_MISMATCH, "tune: no config passed the reference check (first failure: %s)",
                       out->first_failure);
        goto done;
    }
    if (!opt.only_config && !s.default_ok) {
        /* Whatever passed instead would become this bucket's config without a baseline to beat, and a failing
         * default is a kernel (or bound) question to settle first, not one to route around: a config stored this
         * way can be far slower than the default. */
        st = trr_error(ctx, TRR_ERR_MISMATCH,
                       "tune: the default config fails the reference check, so nothing is stored (%s)",
                       out->first_failure);
        goto done;
    }
    {
        trr_tune_entry *e = &out->entry;
        trr_tune_key_of(ctx, &r.call, &e->key);
        trr_tune_shape_of(&r.call, e->shape);
        e->config = s.cand[s.best].resolved;
        e->default_config = s.cand[0].resolved;
        e->default_ms = s.default_ok ? s.default_ms : 0;
        e->candidates = out->timed;
        time_t t = time(NULL);
        struct tm tmv;
        if (gmtime_r(&t, &tmv)) strftime(e->tuned_at, sizeof e->tuned_at, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        e->ms = s.ms[s.best];
    }
done:
    ctx->has_override[job->op] = had_override;
    ctx->override[job->op] = saved_override;
    free(s.cand);
    free(s.ms);
    free(s.passed);
    free(s.ordinal);
    free_run(&r);
    return st;
}
