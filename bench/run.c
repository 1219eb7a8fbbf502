/* A benchmark run on one device: the ceilings first, then every selected case: budget, check, time. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "bench.h"
#include "clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rates assumed for a CPU device before any case of a benchmark has run, to keep the first case of a size list
 * from running for minutes: deliberately low (a 2-core machine without a tuned kernel). */
#define CPU_ASSUMED_GBS 2.0
#define CPU_ASSUMED_GFLOPS 5.0


const char *trr_bench_outcome_name(trr_bench_outcome outcome) {
    switch (outcome) {
    case TRR_BENCH_OK: return "ok";
    case TRR_BENCH_SKIPPED: return "skipped";
    case TRR_BENCH_UNSUPPORTED: return "unsupported";
    case TRR_BENCH_FAILED: return "FAILED";
    default: return "?";
    }
}

int trr_bench_failures(const trr_bench_report *const *reports, int n) {
    int f = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < reports[i]->n_results; j++) f += reports[i]->results[j].outcome == TRR_BENCH_FAILED;
    return f;
}

void trr_bench_free(trr_bench_report *report) {
    if (!report) return;
    free(report->results);
    free(report);
}

static trr_status call_setup(trr_context *ctx, void *user) { return trr_bench_setup_call(ctx, user); }

/* What the last measured case of the same benchmark predicts for this one: time scales with the work. */
typedef struct predictor {
    double ms, work;
    char size[48];
} predictor;

static double predict_ms(const predictor *p, const trr_bench_def *def, const trr_device_info *dev, double work) {
    if (p->ms > 0) return p->ms * work / p->work;
    if (dev->is_gpu) return 0;
    return def->compute_bound ? work / (CPU_ASSUMED_GFLOPS * 1e9) * 1e3 : work / (CPU_ASSUMED_GBS * 1e9) * 1e3;
}

static void fail_with(trr_bench_result *r, trr_context *ctx, trr_status st, const char *what) {
    r->status = st;
    r->outcome = st == TRR_ERR_UNSUPPORTED ? TRR_BENCH_UNSUPPORTED : TRR_BENCH_FAILED;
    if (st == TRR_ERR_MISMATCH)
        snprintf(r->reason, sizeof r->reason, "%s", r->check.message);
    else
        snprintf(r->reason, sizeof r->reason, "%s: %s", what, trr_last_error(ctx));
}

typedef struct run_state {
    trr_context *ctx;
    const trr_bench_options *opt;
    trr_bench_report *rep;
    trr_bench_flush flush;
    trr_bench_vendor *vendor;
    trr_bench_clock *clock;
    double target_s;
} run_state;

