/* The conformance engine's run loop (conformance.h): for each case, lay the operands out in device buffers,
 * poison the output and guard its surroundings, run the op through the public API, and hand the result with
 * the float64 reference to conformance_check.c. */
#include "conformance.h"
#include "clock.h"

#include "cast_values.h"
#include "conformance_check.h"
#include "half.h"
#include "layout.h"
#include "op_table.h"
#include "random.h"
#include "reference.h"
#include "report_meta.h"
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Elements of guard after every buffer's last view element. */
#define TAIL_PAD 16

/* ---- random inputs ---- */

/* Keyed by the case's name, so a case draws the same inputs whatever subset it runs in. */
static uint64_t case_seed(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    uint64_t s = seed ^ h;
    return trr_rng_next(&s);
}


/* ---- operands ---- */

/* One operand: where it sits (layout.c), its host copy and its device buffer. */
typedef struct operand {
    trr_stored_view v;
    size_t bytes;
    uint8_t *host;
    trr_buffer *buf;
} operand;


/* The row norms' special rows (cases.h): every other row of x from row 0 constant (its first element's value
 * across the row) or all zeros. */
static void fill_special_norm(operand *o, const trr_case *tc) {
    const trr_stored_view *v = &o->v;
    for (int64_t r = 0; r < v->rows; r += 2) {
        const int64_t base = v->offset + r * v->row_stride;
        const float value = tc->special == TRR_SPECIAL_ZERO_ROWS ? 0.0f : trr_dtype_load_f32(o->host, v->dtype, base);
        for (int64_t c = 0; c < v->cols; c++) trr_dtype_store_f32(o->host, v->dtype, base + c, value);
    }
}

/* Writes a case's special values (cases.h, trr_case_special) over a softmax input's random fill. Masked
 * stretches are most of the row, so they cover many tiles and many invocations' chunks of a long row. */
static void fill_special(operand *o, const trr_case *tc, uint64_t *rng) {
    const trr_stored_view *v = &o->v;
    const int64_t n = v->cols;
    for (int64_t r = 0; r < v->rows; r++) {
        const int64_t base = v->offset + r * v->row_stride;
        const int64_t keep = 1 + (r % 4) * (n / 8); /* unmasked entries in the prefix/suffix patterns */
        for (int64_t c = 0; c < n; c++) {
            int masked = 0;
            switch (tc->special) {
            case TRR_SPECIAL_MASK_PREFIX: masked = c < n - keep; break;
            case TRR_SPECIAL_MASK_SUFFIX: masked = c >= keep; break;
            case TRR_SPECIAL_MASK_SCATTER: masked = trr_rng_next(rng) >> 63; break;
            case TRR_SPECIAL_ROW_ALL_MASKED: masked = r % 2 == 0; break;
            default: break;
            }
            if (masked) trr_dtype_store_f32(o->host, v->dtype, base + c, -INFINITY);
        }
        if (tc->special == TRR_SPECIAL_ONE_NAN && r == v->rows / 2) trr_dtype_store_f32(o->host, v->dtype, base + n * 2 / 3, NAN);
        for (int64_t c = 0; c < n && tc->special >= TRR_SPECIAL_CONSTANT; c++)
            trr_dtype_store_f32(o->host, v->dtype, base + c,
                                tc->special == TRR_SPECIAL_CONSTANT ? 0.1f : fabsf(trr_rng_input(rng, tc->op)));
    }
}

/* Inputs: view elements random; everything else in the buffer NaN for floats (a kernel that reads past its view
 * and uses the value produces NaN), random bytes for u8. Softmax inputs sit in [60, 100], where exp() overflows
 * f32 unless the row maximum is subtracted first, as docs/ops.md's softmax defines it. */
