/* attention's harness: the float64 reference (harness/reference_attention.c) on properties that pin it down, the
 * checker (harness/conformance_attention.c) on hand-made outputs, and the case list's layouts and cost. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "conformance_check.h"
#include "half.h"
#include "layout.h"
#include "op_table.h"
#include "reference.h"
#include "validate.h"

/* A packed f32 call over host arrays: q [B,Hq,Sq,D], k and v [B,Hkv,Skv,D]. */
typedef struct host_call {
    trr_call call;
    float *q, *k, *v;
} host_call;

static float unit(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static host_call make(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv, int64_t D, int causal,
                      uint64_t seed) {
    host_call h;
    memset(&h, 0, sizeof h);
    h.q = malloc((size_t)(B * Hq * Sq * D) * sizeof(float));
    h.k = malloc((size_t)(B * Hkv * Skv * D + 1) * sizeof(float));
    h.v = malloc((size_t)(B * Hkv * Skv * D + 1) * sizeof(float));
    cr_assert(h.q && h.k && h.v);
    for (int64_t i = 0; i < B * Hq * Sq * D; i++) h.q[i] = unit(&seed);
    for (int64_t i = 0; i < B * Hkv * Skv * D; i++) h.k[i] = unit(&seed), h.v[i] = unit(&seed);
    trr_call *c = &h.call;
    c->op = TRR_OP_ATTENTION;
    c->attn = (trr_attention_shape){.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seq_q = Sq, .seq_kv = Skv,
                                    .head_dim = D, .scale = (float)(1.0 / sqrt((double)D)), .causal = causal};
    c->x = (trr_operand){.mem = h.q, .dtype = TRR_F32, .stride0 = D, .stride1 = Sq * D, .batch_stride = Hq * Sq * D};
    c->y = (trr_operand){.mem = h.k, .dtype = TRR_F32, .stride0 = D, .stride1 = Skv * D, .batch_stride = Hkv * Skv * D};
    c->u = c->y;
    c->u.mem = h.v;
    return h;
}

static void release(host_call *h) { free(h->q), free(h->k), free(h->v); }

Test(attention_reference, one_key_is_that_value) {
    host_call h = make(1, 2, 1, 3, 1, 5, 0, 7);
    double o[2 * 3 * 5], lse[6], L[6];
    cr_assert_eq(trr_reference_attention(&h.call, o, lse, L), TRR_OK);
    for (int r = 0; r < 6; r++) {
        double dot = 0, mag = 0;
        for (int d = 0; d < 5; d++) {
            cr_expect_eq(o[r * 5 + d], (double)h.v[d], "row %d d %d", r, d);
            dot += (double)h.q[r * 5 + d] * h.k[d], mag += fabs((double)h.q[r * 5 + d] * h.k[d]);
        }
        cr_expect_float_eq(lse[r], (double)h.call.attn.scale * dot, 1e-15);
        cr_expect_float_eq(L[r], (double)h.call.attn.scale * mag, 1e-15);
    }
    release(&h);
}

/* Keys that are all the same give the plain mean of v and lse = s + ln(Skv). */
Test(attention_reference, equal_keys_average_the_values) {
    host_call h = make(1, 1, 1, 2, 7, 4, 0, 11);
    for (int j = 1; j < 7; j++) memcpy(h.k + j * 4, h.k, 4 * sizeof(float));
    double o[8], lse[2];
    cr_assert_eq(trr_reference_attention(&h.call, o, lse, NULL), TRR_OK);
    for (int i = 0; i < 2; i++) {
        double s = 0;
        for (int d = 0; d < 4; d++) s += (double)h.q[i * 4 + d] * h.k[d];
        cr_expect_float_eq(lse[i], s * h.call.attn.scale + log(7.0), 1e-13);
        for (int d = 0; d < 4; d++) {
            double mean = 0;
            for (int j = 0; j < 7; j++) mean += h.v[j * 4 + d] / 7.0;
            cr_expect_float_eq(o[i * 4 + d], mean, 1e-14);
        }
    }
    release(&h);
}

/* causal, bottom-right aligned: with Sq = Skv row 0 sees key 0 only; with Sq > Skv the first Sq - Skv rows see
 * nothing (o = 0, lse = -inf) and the last row sees every key, as without the mask. */
Test(attention_reference, causal_alignment) {
    host_call h = make(1, 1, 1, 5, 5, 3, 1, 3);
    double o[15], lse[5];
    cr_assert_eq(trr_reference_attention(&h.call, o, lse, NULL), TRR_OK);
    for (int d = 0; d < 3; d++) cr_expect_eq(o[d], (double)h.v[d]);
    release(&h);
    h = make(1, 1, 1, 6, 2, 3, 1, 5);
    double o2[18], lse2[6], full[18], lfull[6];
    cr_assert_eq(trr_reference_attention(&h.call, o2, lse2, NULL), TRR_OK);
    h.call.attn.causal = 0;
    cr_assert_eq(trr_reference_attention(&h.call, full, lfull, NULL), TRR_OK);
    for (int i = 0; i < 4; i++) {
        cr_expect(isinf(lse2[i]) && lse2[i] < 0, "row %d lse %g", i, lse2[i]);
        for (int d = 0; d < 3; d++) cr_expect_eq(o2[i * 3 + d], 0.0);
    }
    for (int d = 0; d < 3; d++) cr_expect_eq(o2[4 * 3 + d], (double)h.v[d]); /* row 4 sees key 0 */
    for (int d = 0; d < 3; d++) cr_expect_eq(o2[5 * 3 + d], full[5 * 3 + d]);
    cr_expect_eq(lse2[5], lfull[5]);
    cr_expect_eq(trr_reference_attention_visible(&h.call, 0), 2); /* without the mask */
    h.call.attn.causal = 1;
    cr_expect_eq(trr_reference_attention_visible(&h.call, 3), 0);
    cr_expect_eq(trr_reference_attention_visible(&h.call, 4), 1);
    release(&h);
}

/* grouped-query attention: query head h reads kv head h / (Hq / Hkv), the same as one head alone */
Test(attention_reference, gqa_heads_read_their_group) {
    const int64_t Hq = 8, Hkv = 2, Sq = 3, Skv = 4, D = 2;
    host_call h = make(2, Hq, Hkv, Sq, Skv, D, 0, 13);
    double *o = malloc((size_t)(2 * Hq * Sq * D) * sizeof *o);
    cr_assert(o);
    cr_assert_eq(trr_reference_attention(&h.call, o, NULL, NULL), TRR_OK);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t hq = 0; hq < Hq; hq++) {
            trr_call one = h.call;
            one.attn.batch = 1, one.attn.heads_q = 1, one.attn.heads_kv = 1;
            one.x.offset = b * Hq * Sq * D + hq * Sq * D;
            one.y.offset = one.u.offset = b * Hkv * Skv * D + (hq / (Hq / Hkv)) * Skv * D;
            double single[6];
            cr_assert_eq(trr_reference_attention(&one, single, NULL, NULL), TRR_OK);
            for (int64_t i = 0; i < Sq * D; i++) cr_expect_eq(o[(b * Hq + hq) * Sq * D + i], single[i]);
            double row[2], lse;
            cr_assert_eq(trr_reference_attention_row(&h.call, b, hq, 1, row, &lse, NULL), TRR_OK);
            cr_expect(row[0] == single[2] && row[1] == single[3]);
        }
    free(o);
    release(&h);
}

