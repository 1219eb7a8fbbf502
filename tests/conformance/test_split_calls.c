/* Calls past the 32-bit index run in parts (core/parts.c). Two ways in:
 *  - the cut lowered to a few thousand elements (an internal hook, trr_call_part_limit_set), so the conformance
 *    cases it applies to run in many parts on every backend, checked against the float64 reference as usual;
 *  - views that really span more than 2^31 elements on the CPU backend: rows 2^31 elements apart in a mapped,
 *    mostly untouched range, so the kernels run at offsets past 2^31 while only a few pages are written.
 * And what no cut can bring under the limit (one row past it, a column of a matmul's B, one key/value head of
 * attention) is TRR_ERR_OVERFLOW. */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "conformance.h"
#include "layout.h"
#include "test_support.h"
#include "validate.h"

/* The lowered cut, odd so parts end off vector boundaries: 1021 elements, and 5000 for rgb_to_grey, whose
 * parts each span two of the image's planes (the case list has no image of planes under 1021 / 2 elements that
 * span more than 1021 in all). */
static int64_t limit;
/* The quick case list, and which of its cases a run takes: those that run in parts, every one on the CPU and a
 * few per op on the driver backends, whose launches and pipelines cost more per part. */
static const trr_case *list;
static int list_count;
static unsigned char chosen[4096];

/* The span (elements from its offset) of a stored view, whole, and of its smallest part: one row or column of
 * one matrix as the op's shape rule cuts it. */
static int64_t whole_span(const trr_stored_view *v) { return trr_stored_extent(v) - v->offset; }

/* Whether the case runs in parts under LIMIT: some operand spans LIMIT or more, and the smallest parts its shape
 * rule can cut fit. */
static int cuts(const trr_case *c) {
    trr_case_views views;
    if (trr_case_views_make(c, &views) != TRR_OK) return 0;
    const trr_op_desc *d = trr_op_desc_get(c->op);
    int64_t widest = 0;
    for (int i = 0; i < TRR_CASE_SLOTS; i++)
        if (views.has[i] && whole_span(&views.v[i]) > widest) widest = whole_span(&views.v[i]);
    if (widest < limit) return 0;
    const trr_stored_view *x = &views.v[TRR_SLOT_X], *y = &views.v[TRR_SLOT_Y];
    switch (d->shape) {
    case TRR_SHAPE_ELEMENTWISE: return 1;
    case TRR_SHAPE_PLANES: return 2 * x->plane_stride + 1 < limit;
    case TRR_SHAPE_MATMUL: {
        const int64_t a_row = x->transposed ? (x->rows - 1) * x->row_stride + 1 : x->cols;
        const int64_t b_col = y->transposed ? y->cols : (y->rows - 1) * y->row_stride + 1;
        return a_row < limit && b_col < limit;
    }
    case TRR_SHAPE_ATTENTION: /* one key/value head of [Skv, D] (keys are never cut), one row of q */
        return (y->rows - 1) * y->row_stride + y->cols < limit && x->cols < limit;
    default: return x->cols < limit; /* one row of the row-wise rules */
    }
}

static void choose(int per_op, unsigned op_mask) {
    int taken[TRR_OP_COUNT] = {0};
    cr_assert_eq(trr_cases_get(1, &list, &list_count), TRR_OK);
    cr_assert_leq(list_count, (int)sizeof chosen);
    for (int i = 0; i < list_count; i++) {
        const trr_case *c = &list[i];
        chosen[i] = (op_mask & (1u << c->op)) && cuts(c) && (!per_op || taken[c->op] < per_op);
        taken[c->op] += chosen[i];
    }
}

static int cut_under_limit(const trr_case *c, void *user) {
    (void)user;
    return c >= list && c < list + list_count && chosen[c - list];
}

/* The quick cases of the ops in op_mask (0: all) that run in parts under the cut; the shape rules that ran. */
static unsigned run_cut(trr_context *ctx, const char *spec, int64_t cut, unsigned op_mask, int per_op) {
    limit = cut;
    choose(per_op, op_mask);
    trr_call_part_limit_set(cut);
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .quick = 1, .op_mask = op_mask, .select = cut_under_limit};
    trr_conf_report *report = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &report), TRR_OK, "%s", trr_last_error(ctx));
    if (report->failed) trr_conformance_print_matrix((const trr_conf_report *const *)&report, 1, stdout);
    cr_expect_eq(report->failed, 0, "%s: %d cases failed in parts of under %lld elements (seed %llu)", spec,
                 report->failed, (long long)cut, (unsigned long long)opt.seed);
    unsigned shapes = 0;
    for (int i = 0; i < report->n_results; i++)
        if (report->results[i].outcome == TRR_CONF_PASS)
            shapes |= 1u << trr_op_desc_get(report->results[i].tcase.op)->shape;
    trr_conformance_free(report);
    return shapes;
}

