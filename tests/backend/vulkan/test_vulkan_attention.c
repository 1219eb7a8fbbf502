/* attention's SIMT kernel (kernels/vulkan/attention.comp) under blocks the heuristic does not pick, on the head dims
 * of 128 and more whose loops reach lavapipe's loop budget first: one key a block over a whole block of queries,
 * and odd sizes; the keys then split several ways, each split within the budget (backend_vulkan/vk_attention.c).
 * Checked by the conformance engine on attention's quick cases at D >= 128. Runs on vulkan:0 under
 * TRIREME_VK_VALIDATION=1 as every test does; skipped without a Vulkan device unless TRIREME_REQUIRE_BACKENDS names
 * vulkan. */
#include "conformance.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int large_d(const trr_case *c, void *user) {
    (void)user;
    return c->op == TRR_OP_ATTENTION && c->attn.d >= 128 && c->quick;
}

Test(vulkan_attention, forced_blocks_pass, .timeout = 900) {
    const trr_config forced[] = {{.block_m = 64, .block_n = 1, .threads = 32},
                                 {.block_m = 3, .block_n = 5, .threads = 7}};
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .select = large_d};
    for (size_t f = 0; f < sizeof forced / sizeof forced[0]; f++) {
        trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
        cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced[f]), TRR_OK, "%s", trr_last_error(ctx));
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            cr_expect_neq(r->outcome, TRR_CONF_FAIL, "block_m %d, block_n %d, threads %d: %s (seed %llu): %s",
                          forced[f].block_m, forced[f].block_n, forced[f].threads, r->name,
                          (unsigned long long)opt.seed, r->message);
        }
        cr_expect_gt(rep->passed, 0, "block_n %d, threads %d: nothing ran", forced[f].block_n, forced[f].threads);
        trr_conformance_free(rep);
        trr_context_destroy(ctx);
    }
}

/* The cooperative-matrix kernel (variant coop_khr, kernels/vulkan/attention_coop.comp) forced on attention's
 * cases: it passes where the device runs it; every case it does not take is UNSUPPORTED with the reason, f32
 * always (it takes f16 and bf16), and every case on a device without
 * VK_KHR_cooperative_matrix (lavapipe). */
Test(vulkan_attention, forced_coop_passes_or_says_why, .timeout = 600) {
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    const trr_config forced = {.variant = TRR_VARIANT_COOP_KHR};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced), TRR_OK, "%s", trr_last_error(ctx));
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .op_mask = 1u << TRR_OP_ATTENTION};
    trr_conf_report *rep = NULL;
    cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_gt(rep->n_results, 0);
    for (int i = 0; i < rep->n_results; i++) {
        const trr_conf_result *r = &rep->results[i];
        cr_expect_neq(r->outcome, TRR_CONF_FAIL, "%s (seed %llu): %s", r->name, (unsigned long long)opt.seed,
                      r->message);
        if (r->outcome == TRR_CONF_UNSUPPORTED)
            cr_expect(strstr(r->message, "coop_khr: ") != NULL, "%s: %s", r->name, r->message);
        if (r->tcase.in_dtype == TRR_F32)
            cr_expect_eq(r->outcome, TRR_CONF_UNSUPPORTED, "%s ran on coop_khr", r->name);
    }
    trr_conformance_free(rep);
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, NULL), TRR_OK);
    trr_context_destroy(ctx);
}

/* The heuristic: f16 and bf16 prefill run on coop_khr exactly where the forced variant is accepted, and on the
 * SIMT kernel otherwise (decode, and devices without cooperative matrices such as lavapipe). */