/* ---- the checker on hand-made outputs: B 1, Hq 2, Hkv 1, Sq 3, Skv 2, causal (row 0 of each head sees no key) ---- */

typedef struct fixture {
    host_call h;
    trr_case tc;
    uint8_t o_before[512], o_after[512], l_before[64], l_after[64];
    double oref[12], lref[6];
} fixture;

enum { OOFF = 4, LOFF = 2 }; /* element offsets of o and lse in their buffers */

static void make_fixture(fixture *f, trr_dtype odt) {
    memset(f, 0, sizeof *f);
    f->h = make(1, 2, 1, 3, 2, 2, 1, 29);
    trr_call *c = &f->h.call;
    c->z = (trr_operand){.offset = OOFF, .dtype = odt, .stride0 = 2, .stride1 = 6, .batch_stride = 12};
    c->w = (trr_operand){.offset = LOFF, .dtype = TRR_F32, .stride0 = 1, .stride1 = 3, .batch_stride = 6};
    c->attn.has_lse = 1;
    f->tc = (trr_case){.op = TRR_OP_ATTENTION, .in_dtype = TRR_F32, .out_dtype = odt};
    for (int i = 0; i < 512; i++) f->o_before[i] = (uint8_t)(0x3C ^ (i * 37));
    for (int i = 0; i < 64; i++) f->l_before[i] = (uint8_t)(0x5A ^ (i * 11));
    cr_assert_eq(trr_reference_attention(c, f->oref, f->lref, NULL), TRR_OK);
    memcpy(f->o_after, f->o_before, 512);
    memcpy(f->l_after, f->l_before, 64);
    for (int i = 0; i < 12; i++) trr_dtype_store_f32(f->o_after, odt, OOFF + i, (float)f->oref[i]);
    for (int i = 0; i < 6; i++) trr_dtype_store_f32(f->l_after, TRR_F32, LOFF + i, (float)f->lref[i]);
}