static void fill_input(operand *o, int slot, const trr_case *tc, uint64_t *rng) {
    const trr_dtype dt = o->v.dtype;
    const size_t n = o->bytes;
    if (dt == TRR_U8) {
        for (size_t i = 0; i < n; i++) o->host[i] = trr_rng_byte(rng);
        return;
    }
    size_t esz = 0;
    trr_dtype_size(dt, &esz);
    for (size_t i = 0; i < n / esz; i++) trr_dtype_store_f32(o->host, dt, (int64_t)i, NAN);
    for (int64_t p = 0; p < o->v.planes; p++)
        for (int64_t r = 0; r < o->v.rows; r++)
            for (int64_t c = 0; c < o->v.cols; c++) {
                const int64_t at = trr_stored_index(&o->v, p, r, c);
                if (tc->op == TRR_OP_CAST) /* cast_values.c: specials, ties and boundaries of the output type */
                    trr_cast_input_store(rng, o->host, dt, tc->out_dtype, at);
                else
                    trr_rng_store(rng, tc->op, dt, o->host, at);
            }
    const trr_op_shape shape = trr_op_desc_get(tc->op)->shape;
    if (tc->special && (shape == TRR_SHAPE_ROWS || shape == TRR_SHAPE_ROW_REDUCE)) fill_special(o, tc, rng);
    if (tc->special && shape == TRR_SHAPE_ROW_NORM && slot == TRR_SLOT_X) fill_special_norm(o, tc);
    /* attention's large logits (cases.h): q times 256, exact in every dtype */
    if (tc->special == TRR_SPECIAL_LARGE_LOGITS && slot == TRR_SLOT_X)
        for (int64_t p = 0; p < o->v.planes; p++)
            for (int64_t r = 0; r < o->v.rows; r++)
                for (int64_t c = 0; c < o->v.cols; c++) {
                    const int64_t i = trr_stored_index(&o->v, p, r, c);
                    trr_dtype_store_f32(o->host, dt, i, 256.0f * trr_dtype_load_f32(o->host, dt, i));
                }
}

/* The output buffer before a run: a byte pattern everywhere (the guard), the poison on the view's elements. */
static void fill_output(uint8_t *host, size_t bytes, const trr_stored_view *v, uint32_t poison) {
    for (size_t i = 0; i < bytes; i++) host[i] = (uint8_t)(0x3Cu ^ (uint32_t)(i * 37u));
    for (int64_t p = 0; p < v->planes; p++)
        for (int64_t r = 0; r < v->rows; r++)
            for (int64_t c = 0; c < v->cols; c++) {
                int64_t idx = trr_stored_index(v, p, r, c);
                if (v->dtype == TRR_F32) {
                    memcpy(host + idx * 4, &poison, 4);
                } else if (v->dtype == TRR_F16 || v->dtype == TRR_BF16) {
                    uint16_t h = (uint16_t)poison;
                    memcpy(host + idx * 2, &h, 2); /* the one-byte dtypes below */
                } else {
                    host[idx] = (uint8_t)poison;
                }
            }
}

/* Host memory running out stops the engine (*out_host_failed); a device allocation failing is the case's
 * failure. */
static trr_status operand_alloc(trr_context *ctx, operand *o, int *out_host_failed) {
    size_t esz = 0;
    TRR_TRY(trr_dtype_size(o->v.dtype, &esz));
    o->bytes = (size_t)(trr_stored_extent(&o->v) + TAIL_PAD) * esz;
    o->host = malloc(o->bytes);
    if (!o->host) {
        *out_host_failed = 1;
        return TRR_ERR_OUT_OF_MEMORY;
    }
    return trr_buffer_create(ctx, o->bytes, &o->buf);
}

static void operand_free(operand *o) {
    if (o->buf) trr_buffer_destroy(o->buf);
    free(o->host);
    memset(o, 0, sizeof *o);
}

/* ---- one case ---- */

typedef struct case_run {
    const trr_case *tc;
    operand op[TRR_CASE_SLOTS]; /* x, y, z, u, w (layout.h); only the slots the case has (has[]) are used */
    unsigned char has[TRR_CASE_SLOTS];
    trr_tensor t[TRR_CASE_SLOTS];
    uint8_t *w_before, *w_after; /* the second output's buffer (attention's lse) around the run, when it has one */
} case_run;