static void parts_match_the_reference(const char *backend) {
    char spec[32];
    snprintf(spec, sizeof spec, "%s:0", backend);
    trr_context *ctx = open_device_or_skip(spec, backend);
    const int per_op = strcmp(backend, "cpu") ? 2 : 0;
    unsigned shapes = run_cut(ctx, spec, 1021, ~(1u << TRR_OP_RGB_TO_GREY), per_op);
    shapes |= run_cut(ctx, spec, 5000, 1u << TRR_OP_RGB_TO_GREY, per_op);
    /* every shape rule had cases that ran in parts */
    cr_expect_eq(shapes, (1u << TRR_SHAPE_COUNT) - 1, "%s: shape rules 0x%x ran in parts", spec, shapes);
    trr_context_destroy(ctx);
}

Test(split_calls, parts_match_the_reference_cpu, .timeout = 600) { parts_match_the_reference("cpu"); }
Test(split_calls, parts_match_the_reference_opencl, .timeout = 600) { parts_match_the_reference("opencl"); }
Test(split_calls, parts_match_the_reference_vulkan, .timeout = 600) { parts_match_the_reference("vulkan"); }

/* ---- views past 2^31 elements on the CPU backend ---- */

#define FAR ((int64_t)1 << 31) /* elements between the rows of the views below */

/* Two ranges of bytes (inputs and outputs: views interleaved in one buffer would overlap) mapped without
 * reserving memory, so only the pages written take any, each wrapped as a buffer of one CPU context. */
typedef struct far_buffers {
    trr_context *ctx;
    void *host[2];
    size_t bytes;
    trr_buffer *buf[2];
} far_buffers;

static far_buffers far_open(size_t bytes) {
    far_buffers f = {.bytes = bytes};
    cr_assert_eq(trr_context_create("cpu", &f.ctx), TRR_OK, "%s", trr_last_error(NULL));
    for (int i = 0; i < 2; i++) {
        f.host[i] = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (f.host[i] == MAP_FAILED) cr_skip_test("cannot map %zu bytes of address space", bytes);
        cr_assert_eq(trr_buffer_wrap(f.ctx, (uint64_t)(uintptr_t)f.host[i], bytes, &f.buf[i]), TRR_OK, "%s",
                     trr_last_error(f.ctx));
    }
    return f;
}

static void far_close(far_buffers *f) {
    for (int i = 0; i < 2; i++) {
        trr_buffer_destroy(f->buf[i]);
        munmap(f->host[i], f->bytes);
    }
    trr_context_destroy(f->ctx);
}

/* rows x cols f32 in buffer i with row stride FAR at element offset `at`. */
static trr_tensor far_rows(const far_buffers *f, int i, int64_t at, int64_t rows, int64_t cols) {
    trr_tensor t;
    cr_assert_eq(trr_tensor_2d(f->buf[i], (size_t)at * 4, TRR_F32, rows, cols, FAR, &t), TRR_OK);
    return t;
}