/* One case to its outcome in *r. Returns a status only when the run cannot go on (host memory). */
static trr_status run_case(run_state *rs, predictor *pred, trr_bench_result *r) {
    trr_context *ctx = rs->ctx;
    const trr_device_info *dev = &rs->rep->device;
    const trr_bench_def *def = trr_bench_get(r->bench);
    const trr_case *c = &r->tcase;
    const double work = trr_bench_work(r->bench, c);
    const double need = trr_case_bytes(c) /* device bytes the case needs (layout.h) */;

    /* leave room for the flush buffer and the driver's own allocations */
    if (dev->global_memory && need + (double)rs->flush.bytes > 0.85 * (double)dev->global_memory) {
        r->outcome = TRR_BENCH_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "needs %.2f GiB of device memory; the device has %.2f GiB",
                 need / 1073741824.0, (double)dev->global_memory / 1073741824.0);
        return TRR_OK;
    }
    const double guess = predict_ms(pred, def, dev, work);
    if (guess > rs->rep->budget_s * 1e3) {
        r->outcome = TRR_BENCH_SKIPPED;
        if (pred->ms > 0)
            snprintf(r->reason, sizeof r->reason, "predicted %.3g s per repetition (scaled from %s at %.3g s) "
                     "is over the %.3g s budget", guess * 1e-3, pred->size, pred->ms * 1e-3, rs->rep->budget_s);
        else
            snprintf(r->reason, sizeof r->reason, "predicted %.3g s per repetition (at an assumed %g %s on a CPU "
                     "device) is over the %.3g s budget", guess * 1e-3,
                     def->compute_bound ? CPU_ASSUMED_GFLOPS : CPU_ASSUMED_GBS,
                     def->compute_bound ? "GFLOPS" : "GB/s", rs->rep->budget_s);
        return TRR_OK;
    }

    trr_bench_setup s;
    const uint64_t seed = rs->opt->seed ^ ((uint64_t)r->bench << 56) ^ (uint64_t)(c->rows * 31 + c->cols + c->m * 7 + c->k);
    trr_status st = trr_bench_setup_create(ctx, c, seed, &s);
    if (st == TRR_ERR_OUT_OF_MEMORY) {
        r->outcome = TRR_BENCH_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "out of memory: %s", trr_last_error(ctx));
        return TRR_OK;
    }
    if (st != TRR_OK) {
        fail_with(r, ctx, st, "setting up the operands");
        return TRR_OK;
    }

    st = trr_bench_check_case(ctx, &s, seed + 1, &r->check);
    if (st != TRR_OK) {
        fail_with(r, ctx, st, "checked run");
        trr_bench_setup_destroy(&s);
        return TRR_OK;
    }
    trr_config_last(ctx, &r->config);

    /* A matmul is timed repetition by repetition beside the vendor's product of the same case, so the ratio is
     * taken under one set of clocks (on a power-capped GPU, cuBLAS timed after the case varies widely within
     * one command); should that pair fail, the case is timed alone. */
    trr_bench_timed items[2] = {{call_setup, &s}};
    trr_bench_timing timings[2];
    const char *vendor_what = "";
    int paired = def->compute_bound && rs->vendor &&
                 trr_bench_vendor_call(rs->vendor, ctx, &s, &items[1], &vendor_what) == TRR_OK;
    st = trr_bench_time_each(ctx, items, paired ? 2 : 1, &rs->flush, rs->clock, rs->opt->reps, rs->target_s,
                             timings);
    if (st != TRR_OK && paired) {
        paired = 0;
        st = trr_bench_time_each(ctx, items, 1, &rs->flush, rs->clock, rs->opt->reps, rs->target_s, timings);
    }
    if (st != TRR_OK) {
        fail_with(r, ctx, st, "timed run");
        trr_bench_setup_destroy(&s);
        return TRR_OK;
    }
    r->timing = timings[0];
    r->outcome = TRR_BENCH_OK;
    r->figure = trr_bench_figure(r->bench, c, r->timing.median_ms);
    r->figure_lo = trr_bench_figure(r->bench, c, r->timing.max_ms);
    r->figure_hi = trr_bench_figure(r->bench, c, r->timing.min_ms);
    r->figure_p25 = trr_bench_figure(r->bench, c, r->timing.p75_ms);
    r->figure_p75 = trr_bench_figure(r->bench, c, r->timing.p25_ms);
    pred->ms = r->timing.median_ms;
    pred->work = work;
    snprintf(pred->size, sizeof pred->size, "%s", r->size);

    if (def->compute_bound) {
        if (paired) {
            r->vendor_timing = timings[1];
            r->vendor_figure = trr_bench_figure(r->bench, c, r->vendor_timing.median_ms);
        }
        r->ceiling = r->vendor_figure;
    } else {
        r->ceiling = rs->rep->copy.gbs;
        r->in_cache = trr_bench_in_cache(c, rs->rep->llc_bytes);
    }
    r->fraction = r->ceiling > 0 ? r->figure / r->ceiling : 0;
    trr_bench_setup_destroy(&s);
    return TRR_OK;
}

/* After the cases: the compute ceilings (the best matmul of the run), and a memory-bound figure above the copy
 * ceiling has the ceiling measured again once before it is flagged: a first measurement that caught the
 * device cold, or a copy path slower than a kernel (lavapipe), must not stand unchallenged. A bench that only
 * reads (row_sum) may stream past a copy and is neither flagged nor a reason to measure again. */