#define HAS(cr, i) ((cr)->has[i])

static trr_status layout_case(case_run *cr) {
    trr_case_views views;
    TRR_TRY(trr_case_views_make(cr->tc, &views));
    for (int i = 0; i < TRR_CASE_SLOTS; i++) cr->op[i].v = views.v[i], cr->has[i] = views.has[i];
    return TRR_OK;
}

static trr_status make_tensors(case_run *cr) {
    for (int i = 0; i < TRR_CASE_SLOTS; i++)
        if (HAS(cr, i)) TRR_TRY(trr_stored_tensor(&cr->op[i].v, cr->op[i].buf, &cr->t[i]));
    return TRR_OK;
}

/* Poisons the output, runs the op (timed) and reads the output buffer back into after. */
static trr_status run_once(trr_context *ctx, case_run *cr, uint32_t poison, uint8_t *before, uint8_t *after,
                           double *out_ms) {
    operand *z = &cr->op[TRR_OUT], *w = &cr->op[TRR_W];
    fill_output(before, z->bytes, &z->v, poison);
    TRR_TRY(trr_buffer_write(ctx, z->buf, 0, before, z->bytes));
    if (HAS(cr, TRR_W)) {
        fill_output(cr->w_before, w->bytes, &w->v, trr_conf_poison(w->v.dtype));
        TRR_TRY(trr_buffer_write(ctx, w->buf, 0, cr->w_before, w->bytes));
    }
    TRR_TRY(trr_synchronize(ctx));
    TRR_TRY(trr_timer_start(ctx));
    trr_status st = trr_case_call(ctx, cr->tc, cr->t, 0);
    double ms = 0;
    trr_status st_timer = trr_timer_stop(ctx, &ms);
    if (st != TRR_OK) return st;
    TRR_TRY(st_timer);
    *out_ms = ms;
    if (HAS(cr, TRR_W)) TRR_TRY(trr_buffer_read(ctx, w->buf, 0, cr->w_after, w->bytes));
    return trr_buffer_read(ctx, z->buf, 0, after, z->bytes);
}

static void set_message(trr_conf_result *res, trr_conf_outcome outcome, const char *what, trr_context *ctx) {
    res->outcome = outcome;
    snprintf(res->message, sizeof res->message, "%s: %s", what, trr_last_error(ctx));
}

/* The second output (slot w) judged as the first was, against ref2: the case's verdict is the worse of the two,
 * the second's message naming its operand. */
static trr_status check_second_output(const trr_conf_check_input *first, const case_run *cr, const double *ref2,
                                      trr_conf_result *res) {
    trr_call call = *first->call;
    call.z = call.w;
    trr_conf_check_input in = {.tcase = first->tcase, .call = &call, .before = cr->w_before, .after = cr->w_after,
                               .bytes = cr->op[TRR_W].bytes, .ref = ref2};
    trr_conf_result second = *res;
    TRR_TRY(trr_conf_check(&in, &second));
    const int worse = (second.outcome == TRR_CONF_FAIL && res->outcome != TRR_CONF_FAIL) ||
                      (second.outcome == res->outcome && second.ratio > res->ratio);
    if (worse) {
        const char *name = trr_op_desc_get(first->tcase->op)->operand[TRR_SLOT_W].name;
        *res = second;
        char msg[sizeof res->message];
        snprintf(msg, sizeof msg, "%s", second.message);
        if (msg[0]) snprintf(res->message, sizeof res->message, "%.32s: %.280s", name, msg);
    }
    return TRR_OK;
}