Test(split_calls, copy_softmax_and_matmul_rows_past_2_31_elements) {
    const int64_t rows = 3, cols = 1000, k = 8;
    far_buffers f = far_open((size_t)(FAR * rows + 64) * 4);
    float *h = f.host[0], *o = f.host[1];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) h[r * FAR + c] = (float)((r * 7 + c * 3) % 19) * 0.25f - 2.0f;
    /* copy: x rows at 0, FAR, 2 FAR of one buffer; z rows at 5, FAR + 5, ... of the other */
    trr_tensor x = far_rows(&f, 0, 0, rows, cols), z = far_rows(&f, 1, 5, rows, cols);
    cr_assert_eq(trr_copy(f.ctx, &x, &z), TRR_OK, "%s", trr_last_error(f.ctx));
    for (int64_t r = 0; r < rows; r++)
        cr_expect_eq(memcmp(o + r * FAR + 5, h + r * FAR, (size_t)cols * 4), 0, "copy: row %lld", (long long)r);
    /* softmax of the same rows into z */
    cr_assert_eq(trr_softmax(f.ctx, &x, &z), TRR_OK, "%s", trr_last_error(f.ctx));
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, s = 0.0;
        for (int64_t c = 0; c < cols; c++) mx = fmax(mx, h[r * FAR + c]);
        for (int64_t c = 0; c < cols; c++) s += exp((double)h[r * FAR + c] - mx);
        for (int64_t c = 0; c < cols; c += 97) {
            const double want = exp((double)h[r * FAR + c] - mx) / s;
            cr_expect(fabs(o[r * FAR + 5 + c] - want) <= 1e-5 * want + 1e-6, "softmax (%lld, %lld): %g, want %g",
                      (long long)r, (long long)c, (double)o[r * FAR + 5 + c], want);
        }
    }
    /* matmul: A's rows FAR apart ([rows, k]), B [k, 4] packed past A's first row, C [rows, 4] in the outputs */
    const int64_t n = 4, b_at = cols + 16;
    for (int64_t i = 0; i < k * n; i++) h[b_at + i] = (float)(i % 5) - 2.0f;
    trr_tensor a = far_rows(&f, 0, 0, rows, k), b, cm;
    cr_assert_eq(trr_tensor_2d(f.buf[0], (size_t)b_at * 4, TRR_F32, k, n, 0, &b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(f.buf[1], 0, TRR_F32, rows, n, FAR, &cm), TRR_OK);
    cr_assert_eq(trr_matmul(f.ctx, &a, &b, &cm, TRR_EPI_NONE, 0.0f, 0), TRR_OK, "%s", trr_last_error(f.ctx));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double want = 0.0;
            for (int64_t q = 0; q < k; q++) want += (double)h[r * FAR + q] * h[b_at + q * n + j];
            cr_expect_float_eq(o[r * FAR + j], (float)want, 1e-6f, "matmul (%lld, %lld)", (long long)r, (long long)j);
        }
    far_close(&f);
}

/* attention with q's heads and lse's 2^31 elements apart: cut into a part per query head (one key/value head
 * for both, GQA), causal with Sq < Skv, against a float64 softmax. */
Test(split_calls, attention_heads_past_2_31_elements) {
    enum { HQ = 2, SQ = 3, SKV = 5, D = 4, K_AT = 64, V_AT = 128, LSE_AT = 64 };
    far_buffers f = far_open((size_t)(FAR + 256) * 4);
    float *h = f.host[0], *o = f.host[1];
    for (int64_t hd = 0; hd < HQ; hd++)
        for (int64_t i = 0; i < SQ * D; i++) h[hd * FAR + i] = (float)((hd * 5 + i * 7) % 11) * 0.25f - 1.25f;
    for (int64_t i = 0; i < SKV * D; i++) {
        h[K_AT + i] = (float)((i * 3) % 13) * 0.2f - 1.2f;
        h[V_AT + i] = (float)((i * 5) % 9) - 4.0f;
    }
    const int64_t q_shape[4] = {1, HQ, SQ, D}, q_strides[4] = {FAR * HQ, FAR, D, 1};
    const int64_t kv_shape[4] = {1, 1, SKV, D}, kv_strides[4] = {SKV * D, SKV * D, D, 1};
    const int64_t o_strides[4] = {HQ * SQ * D, SQ * D, D, 1}, lse_strides[3] = {FAR * HQ, FAR, 1};
    trr_tensor q, k, v, out, lse;
    cr_assert_eq(trr_tensor_nd(f.buf[0], 0, TRR_F32, 4, q_shape, q_strides, &q), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[0], K_AT * 4, TRR_F32, 4, kv_shape, kv_strides, &k), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[0], V_AT * 4, TRR_F32, 4, kv_shape, kv_strides, &v), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[1], 0, TRR_F32, 4, q_shape, o_strides, &out), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[1], LSE_AT * 4, TRR_F32, 3, q_shape, lse_strides, &lse), TRR_OK);
    cr_assert_eq(trr_attention(f.ctx, &q, &k, &v, &out, &lse, 0.0f, 1), TRR_OK, "%s", trr_last_error(f.ctx));
    for (int64_t hd = 0; hd < HQ; hd++)
        for (int64_t i = 0; i < SQ; i++) {
            const int64_t seen = i + SKV - SQ + 1; /* causal, bottom-right aligned */
            double s[SKV], mx = -INFINITY, l = 0.0;
            for (int64_t j = 0; j < seen; j++) {
                s[j] = 0.0;
                for (int64_t d = 0; d < D; d++) s[j] += (double)h[hd * FAR + i * D + d] * h[K_AT + j * D + d];
                s[j] *= 0.5; /* 1/sqrt(D) */
                mx = fmax(mx, s[j]);
            }
            for (int64_t j = 0; j < seen; j++) l += exp(s[j] - mx);
            for (int64_t d = 0; d < D; d++) {
                double want = 0.0;
                for (int64_t j = 0; j < seen; j++) want += exp(s[j] - mx) / l * h[V_AT + j * D + d];
                cr_expect(fabs(o[(hd * SQ + i) * D + d] - want) <= 1e-5 * (1.0 + fabs(want)),
                          "o (%lld, %lld, %lld): %g, want %g", (long long)hd, (long long)i, (long long)d,
                          (double)o[(hd * SQ + i) * D + d], want);
            }
            const double lse_want = mx + log(l), got = o[LSE_AT + hd * FAR + i];
            cr_expect(fabs(got - lse_want) <= 1e-5 * (1.0 + fabs(lse_want)), "lse (%lld, %lld): %g, want %g",
                      (long long)hd, (long long)i, got, lse_want);
        }
    far_close(&f);
}