static trr_conf_result judge(fixture *f) {
    trr_conf_attention_input in = {.tcase = &f->tc, .call = &f->h.call, .o_before = f->o_before,
                                   .o_after = f->o_after, .o_bytes = 512, .lse_before = f->l_before,
                                   .lse_after = f->l_after, .lse_bytes = 64};
    trr_conf_result r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(trr_conf_check_attention(&in, &r), TRR_OK);
    release(&f->h);
    return r;
}

Test(attention_checker, correct_outputs_pass) {
    const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int t = 0; t < 3; t++) {
        fixture f;
        make_fixture(&f, dts[t]);
        trr_conf_result r = judge(&f);
        cr_expect_eq(r.outcome, TRR_CONF_PASS, "%s", r.message);
        cr_expect(r.ratio < 1.0);
    }
}

Test(attention_checker, no_key_rows_must_be_zero_and_minus_inf) {
    fixture f;
    make_fixture(&f, TRR_F32);
    cr_assert(f.oref[0] == 0.0 && isinf(f.lref[0]));
    trr_dtype_store_f32(f.o_after, TRR_F32, OOFF + 1, 1e-30f);
    trr_conf_result r = judge(&f);
    cr_expect_eq(r.outcome, TRR_CONF_FAIL);
    cr_expect(strstr(r.message, "see no key"), "%s", r.message);
    make_fixture(&f, TRR_F32);
    trr_dtype_store_f32(f.l_after, TRR_F32, LOFF + 3, -1e30f); /* head 1, row 0 */
    r = judge(&f);
    cr_expect_eq(r.outcome, TRR_CONF_FAIL);
    cr_expect(strstr(r.message, "see no key"), "%s", r.message);
}

Test(attention_checker, errors_past_the_bounds_fail) {
    fixture f;
    make_fixture(&f, TRR_F32);
    trr_dtype_store_f32(f.o_after, TRR_F32, OOFF + 4, (float)(f.oref[4] * (1 + 1e-3)));
    trr_conf_result r = judge(&f);
    cr_expect_eq(r.outcome, TRR_CONF_FAIL);
    cr_expect(strstr(r.message, "frobenius"), "%s", r.message);
    make_fixture(&f, TRR_F32);
    trr_dtype_store_f32(f.l_after, TRR_F32, LOFF + 2, (float)(f.lref[2] + 1e-3));
    r = judge(&f);
    cr_expect_eq(r.outcome, TRR_CONF_FAIL);
    cr_expect(strstr(r.message, "lse error"), "%s", r.message);
    make_fixture(&f, TRR_F16);
    trr_dtype_store_f32(f.o_after, TRR_F16, OOFF + 5, (float)(f.oref[5] * 1.05 + 0.01));
    r = judge(&f);
    cr_expect_eq(r.outcome, TRR_CONF_FAIL, "%s", r.message);
}

Test(attention_checker, poison_guards_and_nonfinite_fail) {
    fixture f;
    make_fixture(&f, TRR_BF16);
    const uint16_t poison = TRR_CONF_POISON_BF16;
    memcpy(f.o_after + (OOFF + 7) * 2, &poison, 2);
    trr_conf_result r = judge(&f);
    cr_expect_eq(r.outcome, TRR_CONF_FAIL);
    cr_expect(strstr(r.message, "not written"), "%s", r.message);
    make_fixture(&f, TRR_F32);
    const uint32_t lp = TRR_CONF_POISON_F32;
    memcpy(f.l_after + (LOFF + 5) * 4, &lp, 4);
    r = judge(&f);
    cr_expect(strstr(r.message, "not written"), "%s", r.message);
    make_fixture(&f, TRR_F32);
    f.o_after[(OOFF + 12) * 4] ^= 1; /* just past the view */
    r = judge(&f);
    cr_expect(strstr(r.message, "guard bytes around o"), "%s", r.message);
    make_fixture(&f, TRR_F32);
    f.l_after[0] ^= 1;
    r = judge(&f);
    cr_expect(strstr(r.message, "guard bytes around lse"), "%s", r.message);
    make_fixture(&f, TRR_F16);
    trr_dtype_store_f32(f.o_after, TRR_F16, OOFF + 3, INFINITY);
    r = judge(&f);
    cr_expect(strstr(r.message, "non-finite"), "%s", r.message);
}