/* Runs one case to a verdict in *res. Returns a status only for failures of the engine itself (host memory). */
static trr_status run_case(trr_context *ctx, const trr_case *tc, uint64_t seed, trr_conf_result *res) {
    case_run cr = {.tc = tc};
    uint8_t *before = NULL, *after = NULL, *before2 = NULL, *after2 = NULL;
    double *ref = NULL;
    trr_status engine = TRR_OK;
    uint64_t rng = case_seed(seed, res->name);

    int host_failed = 0;
    trr_status st = layout_case(&cr);
    for (int i = 0; i < TRR_CASE_SLOTS && st == TRR_OK; i++)
        if (HAS(&cr, i)) st = operand_alloc(ctx, &cr.op[i], &host_failed);
    if (host_failed) {
        engine = TRR_ERR_OUT_OF_MEMORY;
        goto done;
    }
    if (st != TRR_OK) {
        set_message(res, TRR_CONF_FAIL, "buffer setup", ctx);
        goto done;
    }
    for (int i = 0; i < TRR_CASE_SLOTS && st == TRR_OK; i++) {
        if (!HAS(&cr, i) || trr_case_slot_is_output(i)) continue;
        fill_input(&cr.op[i], i, tc, &rng);
        st = trr_buffer_write(ctx, cr.op[i].buf, 0, cr.op[i].host, cr.op[i].bytes);
    }
    if (st != TRR_OK) {
        set_message(res, TRR_CONF_FAIL, "writing inputs", ctx);
        goto done;
    }
    if (make_tensors(&cr) != TRR_OK) {
        set_message(res, TRR_CONF_FAIL, "making tensor views", ctx);
        goto done;
    }

    before = malloc(cr.op[TRR_OUT].bytes);
    after = malloc(cr.op[TRR_OUT].bytes);
    if (HAS(&cr, TRR_W)) {
        cr.w_before = malloc(cr.op[TRR_W].bytes);
        cr.w_after = malloc(cr.op[TRR_W].bytes);
    }
    if (!before || !after || (HAS(&cr, TRR_W) && (!cr.w_before || !cr.w_after))) {
        engine = TRR_ERR_OUT_OF_MEMORY;
        goto done;
    }
    size_t out_es = 0;
    trr_dtype_size(tc->out_dtype, &out_es);
    const int one_byte = out_es == 1; /* u8 and the 8-bit floats */
    const uint32_t poison = trr_conf_poison(tc->out_dtype);
    st = run_once(ctx, &cr, poison, before, after, &res->device_ms);
    if (st == TRR_ERR_UNSUPPORTED) {
        res->outcome = TRR_CONF_UNSUPPORTED;
        snprintf(res->message, sizeof res->message, "%s", trr_last_error(ctx));
        goto done;
    }
    if (st != TRR_OK) {
        set_message(res, TRR_CONF_FAIL, "run", ctx);
        goto done;
    }
    if (one_byte) {
        /* every byte is a legal result (an 8-bit float has no spare NaN to poison with), so only a second run
         * with another poison shows an unwritten one */
        double ms2 = 0;
        before2 = malloc(cr.op[TRR_OUT].bytes);
        after2 = malloc(cr.op[TRR_OUT].bytes);
        if (!before2 || !after2) {
            engine = TRR_ERR_OUT_OF_MEMORY;
            goto done;
        }
        st = run_once(ctx, &cr, TRR_CONF_POISON_U8_B, before2, after2, &ms2);
        if (st != TRR_OK) {
            set_message(res, TRR_CONF_FAIL, "second run (byte poison)", ctx);
            goto done;
        }
    }

    /* The reference sees exactly what the backend saw: the normalised call, on host copies of the buffers. */
    trr_call call;
    int empty = 0;
    st = trr_case_call_build(ctx, tc, cr.t, 0, &call, &empty);
    if (st != TRR_OK) {
        set_message(res, TRR_CONF_FAIL, "trr_case_call_build", ctx);
        goto done;
    }
    if (empty == TRR_CALL_NOTHING) {
        /* nothing to compute, so nothing in the buffer may change */
        int changed = memcmp(before, after, cr.op[TRR_OUT].bytes) != 0 || (after2 && memcmp(before2, after2, cr.op[TRR_OUT].bytes));
        res->outcome = changed ? TRR_CONF_FAIL : TRR_CONF_PASS;
        res->metric = "";
        if (changed) snprintf(res->message, sizeof res->message, "an empty call changed the output buffer");
        goto done;
    }
    void *hosts[TRR_CASE_SLOTS];
    for (int i = 0; i < TRR_CASE_SLOTS; i++) hosts[i] = HAS(&cr, i) ? cr.op[i].host : NULL;
    hosts[TRR_OUT] = after;
    hosts[TRR_W] = cr.w_after;
    trr_case_call_host(&call, hosts);
    if (trr_op_desc_get(tc->op)->shape == TRR_SHAPE_ATTENTION) { /* conformance_attention.c */
        trr_conf_attention_input ain = {.tcase = tc, .call = &call, .o_before = before, .o_after = after,
                                        .o_bytes = cr.op[TRR_OUT].bytes, .lse_before = cr.w_before,
                                        .lse_after = cr.w_after, .lse_bytes = cr.op[TRR_W].bytes};
        st = trr_conf_check_attention(&ain, res);
        if (st == TRR_ERR_OUT_OF_MEMORY) engine = st;
        else if (st != TRR_OK) res->outcome = TRR_CONF_FAIL;
        goto done;
    }
    int64_t out_rows, out_cols;
    trr_case_out_shape(tc, &out_rows, &out_cols);
    size_t n_ref = (size_t)out_rows * (size_t)out_cols;
    /* a second output (a user row op's h) has the first one's shape: its reference follows the first's */
    const int second = HAS(&cr, TRR_W);
    ref = malloc((n_ref ? n_ref : 1) * (second ? 2 : 1) * sizeof *ref);
    if (!ref) {
        engine = TRR_ERR_OUT_OF_MEMORY;
        goto done;
    }
    st = trr_reference_run_outputs(&call, ref, second ? ref + n_ref : NULL);
    if (st != TRR_OK) {
        res->outcome = TRR_CONF_FAIL;
        snprintf(res->message, sizeof res->message, "reference: %s", trr_status_name(st));
        goto done;
    }
    trr_conf_check_input in = {.tcase = tc, .call = &call, .before = before, .after = after, .after2 = after2,
                               .before2 = before2, .bytes = cr.op[TRR_OUT].bytes, .ref = ref};
    st = trr_conf_check(&in, res);
    if (st == TRR_OK && second) st = check_second_output(&in, &cr, ref + n_ref, res);
    if (st == TRR_ERR_OUT_OF_MEMORY) engine = st;
    else if (st != TRR_OK) res->outcome = TRR_CONF_FAIL;

done:
    free(ref);
    free(cr.w_before);
    free(cr.w_after);
    free(before);
    free(after);
    free(before2);
    free(after2);
    for (int i = 0; i < TRR_CASE_SLOTS; i++) operand_free(&cr.op[i]);
    return engine;
}