/* What no cut brings under 2^31 is refused before anything runs. */
Test(split_calls, what_no_part_can_hold_is_an_overflow) {
    far_buffers f = far_open((size_t)(FAR + 64) * 4 * 2);
    trr_tensor row, out, b, a, c;
    /* one softmax row of 2^31 elements */
    cr_assert_eq(trr_tensor_2d(f.buf[0], 0, TRR_F32, 1, FAR, 0, &row), TRR_OK);
    cr_assert_eq(trr_tensor_2d(f.buf[1], 0, TRR_F32, 1, FAR, 0, &out), TRR_OK);
    cr_expect_eq(trr_softmax(f.ctx, &row, &out), TRR_ERR_OVERFLOW, "%s", trr_last_error(f.ctx));
    cr_expect(strstr(trr_last_error(f.ctx), "one row") != NULL, "%s", trr_last_error(f.ctx));
    /* a matmul B [2, 2] whose rows are 2^31 apart: no column of it fits */
    cr_assert_eq(trr_tensor_2d(f.buf[0], 0, TRR_F32, 2, 2, FAR, &b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(f.buf[0], (size_t)(FAR + 16) * 4, TRR_F32, 2, 2, 0, &a), TRR_OK);
    cr_assert_eq(trr_tensor_2d(f.buf[1], 0, TRR_F32, 2, 2, 0, &c), TRR_OK);
    cr_expect_eq(trr_matmul(f.ctx, &a, &b, &c, TRR_EPI_NONE, 0.0f, 0), TRR_ERR_OVERFLOW, "%s", trr_last_error(f.ctx));
    cr_expect(strstr(trr_last_error(f.ctx), "B spans") != NULL, "%s", trr_last_error(f.ctx));
    /* an attention key/value head of two keys 2^31 elements apart: keys are never cut */
    const int64_t q_shape[4] = {1, 1, 1, 2}, kv_shape[4] = {1, 1, 2, 2}, kv_strides[4] = {2 * FAR, 2 * FAR, FAR, 1};
    const int64_t q_strides[4] = {2, 2, 2, 1};
    trr_tensor q, k, v, o;
    cr_assert_eq(trr_tensor_nd(f.buf[0], 0, TRR_F32, 4, kv_shape, kv_strides, &k), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[0], 0, TRR_F32, 4, kv_shape, kv_strides, &v), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[0], 64, TRR_F32, 4, q_shape, q_strides, &q), TRR_OK);
    cr_assert_eq(trr_tensor_nd(f.buf[1], 0, TRR_F32, 4, q_shape, q_strides, &o), TRR_OK);
    cr_expect_eq(trr_attention(f.ctx, &q, &k, &v, &o, NULL, 0.0f, 0), TRR_ERR_OVERFLOW, "%s", trr_last_error(f.ctx));
    cr_expect(strstr(trr_last_error(f.ctx), "keys are never cut") != NULL, "%s", trr_last_error(f.ctx));
    far_close(&f);
}