Test(attention_checker, f32_bounds_grow_with_the_logits) {
    cr_expect_float_eq(trr_conf_attention_f32_bound(64, 0.0), 1e-5, 1e-20);
    cr_expect_float_eq(trr_conf_attention_f32_bound(64, 4.0), 1e-5 + 72.0 * 4.0 / 16777216.0, 1e-20);
    cr_expect_float_eq(trr_conf_attention_lse_bound(120, 10.0, -3.0), 4e-5 + 128.0 * 10.0 / 16777216.0, 1e-18);
}

/* ---- the case list ---- */

/* Every case's views pass the front-end's validation, lse where the case asks for it, and stay in the order
 * and strides the case names. */
Test(attention_cases, views_validate) {
    const trr_case *cases;
    int n;
    cr_assert_eq(trr_cases_get(0, &cases, &n), TRR_OK);
    trr_context *ctx;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    int seen = 0, quick = 0, bshd = 0, nokey = 0, gqa8 = 0;
    double work = 0;
    for (int i = 0; i < n; i++) {
        const trr_case *c = &cases[i];
        if (c->op != TRR_OP_ATTENTION) continue;
        seen++;
        quick += c->quick;
        bshd += c->attn.bshd;
        nokey += trr_case_causal(c) && c->attn.sq > c->attn.skv;
        gqa8 += c->attn.hq == 8 * c->attn.hkv;
        work += trr_case_flops(c);
        trr_case_views views;
        cr_assert_eq(trr_case_views_make(c, &views), TRR_OK);
        cr_expect_eq(views.has[TRR_W], c->attn.lse);
        trr_tensor t[TRR_CASE_SLOTS];
        trr_buffer *bufs[TRR_CASE_SLOTS] = {NULL};
        for (int s = 0; s < TRR_CASE_SLOTS; s++) {
            if (!views.has[s]) continue;
            size_t es = 0;
            trr_dtype_size(views.v[s].dtype, &es);
            cr_assert_eq(trr_buffer_create(ctx, (size_t)trr_stored_extent(&views.v[s]) * es, &bufs[s]), TRR_OK);
            cr_assert_eq(trr_stored_tensor(&views.v[s], bufs[s], &t[s]), TRR_OK);
        }
        trr_call call;
        int empty;
        char name[128];
        trr_case_describe(c, name, sizeof name);
        cr_assert_eq(trr_case_call_build(ctx, c, t, 0, &call, &empty), TRR_OK, "%s: %s", name, trr_last_error(ctx));
        cr_expect_eq(call.attn.has_lse, c->attn.lse, "%s", name);
        cr_expect_eq(call.attn.causal, trr_case_causal(c), "%s", name);
        if (c->attn.bshd)
            cr_expect(call.x.stride0 == c->attn.hq * call.x.stride1 && call.x.stride1 >= c->attn.d, "%s", name);
        trr_call packed;
        cr_assert_eq(trr_case_packed_call(c, &packed), TRR_OK);
        cr_expect(packed.attn.seq_kv == c->attn.skv && packed.attn.scale == call.attn.scale, "%s", name);
        for (int s = 0; s < TRR_CASE_SLOTS; s++) trr_buffer_destroy(bufs[s]);
    }
    trr_context_destroy(ctx);
    cr_expect_gt(seen, 40);
    cr_expect(quick >= 6 && quick <= 32, "%d quick attention cases", quick);
    cr_expect(bshd > 10 && nokey >= 3 && gqa8 >= 3);
    /* the cost the suite is sized by (cases_attention.c): CI runs the full list on PoCL and lavapipe */
    cr_expect_lt(work, 1e9, "attention cases total %.3g flops", work);
}