static void judge_ceilings(run_state *rs) {
    trr_bench_report *rep = rs->rep;
    int above = 0;
    for (int i = 0; i < rep->n_results; i++) {
        const trr_bench_result *r = &rep->results[i];
        if (r->outcome != TRR_BENCH_OK) continue;
        /* the plain products (one matrix, no epilogue) of f32 and of f16 */
        const trr_case *c = &r->tcase;
        const int plain = trr_bench_case_compute_bound(c) && c->batch == 0 && c->epilogue == TRR_EPI_NONE &&
                          c->in_dtype == c->out_dtype;
        if (plain && c->in_dtype == TRR_F32 && r->figure > rep->best_matmul_f32_tflops)
            rep->best_matmul_f32_tflops = r->figure;
        if (plain && c->in_dtype == TRR_F16 && r->figure > rep->best_matmul_f16_tflops)
            rep->best_matmul_f16_tflops = r->figure;
        above |= trr_bench_result_suspect(r, rep->copy.gbs);
    }
    if (!above) return;
    trr_bench_copy_ceiling_remeasure(rs->ctx, &rep->device, &rs->flush, rs->clock, &rep->copy);
    for (int i = 0; i < rep->n_results; i++) {
        trr_bench_result *r = &rep->results[i];
        if (r->outcome != TRR_BENCH_OK || trr_bench_get(r->bench)->compute_bound) continue;
        r->ceiling = rep->copy.gbs;
        r->fraction = r->ceiling > 0 ? r->figure / r->ceiling : 0;
        r->above_ceiling = trr_bench_result_suspect(r, r->ceiling);
    }
}

typedef struct planned {
    trr_case *cases[TRR_BENCH_MAX];
    int counts[TRR_BENCH_MAX];
    int total;
} planned;

static void plan_free(planned *p) {
    for (int b = 0; b < trr_bench_count(); b++) free(p->cases[b]);
}

static trr_status plan(const trr_bench_options *opt, const trr_device_info *dev, planned *p, char *capped,
                       size_t capped_cap) {
    memset(p, 0, sizeof *p);
    for (int b = 0; b < trr_bench_count(); b++) {
        if (opt->bench_mask && !(opt->bench_mask & ((uint64_t)1 << b))) continue;
        trr_status st = trr_bench_device_cases((trr_bench_id)b, opt->sizes, opt->size_list, dev->is_gpu,
                                               &p->cases[b], &p->counts[b], capped, capped_cap);
        if (st != TRR_OK) {
            plan_free(p);
            return st;
        }
        p->total += p->counts[b];
    }
    return TRR_OK;
}