/* ---- the run ---- */

static void summarise(trr_conf_report *rep) {
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *r = &rep->results[i];
        trr_conf_summary *s = NULL;
        for (int j = 0; j < rep->n_summary; j++) {
            trr_conf_summary *t = &rep->summary[j];
            if (t->op == r->tcase.op && t->in_dtype == r->tcase.in_dtype && t->out_dtype == r->tcase.out_dtype &&
                t->mixed == r->tcase.mixed && (!t->mixed || t->in2_dtype == r->tcase.in2_dtype))
                s = t;
        }
        if (!s) {
            if (rep->n_summary >= (int)(sizeof rep->summary / sizeof rep->summary[0])) {
                /* no row left for this signature: the totals still count the case */
                rep->passed += r->outcome == TRR_CONF_PASS;
                rep->failed += r->outcome == TRR_CONF_FAIL;
                rep->unsupported += r->outcome == TRR_CONF_UNSUPPORTED;
                continue;
            }
            s = &rep->summary[rep->n_summary++];
            memset(s, 0, sizeof *s);
            s->op = r->tcase.op, s->in_dtype = r->tcase.in_dtype, s->out_dtype = r->tcase.out_dtype;
            s->mixed = r->tcase.mixed, s->in2_dtype = r->tcase.in2_dtype;
        }
        if (r->outcome == TRR_CONF_PASS) s->pass++, rep->passed++;
        if (r->outcome == TRR_CONF_FAIL) s->fail++, rep->failed++;
        if (r->outcome == TRR_CONF_UNSUPPORTED) s->unsupported++, rep->unsupported++;
        if (r->outcome != TRR_CONF_UNSUPPORTED && r->ratio > s->worst_ratio) s->worst_ratio = r->ratio;
        int replace = !s->first_problem[0] ? r->outcome != TRR_CONF_PASS
                                           : r->outcome == TRR_CONF_FAIL && s->fail == 1;
        if (replace) snprintf(s->first_problem, sizeof s->first_problem, "%s: %s", r->name, r->message);
    }
}

