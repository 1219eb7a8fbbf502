/* The CPU attention kernel (backend_cpu/attention.c) under block shapes the heuristic never picks: one query row
 * and one key per block, blocks that are not multiples of the vector chunk, blocks larger than any sequence, and a
 * query block smaller than a GQA group. Each runs attention's quick conformance cases (every dtype, GQA, causal,
 * rows that see no key, lse, [B,S,H,D] views). And f32 keys and values in overlapping views, which the BLAS cannot
 * read in place. The keys split into chunks a second pass merges (split_k), forced and by the heuristic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "forced_conformance.h"
#include "trireme.h"

/* Attention's conformance cases (the quick subset where quick) pass under each config forced on a fresh context,
 * none of them refused. */
static void expect_configs_pass(const trr_config *configs, size_t n, int quick) {
    for (size_t i = 0; i < n; i++) {
        trr_context *ctx = NULL;
        cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
        char label[96];
        snprintf(label, sizeof label, "block_m %d block_n %d split_k %d: ", configs[i].block_m, configs[i].block_n,
                 configs[i].split_k);
        trr_conf_report *rep = run_forced_conformance(ctx, TRR_OP_ATTENTION, &configs[i], quick, label);
        cr_expect_gt(rep->passed, 10, "%sonly %d cases passed", label, rep->passed);
        cr_expect_eq(rep->unsupported, 0, "%s%d cases refused", label, rep->unsupported);
        trr_conformance_free(rep);
        trr_context_destroy(ctx);
    }
}

Test(cpu_attention, odd_block_configs, .timeout = 300) {
    const trr_config configs[] = {{.block_m = 1, .block_n = 1}, {.block_m = 3, .block_n = 17},
                                  {.block_m = 5, .block_n = 100}, {.block_m = 1024, .block_n = 1024},
                                  {.block_m = 64, .block_n = 16}};
    expect_configs_pass(configs, sizeof configs / sizeof configs[0], 1);
}

/* A block size past the kernel's limit is refused with the reason, not clamped. */
Test(cpu_attention, oversized_blocks_are_refused) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    const trr_config big = {.block_n = 4096};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &big), TRR_OK);
    trr_conf_options opt = {.seed = 1, .quick = 1, .op_mask = 1u << TRR_OP_ATTENTION};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK);
    cr_expect_eq(rep->passed, 0);
    cr_expect_gt(rep->unsupported, 0);
    cr_expect(strstr(rep->results[0].message, "block_n 4096"), "%s", rep->results[0].message);
    trr_conformance_free(rep);
    trr_context_destroy(ctx);
}

/* f32 keys and values in views whose rows overlap (row stride 5 < D = 24, which docs/ops.md allows for inputs):
 * the BLAS cannot read them in place (a leading dimension below the row length), so the kernel widens them into
 * its block copies instead. GQA 2, causal with Sq < Skv, key blocks of 64 so rows cross several blocks, lse;
 * checked against a float64 reference with docs/ops.md's f32 bounds. */