trr_status trr_bench_run(trr_context *ctx, const trr_bench_options *opt, trr_bench_report **out_report) {
    if (!ctx || !opt || !out_report) return TRR_ERR_INVALID_ARGUMENT;
    trr_device_info dev;
    TRR_TRY(trr_context_device(ctx, &dev));
    planned p;
    char capped[2300] = "";
    TRR_TRY(plan(opt, &dev, &p, capped, sizeof capped));
    trr_bench_report *rep = calloc(1, sizeof *rep);
    if (rep) rep->results = calloc((size_t)p.total + 1, sizeof *rep->results);
    if (!rep || !rep->results) {
        free(rep);
        plan_free(&p);
        return TRR_ERR_OUT_OF_MEMORY;
    }
    rep->device = dev;
    trr_status st = TRR_OK;
    rep->llc_bytes = trr_bench_device_llc_bytes(&dev);
    if (capped[0])
        snprintf(rep->sizes_note, sizeof rep->sizes_note, "on a CPU device quick runs %s (--sizes full runs docs/ops.md's)",
                 capped);
    const double t0 = trr_now_s();
    time_t now = time(NULL);
    struct tm tm_utc;
    gmtime_r(&now, &tm_utc);
    strftime(rep->date, sizeof rep->date, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
    snprintf(rep->library_version, sizeof rep->library_version, "%s", TRR_VERSION_STRING);
    snprintf(rep->sizes, sizeof rep->sizes, "%s", opt->sizes == TRR_BENCH_SIZES_FULL ? "full"
                                                  : opt->sizes == TRR_BENCH_SIZES_LIST ? "list" : "quick");
    rep->reps_requested = opt->reps;
    rep->budget_s = opt->budget_s > 0 ? opt->budget_s : rep->device.is_gpu ? 30.0 : 2.0;
    rep->seed = opt->seed;
    snprintf(rep->command_line, sizeof rep->command_line, "%s", opt->command_line ? opt->command_line : "");

    /* quick on a CPU device: a quarter second of repetitions per case (the flushes' share shrinks with it,
     * timing.c), so twenty-odd cases with their fills and checks stay within a minute on 2 cores */
    const int cpu_quick = !rep->device.is_gpu && opt->sizes == TRR_BENCH_SIZES_QUICK;
    run_state rs = {.ctx = ctx, .opt = opt, .rep = rep,
                    .target_s = rep->device.is_gpu ? 0.5 : cpu_quick ? TRR_BENCH_CPU_QUICK_TARGET_S : 1.0};
    if (trr_cache_flush_create(ctx, &rs.flush) != TRR_OK) rs.flush.bytes = 0;
    rep->flush_bytes = rs.flush.bytes;
    trr_bench_clock_open(&rep->device, opt->no_clock, &rs.clock);
    snprintf(rep->clock_source, sizeof rep->clock_source, "%s", trr_bench_clock_source(rs.clock));
    rep->clock_max_mhz = trr_bench_clock_max_mhz(rs.clock);
    trr_bench_copy_ceiling_measure(ctx, &rep->device, &rs.flush, rs.clock, &rep->copy);

    int any_matmul = 0;
    for (int b = 0; b < trr_bench_count(); b++)
        any_matmul |= p.counts[b] && trr_bench_get((trr_bench_id)b)->compute_bound;
    if (any_matmul && !opt->no_vendor) {
        trr_bench_vendor_open(ctx, &rs.vendor);
        snprintf(rep->vendor, sizeof rep->vendor, "%s", trr_bench_vendor_name(rs.vendor));
        snprintf(rep->vendor_note, sizeof rep->vendor_note, "%s", trr_bench_vendor_reason(rs.vendor));
    } else {
        snprintf(rep->vendor_note, sizeof rep->vendor_note, "%s", opt->no_vendor ? "not measured (--no-vendor)"
                                                                                 : "no matmul benchmark selected");
    }

    st = TRR_OK;
    int index = 0;
    rep->cases_planned = p.total;
    predictor preds[TRR_BENCH_MAX];
    memset(preds, 0, sizeof preds);
    for (int b = 0; b < trr_bench_count() && st == TRR_OK && !rep->interrupted; b++) {
        predictor *pred = &preds[b];
        /* an earlier benchmark's times predict one that differs from it in what costs next to nothing (matmul_f16
         * for matmul_f16_relu's epilogue) */
        for (int e = 0; e < b; e++)
            if (trr_bench_predicts(e, b)) *pred = preds[e];
        for (int i = 0; i < p.counts[b] && st == TRR_OK && !rep->interrupted; i++, index++) {
            if (opt->stop && *opt->stop) {
                rep->interrupted = 1;
                break;
            }
            trr_bench_result *r = &rep->results[rep->n_results];
            memset(r, 0, sizeof *r);
            r->bench = (trr_bench_id)b;
            r->tcase = p.cases[b][i];
            trr_bench_size_text(r->bench, &r->tcase, r->size, sizeof r->size);
            r->x = trr_bench_size_x(r->bench, &r->tcase);
            char name[96];
            snprintf(name, sizeof name, "%s %s", trr_bench_get(r->bench)->name, r->size);
            const double elapsed = trr_now_s() - t0;
            const double eta = index ? elapsed / index * (p.total - index) : -1;
            if (opt->progress) opt->progress(opt->user, index, p.total, name, NULL, elapsed, eta);
            st = run_case(&rs, pred, r);
            rep->n_results++;
            const double el2 = trr_now_s() - t0;
            if (opt->progress)
                opt->progress(opt->user, index, p.total, name, r, el2, el2 / (index + 1) * (p.total - index - 1));
        }
    }
    if (st == TRR_OK) judge_ceilings(&rs);
    rep->seconds = trr_now_s() - t0;
    trr_bench_vendor_close(rs.vendor);
    trr_bench_clock_close(rs.clock);
    trr_cache_flush_destroy(&rs.flush);
    plan_free(&p);
    if (st != TRR_OK) {
        trr_bench_free(rep);
        return st;
    }
    *out_report = rep;
    return TRR_OK;
}