static void heuristic_case(trr_dtype dt) {
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    const int64_t B = 1, H = 2, S = 128, D = 64;
    const size_t n = (size_t)(B * H * S * D), bytes = n * 2;
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 4 * bytes, &buf), TRR_OK);
    uint16_t *host = malloc(bytes);
    cr_assert_not_null(host);
    srand(7);
    /* f16 in [0.5, 1); bf16 in [2^-15, 2^-14) */
    for (size_t i = 0; i < n; i++) host[i] = (uint16_t)(0x3800 + rand() % 0x400);
    for (int t = 0; t < 3; t++) cr_assert_eq(trr_buffer_write(ctx, buf, (size_t)t * bytes, host, bytes), TRR_OK);
    free(host);
    trr_tensor q, k, v, o;
    const int64_t shape[4] = {B, H, S, D};
    cr_assert_eq(trr_tensor_nd(buf, 0, dt, 4, shape, NULL, &q), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_tensor_nd(buf, bytes, dt, 4, shape, NULL, &k), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, 2 * bytes, dt, 4, shape, NULL, &v), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, 3 * bytes, dt, 4, shape, NULL, &o), TRR_OK);
    const trr_config forced = {.variant = TRR_VARIANT_COOP_KHR};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced), TRR_OK);
    const trr_status fst = trr_attention(ctx, &q, &k, &v, &o, NULL, 0.0f, 0);
    cr_assert(fst == TRR_OK || fst == TRR_ERR_UNSUPPORTED, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, NULL), TRR_OK);
    cr_assert_eq(trr_attention(ctx, &q, &k, &v, &o, NULL, 0.0f, 0), TRR_OK, "%s", trr_last_error(ctx));
    trr_config last;
    trr_config_last(ctx, &last);
    cr_expect_eq(last.variant, fst == TRR_OK ? TRR_VARIANT_COOP_KHR : TRR_VARIANT_SIMT,
                 "dtype %d", (int)dt);
    cr_assert_eq(trr_synchronize(ctx), TRR_OK, "%s", trr_last_error(ctx));
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

Test(vulkan_attention, heuristic_takes_coop_where_it_runs) {
    heuristic_case(TRR_BF16);
    heuristic_case(TRR_F16);
}

/* The cooperative-matrix kernel's tile shapes forced (16 and 32 rows a subgroup, 1 to 8 subgroups, key blocks of
 * 32 and 64, loads staged after or during the MMAs, one or two K/V buffers): each passes attention's cases where
 * the device runs it, or is refused with the reason (every one on a device without VK_KHR_cooperative_matrix,
 * and shapes past its shared memory or subgroup size). threads 0 takes four subgroups of the device's size. */
Test(vulkan_attention, forced_coop_tiles_pass_or_say_why, .timeout = 900) {
    trr_context *ctx = open_device_or_skip("vulkan:0", "vulkan");
    const trr_config forced[] = {
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 64, .block_n = 64, .stages = 1},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 128, .block_n = 32, .stages = 2},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 128, .block_n = 64, .stages = 1},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 64, .block_n = 32, .stages = 2},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 32, .block_n = 48, .stages = 2, .threads = 32},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 128, .block_n = 32, .stages = 2, .threads = 256},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 128, .block_n = 32, .stages = 3},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 64, .block_n = 32, .stages = 3},
        {.variant = TRR_VARIANT_COOP_KHR, .block_m = 64, .block_n = 64, .stages = 3}};
    trr_conf_options opt = {.seed = (uint64_t)time(NULL), .op_mask = 1u << TRR_OP_ATTENTION};
    for (size_t f = 0; f < sizeof forced / sizeof forced[0]; f++) {
        trr_config c = forced[f];
        cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &c), TRR_OK, "%s", trr_last_error(ctx));
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        cr_assert_gt(rep->n_results, 0);
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            cr_expect_neq(r->outcome, TRR_CONF_FAIL,
                          "block_m %d, block_n %d, stages %d, threads %d: %s (seed %llu): %s", c.block_m, c.block_n,
                          c.stages, c.threads, r->name, (unsigned long long)opt.seed, r->message);
            if (r->outcome == TRR_CONF_UNSUPPORTED)
                cr_expect(strstr(r->message, "coop_khr") != NULL, "%s: %s", r->name, r->message);
        }
        trr_conformance_free(rep);
    }
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, NULL), TRR_OK);
    trr_context_destroy(ctx);
}