Test(cpu_attention, overlapping_f32_kv_rows) {
    enum { B = 2, HQ = 4, HKV = 2, SQ = 37, SKV = 300, D = 24, KS = 5 };
    const int64_t hs = (int64_t)(SKV - 1) * KS + D + 3; /* one kv head's span, then a gap */
    const int64_t kv_len = (int64_t)B * HKV * hs, q_len = (int64_t)B * HQ * SQ * D;
    float *q = malloc(sizeof(float) * (size_t)q_len), *kv = malloc(sizeof(float) * (size_t)(2 * kv_len));
    float *o = malloc(sizeof(float) * (size_t)q_len), *lse = malloc(sizeof(float) * B * HQ * SQ);
    cr_assert(q && kv && o && lse);
    uint64_t st = (uint64_t)time(NULL) * 2654435761u + 1;
    for (int64_t i = 0; i < q_len + 2 * kv_len; i++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        const float r = (float)((double)(st >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
        if (i < q_len) q[i] = r;
        else kv[i - q_len] = r;
    }
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    const trr_config blocks = {.block_m = 16, .block_n = 64};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &blocks), TRR_OK);
    trr_buffer *bq = NULL, *bkv = NULL, *bo = NULL, *bl = NULL;
    cr_assert_eq(trr_buffer_create(ctx, sizeof(float) * (size_t)q_len, &bq), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof(float) * (size_t)(2 * kv_len), &bkv), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof(float) * (size_t)q_len, &bo), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, sizeof(float) * B * HQ * SQ, &bl), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bq, 0, q, sizeof(float) * (size_t)q_len), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, bkv, 0, kv, sizeof(float) * (size_t)(2 * kv_len)), TRR_OK);
    const trr_tensor tq = {bq, 0, TRR_F32, 4, {B, HQ, SQ, D}, {HQ * SQ * D, SQ * D, D, 1}};
    const trr_tensor tk = {bkv, 0, TRR_F32, 4, {B, HKV, SKV, D}, {HKV * hs, hs, KS, 1}};
    const trr_tensor tv = {bkv, sizeof(float) * (size_t)kv_len, TRR_F32, 4, {B, HKV, SKV, D}, {HKV * hs, hs, KS, 1}};
    const trr_tensor to = {bo, 0, TRR_F32, 4, {B, HQ, SQ, D}, {HQ * SQ * D, SQ * D, D, 1}};
    const trr_tensor tl = {bl, 0, TRR_F32, 3, {B, HQ, SQ}, {HQ * SQ, SQ, 1}};
    cr_assert_eq(trr_attention(ctx, &tq, &tk, &tv, &to, &tl, 0.0f, 1), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_synchronize(ctx), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, bo, 0, o, sizeof(float) * (size_t)q_len), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, bl, 0, lse, sizeof(float) * B * HQ * SQ), TRR_OK);

    const double scale = (double)(float)(1.0 / sqrt((double)D)), u = ldexp(1.0, -24) * (D + 8);
    double err2 = 0.0, ref2 = 0.0, L = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++) {
                const float *k = kv + (b * HKV + h / (HQ / HKV)) * hs, *v = k + kv_len;
                const float *qr = q + ((int64_t)(b * HQ + h) * SQ + i) * D;
                const int seen = i + (SKV - SQ) + 1; /* causal, bottom-right aligned: every row sees a key */
                double s[SKV], m = -INFINITY, l = 0.0, acc[D] = {0}, Li = 0.0;
                for (int j = 0; j < seen; j++) {
                    double dot = 0.0, mag = 0.0;
                    for (int d = 0; d < D; d++) {
                        dot += (double)qr[d] * k[j * KS + d];
                        mag += fabs((double)qr[d] * k[j * KS + d]);
                    }
                    s[j] = scale * dot;
                    m = s[j] > m ? s[j] : m;
                    Li = scale * mag > Li ? scale * mag : Li;
                }
                for (int j = 0; j < seen; j++) {
                    const double p = exp(s[j] - m);
                    l += p;
                    for (int d = 0; d < D; d++) acc[d] += p * v[j * KS + d];
                }
                const float *orow = o + ((int64_t)(b * HQ + h) * SQ + i) * D;
                for (int d = 0; d < D; d++) {
                    const double r = acc[d] / l;
                    err2 += (orow[d] - r) * (orow[d] - r);
                    ref2 += r * r;
                }
                const double lse_ref = m + log(l), lerr = fabs(lse[(b * HQ + h) * SQ + i] - lse_ref);
                cr_expect_leq(lerr, 1e-5 * (1.0 + fabs(lse_ref)) + u * Li, "lse (%d,%d,%d): %g off %g", b, h, i,
                              lerr, lse_ref);
                L = Li > L ? Li : L;
            }
    cr_expect_leq(sqrt(err2 / ref2), 1e-5 + u * L, "o: Frobenius relative error %g", sqrt(err2 / ref2));
    trr_buffer_destroy(bq);
    trr_buffer_destroy(bkv);
    trr_buffer_destroy(bo);
    trr_buffer_destroy(bl);
    trr_context_destroy(ctx);
    free(q);
    free(kv);
    free(o);
    free(lse);
}