trr_status trr_conformance_run(trr_context *ctx, const trr_conf_options *options, trr_conf_report **out_report) {
    if (!ctx || !options || !out_report) return TRR_ERR_INVALID_ARGUMENT;
    const trr_case *cases;
    int n_cases;
    TRR_TRY(trr_cases_get(options->quick, &cases, &n_cases));

    trr_conf_report *rep = calloc(1, sizeof *rep);
    if (!rep) return TRR_ERR_OUT_OF_MEMORY;
    rep->results = calloc((size_t)n_cases + 1, sizeof *rep->results);
    if (!rep->results) {
        free(rep);
        return TRR_ERR_OUT_OF_MEMORY;
    }
    trr_status st = trr_context_device(ctx, &rep->device);
    if (st != TRR_OK) {
        trr_conformance_free(rep);
        return st;
    }
    rep->seed = options->seed;
    rep->quick = options->quick;
    trr_report_date_now(rep->date, sizeof rep->date);
    snprintf(rep->command_line, sizeof rep->command_line, "%s", options->command_line ? options->command_line : "");

    int total = 0;
    for (int i = 0; i < n_cases; i++)
        if ((!options->op_mask || (options->op_mask & ((uint64_t)1 << cases[i].op))) &&
            (!options->select || options->select(&cases[i], options->select_user)))
            total++;

    const double t0 = trr_now_s();
    for (int i = 0; i < n_cases; i++) {
        const trr_case *tc = &cases[i];
        if (options->op_mask && !(options->op_mask & ((uint64_t)1 << tc->op))) continue;
        if (options->select && !options->select(tc, options->select_user)) continue;
        trr_conf_result *res = &rep->results[rep->n_results];
        res->tcase = *tc;
        res->metric = "";
        trr_case_describe(tc, res->name, sizeof res->name);
        const double c0 = trr_now_s();
        st = run_case(ctx, tc, options->seed, res);
        if (st != TRR_OK) {
            trr_conformance_free(rep);
            return st;
        }
        res->wall_ms = 1e3 * (trr_now_s() - c0);
        rep->n_results++;
        if (options->progress)
            options->progress(options->user, rep->n_results - 1, total, res, trr_now_s() - t0);
    }
    rep->seconds = trr_now_s() - t0;
    summarise(rep);
    *out_report = rep;
    return TRR_OK;
}

void trr_conformance_free(trr_conf_report *report) {
    if (!report) return;
    free(report->results);
    free(report);
}

const char *trr_conf_outcome_name(trr_conf_outcome outcome) {
    switch (outcome) {
    case TRR_CONF_PASS: return "pass";
    case TRR_CONF_FAIL: return "FAIL";
    case TRR_CONF_UNSUPPORTED: return "unsupported";
    default: return "?";
    }
}