/* Split keys (split_k: chunks of whole key blocks, each an item of the pool, merged by a second pass): every
 * attention conformance case passes under 2, 3, 7 and 128 chunks over key blocks of 1, 16, 17 and the default
 * 256 (chunks past the keys leave fewer of them). */
Test(cpu_attention, split_keys_pass_conformance, .timeout = 300) {
    const trr_config configs[] = {{.split_k = 2, .block_n = 16}, {.split_k = 3, .block_n = 1},
                                  {.split_k = 7, .block_n = 17}, {.split_k = 128, .block_n = 1}, {.split_k = 3}};
    expect_configs_pass(configs, sizeof configs / sizeof configs[0], 0);
}

/* Decode (one query, one kv head for eight query heads, many keys): one item, which the heuristic splits over the
 * keys on a machine of several cores; the result agrees with the unsplit kernel's to 1e-5 (both f32 sums). More
 * chunks than a call may ask for are refused with the reason. */
Test(cpu_attention, the_heuristic_splits_decode_keys) {
    enum { HQ = 8, SKV = 4096, D = 64 };
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    const size_t nq = HQ * D, nkv = (size_t)SKV * D;
    float *host = malloc(sizeof(float) * (nq + 2 * nkv)), got[2][HQ * D];
    cr_assert(host);
    uint32_t r = 7;
    for (size_t i = 0; i < nq + 2 * nkv; i++) {
        r = r * 1664525u + 1013904223u;
        host[i] = (float)(r >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
    trr_buffer *buf;
    cr_assert_eq(trr_buffer_create(ctx, sizeof(float) * (2 * nq + 2 * nkv), &buf), TRR_OK);
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, host, sizeof(float) * (nq + 2 * nkv)), TRR_OK);
    const int64_t sq[4] = {1, HQ, 1, D}, skv[4] = {1, 1, SKV, D};
    trr_tensor q, k, v, o;
    cr_assert_eq(trr_tensor_nd(buf, 0, TRR_F32, 4, sq, NULL, &q), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, sizeof(float) * nq, TRR_F32, 4, skv, NULL, &k), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, sizeof(float) * (nq + nkv), TRR_F32, 4, skv, NULL, &v), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, sizeof(float) * (nq + 2 * nkv), TRR_F32, 4, sq, NULL, &o), TRR_OK);
    trr_config used[2];
    for (int run = 0; run < 2; run++) {
        const trr_config whole = {.split_k = 1};
        cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, run ? &whole : NULL), TRR_OK);
        cr_assert_eq(trr_buffer_fill(ctx, buf, sizeof(float) * (nq + 2 * nkv), sizeof(float) * nq, 0xFF), TRR_OK);
        cr_assert_eq(trr_attention(ctx, &q, &k, &v, &o, NULL, 0.0f, 0), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_eq(trr_config_last(ctx, &used[run]), TRR_OK);
        cr_assert_eq(trr_buffer_read(ctx, buf, sizeof(float) * (nq + 2 * nkv), got[run], sizeof got[run]), TRR_OK);
    }
    if (info.compute_units < 2) cr_expect_eq(used[0].split_k, 1, "one core split the keys");
    else cr_expect_geq(used[0].split_k, 2, "decode ran as one item on %d cores", info.compute_units);
    cr_expect_eq(used[1].split_k, 1);
    double err = 0, ref = 0;
    for (int i = 0; i < HQ * D; i++) {
        cr_assert(isfinite(got[0][i]), "element %d is %g", i, (double)got[0][i]);
        err += ((double)got[0][i] - got[1][i]) * ((double)got[0][i] - got[1][i]);
        ref += (double)got[1][i] * got[1][i];
    }
    cr_expect_leq(sqrt(err / ref), 1e-5, "split and whole differ by %g", sqrt(err / ref));
    const trr_config too_many = {.split_k = 129};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &too_many), TRR_OK);
    cr_expect_eq(trr_attention(ctx, &q, &k, &v, &o, NULL, 0.0f, 0), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(ctx), "split_k 129 must be 1 to 128"), "%s", trr_last_error(ctx));
    trr_buffer_destroy(buf);
    free(host);
    trr_context_destroy(ctx);
}
